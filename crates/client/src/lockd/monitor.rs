//! The client's side of NSM, as far as one process needs it: a server
//! must hear when the process that holds its NFSv3 locks is gone, or the
//! locks stay until the server restarts.
//!
//! Each nfsx process takes NFSv3 locks under a caller name of its own
//! (the host's name and the process id), and writes down in
//! `[nlm] state_dir`, in a file named by its process id, every server
//! that granted it a lock: the name, its NSM state, where the server's
//! portmapper and lock manager are. A process that ends cleanly tells
//! those servers itself ([`process_ending`]); one that was killed is
//! found out by the next nfsx client process of the host
//! ([`notify_ended`]), which tells them on its behalf. Telling is what a
//! restarted host's status monitor does: SM_NOTIFY with a new state to
//! the server's status monitor, and NLM_FREE_ALL to its lock manager for
//! a server whose status monitor does not know the name (each frees the
//! locks of that name at once; the other is then a no-op).
//!
//! The file is claimed by renaming before it is acted on, so that of two
//! processes starting at once only one tells the servers.

use std::collections::HashSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::nlm::{nlm4_notify, NLM_FREE_ALL, NLM_PROG, NLM_VERS4};
use proto::nsm::{stat_chge, SM_NOTIFY, SM_PROG, SM_VERS};

use super::{pmap_port, LockServiceSettings, IPPROTO_TCP};
use crate::transport::{ConnParams, Connection};

/// First line of a monitor file: its format.
const HEADER: &str = "nfsx-nlm-monitor 1";

/// How long telling one server may take: a server that does not answer
/// in that time is down, and frees the locks when it restarts.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// A server that granted this process a lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Server {
    /// The caller name the locks were taken under.
    pub caller: Bytes,
    /// The NSM state the process reported in its LOCK calls.
    pub state: i32,
    /// The server's portmapper, where its status monitor is found.
    pub portmap: SocketAddr,
    /// The server's lock manager.
    pub nlm: Option<SocketAddr>,
}

/// This process's monitor file and what it holds.
struct Record {
    file: PathBuf,
    servers: HashSet<Server>,
    params: Option<ConnParams>,
}

static RECORD: OnceLock<Option<Mutex<Record>>> = OnceLock::new();
static SCANNED: OnceLock<()> = OnceLock::new();

/// The directory of `[nlm] state_dir`, or the default, where the server
/// keeps its state too: /var/lib/nfsx/nlm for root, else nfsx/nlm under
/// the user's state directory (`$XDG_STATE_HOME`, else ~/.local/state).
pub(crate) fn state_dir(s: &LockServiceSettings) -> Option<PathBuf> {
    (s.monitor && s.process_names).then(|| dir(s))
}

/// `[nlm] state_dir`, or its default, whether processes are monitored or
/// not (the relay's holder is found there too).
pub(crate) fn dir(s: &LockServiceSettings) -> PathBuf {
    if let Some(d) = &s.state_dir {
        return d.clone();
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status.lines().any(|l| l.strip_prefix("Uid:").and_then(|u| u.split_whitespace().nth(1)) == Some("0"));
    let user = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| Path::new(&h).join(".local/state")));
    match user {
        Some(base) if !root => base.join("nfsx/nlm"),
        _ => PathBuf::from("/var/lib/nfsx/nlm"),
    }
}

/// When the process started, as /proc says (clock ticks since boot):
/// with the process id, what tells a live process from a later one that
/// got the same id.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces: state is the
    // third field of the whole, starttime the 22nd.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Writes `server` down as one that granted this process a lock, once.
pub(crate) fn record(settings: &LockServiceSettings, params: &ConnParams, server: Server) {
    let Some(record) = RECORD.get_or_init(|| {
        let dir = state_dir(settings)?;
        Some(Mutex::new(Record {
            file: dir.join(std::process::id().to_string()),
            servers: HashSet::new(),
            params: None,
        }))
    }) else {
        return;
    };
    let mut r = record.lock();
    if r.servers.contains(&server) {
        return;
    }
    r.servers.insert(server);
    r.params.get_or_insert_with(|| params.clone());
    if let Err(e) = write(&r.file, &r.servers) {
        tracing::warn!(
            "cannot write {}: {e}; should this process be killed, its NFSv3 locks stay until the servers restart",
            r.file.display()
        );
    }
}

fn write(file: &Path, servers: &HashSet<Server>) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let pid = std::process::id();
    let mut text = format!("{HEADER}\npid {pid} {}\n", start_time(pid).unwrap_or(0));
    for s in servers {
        let nlm = s.nlm.map_or_else(|| "-".to_string(), |a| a.to_string());
        text.push_str(&format!("server {} {} {} {nlm}\n", hex(&s.caller), s.state, s.portmap));
    }
    let tmp = dir.join(format!(".{pid}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, file)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Bytes> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let v: Option<Vec<u8>> =
        (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect();
    v.map(Bytes::from)
}

/// A monitor file: the process it is of (id, start time) and its servers.
fn parse(text: &str) -> Option<(u32, u64, Vec<Server>)> {
    let mut lines = text.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let mut head = lines.next()?.split(' ');
    let (Some("pid"), Some(pid), Some(start)) = (head.next(), head.next(), head.next()) else { return None };
    let (pid, start) = (pid.parse().ok()?, start.parse().ok()?);
    let servers = lines
        .filter_map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            let [kind, caller, state, portmap, nlm] = w.as_slice() else { return None };
            if *kind != "server" {
                return None;
            }
            Some(Server {
                caller: unhex(caller)?,
                state: state.parse().ok()?,
                portmap: portmap.parse().ok()?,
                nlm: nlm.parse().ok(),
            })
        })
        .collect();
    Some((pid, start, servers))
}

/// Tells the servers of every nfsx process of this host that ended
/// without doing so itself; once per process.
pub async fn notify_ended(settings: &LockServiceSettings, params: &ConnParams) {
    if SCANNED.set(()).is_err() {
        return;
    }
    let Some(dir) = state_dir(settings) else { return };
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        let Some((_, started, servers)) = parse(&text) else { continue };
        if start_time(pid).is_some_and(|t| t == started) {
            continue; // Still running.
        }
        // Claimed by the rename: another process starting now skips it.
        let claimed = dir.join(format!(".{pid}.ending.{me}"));
        if std::fs::rename(entry.path(), &claimed).is_err() {
            continue;
        }
        tracing::info!(pid, servers = servers.len(), "an nfsx process ended holding NFSv3 locks: telling its servers");
        tell(&servers, params).await;
        let _ = std::fs::remove_file(&claimed);
    }
}

/// This process is ending: tells its servers to free whatever it still
/// holds, and takes its file out.
pub async fn process_ending() {
    let Some(Some(record)) = RECORD.get() else { return };
    let (file, servers, params) = {
        let r = record.lock();
        (r.file.clone(), r.servers.iter().cloned().collect::<Vec<_>>(), r.params.clone())
    };
    if let Some(params) = params {
        tell(&servers, &params).await;
    }
    let _ = std::fs::remove_file(file);
}

/// SM_NOTIFY and NLM_FREE_ALL for each of `servers`, each bounded.
async fn tell(servers: &[Server], params: &ConnParams) {
    for s in servers {
        let told = tokio::time::timeout(NOTIFY_TIMEOUT, tell_one(s, params)).await;
        if let Ok(Err(e)) | Err(e) = told.map_err(|_| "no answer".to_string()) {
            tracing::info!(server = %s.portmap, "could not tell the server the process ended: {e}");
        }
    }
}

async fn tell_one(s: &Server, params: &ConnParams) -> Result<(), String> {
    // The next state number, odd: the "host" is up again, under another
    // incarnation.
    let state = s.state.wrapping_add(2) | 1;
    let p = |addr| ConnParams { addr, tls: None, gss: None, reconnect_timeout: Duration::ZERO, ..params.clone() };
    let pmap = Connection::connect(p(s.portmap)).await.map_err(|e| e.to_string())?;
    let m = proto::portmap::pmap2_mapping { prog: SM_PROG, vers: SM_VERS, prot: IPPROTO_TCP, port: 0 };
    let nsm = pmap_port(&pmap, &m).await.ok().and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0);
    let mut notified = false;
    if let Some(port) = nsm {
        let args = stat_chge { mon_name: s.caller.clone(), state };
        if let Ok(conn) = Connection::connect(p(SocketAddr::new(s.portmap.ip(), port))).await {
            notified = conn.call(SM_PROG, SM_VERS, SM_NOTIFY, vec![xdr::to_bytes(&args)]).await.is_ok();
        }
    }
    let mut freed = false;
    if let Some(nlm) = s.nlm {
        let args = nlm4_notify { name: s.caller.clone(), state };
        if let Ok(conn) = Connection::connect(p(nlm)).await {
            freed = conn.call(NLM_PROG, NLM_VERS4, NLM_FREE_ALL, vec![xdr::to_bytes(&args)]).await.is_ok();
        }
    }
    if notified || freed {
        Ok(())
    } else {
        Err("neither its status monitor nor its lock manager answered".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file written is read back as written; a foreign or torn file is
    /// not a monitor file.
    #[test]
    fn files_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("7");
        let s = Server {
            caller: Bytes::from_static(b"host.nfsx-7"),
            state: 5,
            portmap: "10.0.0.1:111".parse().expect("addr"),
            nlm: Some("10.0.0.1:4045".parse().expect("addr")),
        };
        let t = Server { nlm: None, ..s.clone() };
        write(&file, &[s.clone(), t.clone()].into_iter().collect()).expect("written");
        let (pid, started, mut servers) = parse(&std::fs::read_to_string(&file).expect("read")).expect("parsed");
        assert_eq!(pid, std::process::id());
        assert_eq!(Some(started), start_time(pid));
        servers.sort_by_key(|s| s.nlm.is_none());
        assert_eq!(servers, vec![s, t]);
        assert!(parse("something else\n").is_none());
        assert!(parse(HEADER).is_none());
    }
}

//! What must survive a crash for clients to reclaim their state, in the
//! state directory, each file rewritten atomically (temporary file,
//! fsync, rename) on each change:
//! - `nfs4-clients`: the NFSv4 clients that may reclaim during the grace
//!   period, one hex-encoded owner per line;
//! - `nsm-monitor`: the NFSv3 hosts NSM monitors (granted a lock or a
//!   share), one per line: the hex-encoded name, the address its calls
//!   came from and ours they came to (`-` when unknown), told of a
//!   restart with SM_NOTIFY;
//! - `nsm-state`: the NSM state number of the last start, one decimal
//!   line; each start takes the next odd number;
//! - `portmap-local`: NLM and NSM registrations lock clients on this host
//!   made with the built-in portmapper, so that after a restart they are
//!   still found, to be told to reclaim.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use parking_lot::Mutex;
use server_core::{NsmHost, StableStore};

use crate::state::StateError;

const FILE: &str = "nfs4-clients";
const NSM_MONITOR: &str = "nsm-monitor";
const NSM_STATE: &str = "nsm-state";
const PORTMAP_LOCAL: &str = "portmap-local";

pub struct FileStore {
    path: PathBuf,
    records: Mutex<Vec<Vec<u8>>>,
    nsm_path: PathBuf,
    nsm_hosts: Mutex<Vec<NsmHost>>,
    /// The hosts monitored at start.
    nsm_before: Vec<NsmHost>,
    nsm_state: i32,
    dir: PathBuf,
}

fn read_lines(path: &Path) -> Result<Vec<String>, StateError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.lines().map(str::to_string).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(StateError::Read { path: path.to_path_buf(), source }),
    }
}

/// Writes `lines` to `path` atomically and durably.
fn save_lines(path: &Path, what: &str, lines: impl Iterator<Item = String>) {
    let tmp = path.with_extension("tmp");
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        for l in lines {
            writeln!(f, "{l}")?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        tracing::error!(path = %path.display(), "cannot save {what}: {e}");
    }
}

fn host_line(h: &NsmHost) -> String {
    let ip = |a: Option<IpAddr>| a.map_or_else(|| "-".to_string(), |a| a.to_string());
    format!("{} {} {}", encode_hex(&h.name), ip(h.addr), ip(h.local))
}

fn parse_host(line: &str) -> Option<NsmHost> {
    let mut words = line.split_whitespace();
    let name = Bytes::from(decode_hex(words.next()?)?);
    let mut ip = || -> Option<Option<IpAddr>> {
        match words.next() {
            None | Some("-") => Some(None),
            Some(a) => a.parse().ok().map(Some),
        }
    };
    let (addr, local) = (ip()?, ip()?);
    Some(NsmHost { name, addr, local })
}

impl FileStore {
    /// Opens the records in `dir`, counting this start in `nsm-state`.
    pub fn open(dir: &Path) -> Result<FileStore, StateError> {
        let path = dir.join(FILE);
        let records = read_lines(&path)?.iter().filter_map(|l| decode_hex(l)).collect();
        let nsm_path = dir.join(NSM_MONITOR);
        let lines = read_lines(&nsm_path)?;
        let hosts: Vec<NsmHost> = lines.iter().filter_map(|l| parse_host(l)).collect();
        if hosts.len() != lines.iter().filter(|l| !l.trim().is_empty()).count() {
            tracing::warn!(path = %nsm_path.display(), "lines that name no host skipped");
        }
        let state_path = dir.join(NSM_STATE);
        let last = read_lines(&state_path)?.first().and_then(|l| l.trim().parse::<i32>().ok()).unwrap_or(-1);
        // The next odd number; past i32's end it starts again at 1 (NSM's
        // peers only compare it with the last they saw).
        let nsm_state = last.checked_add(if last % 2 == 0 { 1 } else { 2 }).filter(|s| *s > 0).unwrap_or(1);
        save_lines(&state_path, "the NSM state", std::iter::once(nsm_state.to_string()));
        Ok(FileStore {
            path,
            records: Mutex::new(records),
            nsm_path,
            nsm_before: hosts.clone(),
            nsm_hosts: Mutex::new(hosts),
            nsm_state,
            dir: dir.to_path_buf(),
        })
    }

    fn save(&self, records: &[Vec<u8>]) {
        save_lines(&self.path, "NFSv4 client records", records.iter().map(|r| encode_hex(r)));
    }

    fn save_hosts(&self, hosts: &[NsmHost]) {
        save_lines(&self.nsm_path, "NSM's monitored hosts", hosts.iter().map(host_line));
    }
}

impl StableStore for FileStore {
    fn load(&self) -> Vec<Vec<u8>> {
        self.records.lock().clone()
    }

    fn insert(&self, record: &[u8]) {
        let mut r = self.records.lock();
        if r.iter().any(|x| x == record) {
            return;
        }
        r.push(record.to_vec());
        self.save(&r);
    }

    fn remove(&self, record: &[u8]) {
        let mut r = self.records.lock();
        let before = r.len();
        r.retain(|x| x != record);
        if r.len() != before {
            self.save(&r);
        }
    }

    fn nsm_state(&self) -> Option<i32> {
        Some(self.nsm_state)
    }

    fn nsm_hosts(&self) -> Vec<NsmHost> {
        self.nsm_before.clone()
    }

    fn nsm_monitor(&self, host: &NsmHost) {
        let mut hosts = self.nsm_hosts.lock();
        if hosts.contains(host) {
            return;
        }
        hosts.retain(|h| h.name != host.name);
        hosts.push(host.clone());
        self.save_hosts(&hosts);
    }

    fn local_registrations(&self) -> Vec<String> {
        read_lines(&self.dir.join(PORTMAP_LOCAL)).unwrap_or_default()
    }

    fn save_local_registrations(&self, lines: Vec<String>) {
        save_lines(&self.dir.join(PORTMAP_LOCAL), "local portmapper registrations", lines.into_iter());
    }

    fn nsm_unmonitor(&self, name: &[u8]) {
        let mut hosts = self.nsm_hosts.lock();
        let before = hosts.len();
        hosts.retain(|h| h.name[..] != *name);
        if hosts.len() != before {
            self.save_hosts(&hosts);
        }
    }
}

pub(crate) fn encode_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn decode_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::open(dir.path()).unwrap();
        s.insert(b"client-a");
        s.insert(b"\x00\xffb");
        s.insert(b"client-a");
        s.remove(b"nothing");
        let s2 = FileStore::open(dir.path()).unwrap();
        assert_eq!(s2.load(), vec![b"client-a".to_vec(), b"\x00\xffb".to_vec()]);
        s2.remove(b"client-a");
        assert_eq!(FileStore::open(dir.path()).unwrap().load(), vec![b"\x00\xffb".to_vec()]);
    }

    /// Monitored hosts survive reopening; the NSM state is odd and grows
    /// at each start, from 1, and a damaged line is skipped.
    #[test]
    fn nsm_hosts_and_state_survive_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::open(dir.path()).unwrap();
        assert_eq!(s.nsm_state(), Some(1));
        let a = NsmHost {
            name: Bytes::from_static(b"host a"),
            addr: Some("10.0.0.1".parse().unwrap()),
            local: Some("10.0.0.9".parse().unwrap()),
        };
        let b = NsmHost { name: Bytes::from_static(b"b"), addr: None, local: None };
        s.nsm_monitor(&a);
        s.nsm_monitor(&b);
        s.nsm_monitor(&a);
        let s = FileStore::open(dir.path()).unwrap();
        assert_eq!(s.nsm_state(), Some(3));
        assert_eq!(s.nsm_hosts(), vec![a.clone(), b.clone()]);
        s.nsm_unmonitor(b"host a");
        let moved = NsmHost { addr: Some("10.0.0.2".parse().unwrap()), ..b.clone() };
        s.nsm_monitor(&moved);
        let p = dir.path().join(NSM_MONITOR);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("{text}zz not-an-address\n")).unwrap();
        let s = FileStore::open(dir.path()).unwrap();
        assert_eq!((s.nsm_state(), s.nsm_hosts()), (Some(5), vec![moved]));
        std::fs::write(dir.path().join(NSM_STATE), "8\n").unwrap();
        assert_eq!(FileStore::open(dir.path()).unwrap().nsm_state(), Some(9));
    }
}

//! The client's own lock manager service: what an NFSv3 server calls
//! back when a lock a caller waits for is granted (NLM4 GRANTED, XNFS
//! chapter 10), and where a restarted server's status monitor says so
//! (NSM SM_NOTIFY). With it a blocking lock (`F_SETLKW`) waits for the
//! server's call instead of asking again and again, and is woken within
//! a round trip of the unlock.
//!
//! A server finds the service through the portmapper of the host the
//! client calls from, so the service registers NLM version 4 and NSM
//! version 1 there (`[nlm] portmap`). A portmapper holds one port per
//! program and version, so of several nfsx processes on one host only
//! the first registers (the holder); the others join it ([`relay`]) and
//! it hands on the calls that are theirs. When another live service
//! holds NLM (the kernel's lockd), this one stays unregistered and its
//! callers ask again instead, as they do when there is no portmapper at
//! all; when rpc.statd holds NSM, the service takes GRANTED calls but a
//! restarted server's SM_NOTIFY goes to rpc.statd. A registration left
//! by a process that ended (its port refuses connections) is taken over.
//!
//! One service runs per process, on a thread of its own (so that it
//! outlives any one async runtime a client was made on), for all the
//! clients of the process.

mod dispatch;
mod monitor;
mod relay;
mod waiters;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use proto::framer::RecordDecoder;
use proto::nlm::{nlm4_res, NLM_GRANTED_RES, NLM_PROG, NLM_VERS4};
use proto::portmap::{pmap2_mapping, PMAP2_GETPORT, PMAP2_UNSET, PMAP_PORT, PMAP_PROGRAM, PMAP_V2};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xdr::Decode;

use crate::transport::{ConnParams, Connection};
pub use monitor::{notify_ended, process_ending};
pub(crate) use monitor::{record as monitor_record, Server as MonitoredServer};
pub(crate) use waiters::{Wait, Waiters};

/// Where the lock service listens and registers, and how long a blocked
/// lock waits for the server's call before asking again.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LockServiceSettings {
    /// Run the service and take blocking locks by callback. Off, a lock
    /// held elsewhere is asked for again (1 ms, doubling to 1 s). Default
    /// true.
    pub callbacks: bool,
    /// The portmapper of this host, where servers look the service up.
    /// Default 127.0.0.1:111.
    pub portmap: SocketAddr,
    /// Address the service listens on; port 0 picks one. Default
    /// 0.0.0.0:0.
    pub listen: SocketAddr,
    /// How long a blocked lock waits for the server's GRANTED before it
    /// asks again (a call the server could not make, or one lost), in
    /// seconds. Default 10.
    pub repoll_secs: u64,
    /// When another nfsx process of this host holds the portmapper's
    /// entries and this one joined it: how often it checks that the
    /// holder still runs, and takes the entries over when it does not,
    /// in seconds. Default 5.
    pub relay_check_secs: u64,
    /// Write down the servers that granted this process NFSv3 locks, so
    /// that they are told to free them should the process be killed (by
    /// the next nfsx client process of the host), or when it ends. Each
    /// process locks under a caller name of its own for that. Default
    /// true.
    pub monitor: bool,
    /// Lock under a caller name of this process's own (`HOST.nfsx-PID`);
    /// false: the host name alone, for servers that call the caller name
    /// back as a host (NFS-Ganesha with NSM_Use_Caller_Name). Processes are
    /// then not monitored. Default true.
    pub process_names: bool,
    /// Where: one small file per process. Default: /var/lib/nfsx/nlm for
    /// root, else nfsx/nlm under the user's state directory
    /// (`$XDG_STATE_HOME`, else ~/.local/state).
    pub state_dir: Option<std::path::PathBuf>,
}

impl Default for LockServiceSettings {
    fn default() -> Self {
        LockServiceSettings {
            callbacks: true,
            portmap: SocketAddr::from(([127, 0, 0, 1], 111)),
            listen: SocketAddr::from(([0, 0, 0, 0], 0)),
            repoll_secs: 10,
            relay_check_secs: 5,
            monitor: true,
            process_names: true,
            state_dir: None,
        }
    }
}

/// Largest call record the service reads: GRANTED and SM_NOTIFY are a
/// few hundred bytes.
const MAX_CALL: usize = 64 << 10;

const IPPROTO_TCP: u32 = 6;

/// How the service stands with one portmapper.
#[derive(Clone)]
struct Registration {
    params: ConnParams,
    role: relay::Role,
    /// The programs this service holds there (what it takes out at the
    /// end): NLM when it is the holder, NSM too unless rpc.statd has it.
    held: Vec<(u32, u32)>,
    /// `[nlm] state_dir`, where the holder is written down.
    dir: std::path::PathBuf,
}

/// The process's lock service.
pub struct LockService {
    port: u16,
    waiters: Waiters,
    /// Portmappers registered with, and how, when it took (None: it did
    /// not).
    registered: tokio::sync::Mutex<HashMap<SocketAddr, Option<Registration>>>,
    /// Lock services of other processes of this host that joined this
    /// one, by process id: the ports they listen on, on loopback.
    peers: parking_lot::Mutex<HashMap<u32, u16>>,
    /// The service's own runtime, where the keepers of joined
    /// registrations run.
    rt: tokio::runtime::Handle,
    /// Server restarts told by SM_NOTIFY: (their NSM name, new state,
    /// the address the call came from).
    notified: tokio::sync::broadcast::Sender<(Bytes, i32, IpAddr)>,
    grants: AtomicU64,
    notifies: AtomicU64,
}

static SERVICE: OnceLock<Result<Arc<LockService>, String>> = OnceLock::new();

impl LockService {
    /// The process's service, if one was started.
    pub fn running() -> Option<Arc<LockService>> {
        SERVICE.get().and_then(|s| s.as_ref().ok()).cloned()
    }

    /// Takes the service's entries out of every portmapper it registered
    /// with (the process is ending).
    pub async fn unregister(&self) {
        let mut done = self.registered.lock().await;
        for (portmap, reg) in done.iter_mut() {
            // UNSET takes out whoever holds the program: only what is ours.
            let Some(reg) = reg.take() else { continue };
            relay::remove_holder(&reg.dir, self.port);
            let Ok(conn) = Connection::connect(ConnParams { addr: *portmap, ..reg.params }).await else { continue };
            for (prog, vers) in reg.held {
                let m = pmap2_mapping { prog, vers, prot: IPPROTO_TCP, port: u32::from(self.port) };
                let _ = pmap_bool(&conn, PMAP2_UNSET, &m).await;
            }
        }
    }

    /// The process's service, started at the first call with `listen`.
    pub fn get(listen: SocketAddr) -> Result<Arc<LockService>, String> {
        SERVICE.get_or_init(|| LockService::start(listen).map_err(|e| format!("lock service on {listen}: {e}"))).clone()
    }

    fn start(listen: SocketAddr) -> std::io::Result<Arc<LockService>> {
        let std_listener = std::net::TcpListener::bind(listen)?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let svc = Arc::new(LockService {
            port,
            waiters: Waiters::default(),
            registered: Default::default(),
            peers: Default::default(),
            rt: rt.handle().clone(),
            notified: tokio::sync::broadcast::channel(16).0,
            grants: AtomicU64::new(0),
            notifies: AtomicU64::new(0),
        });
        let served = svc.clone();
        std::thread::Builder::new().name("nfsx-lockd".into()).spawn(move || {
            rt.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => return tracing::warn!("lock service stopped: {e}"),
                };
                loop {
                    match listener.accept().await {
                        Ok((conn, _)) => {
                            tokio::spawn(served.clone().serve(conn));
                        }
                        // Out of descriptors and the like: pause, go on.
                        Err(e) => {
                            tracing::debug!("lock service accept: {e}");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            })
        })?;
        tracing::debug!(port, "lock service listening");
        Ok(svc)
    }

    /// The port the service listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// GRANTED calls that woke a waiter, and SM_NOTIFY calls received.
    pub fn counts(&self) -> (u64, u64) {
        (self.grants.load(Ordering::Relaxed), self.notifies.load(Ordering::Relaxed))
    }

    pub(crate) fn waiters(&self) -> &Waiters {
        &self.waiters
    }

    /// Server restarts as SM_NOTIFY tells them.
    pub fn restarts(&self) -> tokio::sync::broadcast::Receiver<(Bytes, i32, IpAddr)> {
        self.notified.subscribe()
    }

    async fn serve(self: Arc<Self>, mut conn: TcpStream) {
        let Ok(from) = conn.peer_addr().map(|a| a.ip().to_canonical()) else { return };
        let mut records = RecordDecoder::new(MAX_CALL);
        loop {
            records.reserve_for_read(4096);
            match conn.read_buf(records.buffer_mut()).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            loop {
                let record = match records.next_record() {
                    Ok(Some(r)) => r,
                    Ok(None) => break,
                    // A record larger than any call of these programs.
                    Err(_) => return,
                };
                let (mut reply, event) = dispatch::answer(&self.waiters, from, record.clone());
                match event {
                    dispatch::Event::Granted => {
                        self.grants.fetch_add(1, Ordering::Relaxed);
                    }
                    dispatch::Event::GrantedByMessage { res } => {
                        tokio::spawn(self.clone().granted_res(from, res));
                    }
                    dispatch::Event::Notified { mon_name, state } => {
                        self.notifies.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(server = %String::from_utf8_lossy(&mon_name), state, "SM_NOTIFY: server restarted");
                        let _ = self.notified.send((mon_name, state, from));
                        self.hand_on_to_all(record, from);
                    }
                    dispatch::Event::NotOurs { pid } => {
                        if let Some(theirs) = self.hand_on(pid, record, from).await {
                            reply = Some(theirs);
                        }
                    }
                    dispatch::Event::Joined { pid, port } => self.joined(pid, port),
                    dispatch::Event::Nothing => {}
                }
                // Replies come record-marked already.
                let Some(reply) = reply else { continue };
                for seg in reply {
                    if conn.write_all(&seg).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    /// Answers a GRANTED_MSG from `server` that no caller waits for with
    /// GRANTED_RES, a call to the lock manager its host's portmapper names,
    /// as Linux's lockd does. A grant the server hears nothing about may be
    /// held for nobody, and NFS-Ganesha makes no further call for 5 s
    /// while it waits for the answer.
    async fn granted_res(self: Arc<Self>, server: IpAddr, res: nlm4_res) {
        // The parameters calls to the local portmapper were made with.
        let Some(params) = self.registered.lock().await.values().flatten().next().map(|r| r.params.clone()) else {
            return;
        };
        let limit = params.connect_timeout.saturating_mul(2);
        let call = async {
            let pmap = SocketAddr::new(server, PMAP_PORT as u16);
            let conn =
                Connection::connect(ConnParams { addr: pmap, ..params.clone() }).await.map_err(|e| e.to_string())?;
            let m = pmap2_mapping { prog: NLM_PROG, vers: NLM_VERS4, prot: IPPROTO_TCP, port: 0 };
            let port = u16::try_from(pmap_port(&conn, &m).await?).unwrap_or(0);
            if port == 0 {
                return Err(format!("the portmapper at {pmap} knows no NLM 4 over TCP"));
            }
            let addr = SocketAddr::new(server, port);
            let conn = Connection::connect(ConnParams { addr, ..params }).await.map_err(|e| e.to_string())?;
            conn.call(NLM_PROG, NLM_VERS4, NLM_GRANTED_RES, vec![xdr::to_bytes(&res)]).await.map_err(|e| e.to_string())
        };
        match tokio::time::timeout(limit, call).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::debug!("NLM_GRANTED_RES to {server}: {e}"),
            Err(_) => tracing::debug!("NLM_GRANTED_RES to {server}: no answer within {limit:?}"),
        }
    }

    /// Registers NLM 4 and NSM 1 with the portmapper of `settings`, or
    /// joins the process of this host that holds them, once; whether
    /// servers can call back through it.
    pub async fn register(self: &Arc<Self>, settings: &LockServiceSettings, params: &ConnParams) -> bool {
        let portmap = settings.portmap;
        let mut done = self.registered.lock().await;
        if let Some(reg) = done.get(&portmap) {
            return reg.is_some();
        }
        // A portmapper that takes calls and never answers is no portmapper.
        let limit = params.connect_timeout.saturating_mul(2);
        let dir = monitor::dir(settings);
        let tried = tokio::time::timeout(limit, self.register_with(portmap, params, &dir)).await;
        let reg = match tried.unwrap_or_else(|_| Err(format!("no answer within {limit:?}"))) {
            Ok(reg) => Some(reg),
            Err(why) => {
                tracing::info!(
                    "lock service not registered with the portmapper at {portmap} ({why}); blocked locks are \
                     asked for again instead of granted by callback"
                );
                None
            }
        };
        // Joined, or not registered (another process's service may have
        // registered a moment before and not yet written itself down):
        // looked at again every relay_check_secs until it holds the entry.
        if reg.as_ref().is_none_or(|r| r.role != relay::Role::Holder) {
            if let Some(Registration { role: relay::Role::Joined(holder), .. }) = &reg {
                tracing::debug!(holder, "lock service joined the one registered with {portmap}");
            }
            let every = Duration::from_secs(settings.relay_check_secs.max(1));
            self.rt.spawn(self.clone().keep(portmap, params.clone(), dir, every));
        }
        let ok = reg.is_some();
        done.insert(portmap, reg);
        ok
    }
}

/// The service's answer to one record, with nobody waiting: for fuzzing
/// the path calls take.
#[doc(hidden)]
pub fn answer_for_fuzzing(record: Bytes) -> Option<Vec<Bytes>> {
    dispatch::answer(&Waiters::default(), IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), record).0
}

async fn pmap_bool(conn: &Connection, proc_: u32, m: &pmap2_mapping) -> Result<bool, String> {
    let reply = conn.call(PMAP_PROGRAM, PMAP_V2, proc_, vec![xdr::to_bytes(m)]).await.map_err(|e| e.to_string())?;
    bool::decode(&mut xdr::Decoder::new(reply)).map_err(|e| e.to_string())
}

async fn pmap_port(conn: &Connection, m: &pmap2_mapping) -> Result<u32, String> {
    let args = pmap2_mapping { port: 0, ..m.clone() };
    let reply =
        conn.call(PMAP_PROGRAM, PMAP_V2, PMAP2_GETPORT, vec![xdr::to_bytes(&args)]).await.map_err(|e| e.to_string())?;
    u32::decode(&mut xdr::Decoder::new(reply)).map_err(|e| e.to_string())
}

//! The server's protocol core (`server_core::Core` over a MemFs export)
//! behind loopback listeners in the test's own runtime, for tests of the
//! real client against the real server on tokio's paused clock.
//!
//! Why sockets: the client only dials `ConnParams::addr` (at mount and at
//! every reconnect, `transport::dial`), and its fast path writes a TCP
//! socket directly, so taking another stream would need a new stream
//! kind and a connector in the production transport. A loopback listener
//! costs the test nothing and keeps the client on the path it really uses.
//!
//! Each connection is one task: it frames records, runs each through
//! `Core::handle` (on a blocking thread, as the server runs records on its
//! workers) and queues the reply; a call the core parks (a GETATTR waiting
//! for CB_GETATTR's answer) is resumed by the record that answers it, or
//! after its timeout on virtual time, as the server does;
//! a writer task sends replies and the core's callbacks (its `Backchannel`)
//! in turn. The core's clock is a `ManualClock` moved up to tokio's clock
//! before every record, so leases, grace periods and recalls run on the
//! test's virtual time. Every listener (`Port`) leads into the same core:
//! a test gives each client its own, to cut off one client (`Port::pause`)
//! while the others go on. `Bridge::reboot` kills every connection and
//! replaces the core with one built from the same export and stable store.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use client::{Client, ClientSettings, NfsUrl, ServerAddrs};
use parking_lot::Mutex;
use proto::framer::{frame_segments, RecordDecoder};
use proto::nfs4::*;
use proto::rpc::*;
use server_core::exports::parse_exports;
use server_core::state::Nfs4Settings;
use server_core::{Backchannel, Clock, Core, CoreSettings, Export, ManualClock, MemStore, PeerInfo, ServicePorts};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use vfs::{MemFs, MemFsSettings};
use xdr::{Decode, Decoder};

const NFS4_PROGRAM: u32 = 100003;
const COMPOUND: u32 = 1;
/// The test user, owner of the export's root.
pub const UID: u32 = 1000;

/// See `fake41::TICK`: the paused clock jumps whenever every task waits,
/// also while bytes are in the kernel between client and bridge; a timer
/// this often bounds such a jump.
const TICK: Duration = Duration::from_millis(10);

/// Client settings for the paused clock (as `fake41::virtual_settings`:
/// the transport measures retransmission timeouts on the wall clock and
/// sleeps on tokio's, so they are put out of reach), as the test user.
pub fn settings() -> ClientSettings {
    let mut s = ClientSettings::default();
    s.rpc.timeout_ms = 24 * 3600 * 1000;
    s.rpc.max_timeout_ms = s.rpc.timeout_ms;
    s.connect_timeout_ms = 3600 * 1000;
    s.machine_name = Some("virtual".into());
    s.uid = Some(UID);
    s.gid = Some(UID);
    s
}

/// A test that hangs fails after ten virtual minutes, a moment of wall time.
pub async fn within<T>(test: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(600), test).await.expect("hung for 600 virtual seconds")
}

/// One COMPOUND the core got, and its answer.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Virtual time since the bridge started.
    pub at: Duration,
    pub conn: u64,
    /// The listener the connection came through.
    pub port: usize,
    /// Reboots before this compound (0: the first core).
    pub boot: u32,
    pub args: COMPOUND4args,
    /// `None` when no reply decoded (or none was sent).
    pub reply: Option<COMPOUND4res>,
}

impl Seen {
    pub fn status(&self) -> Option<nfsstat4> {
        self.reply.as_ref().map(|r| r.status)
    }

    pub fn has(&self, op: nfs_opnum4) -> bool {
        self.args.argarray.iter().any(|o| o.discriminant() == op)
    }

    pub fn sequence(&self) -> Option<&SEQUENCE4args> {
        match self.args.argarray.first() {
            Some(nfs_argop4::OP_SEQUENCE(s)) => Some(s),
            _ => None,
        }
    }

    /// What SEQUENCE answered, when the compound had one.
    pub fn sequence_reply(&self) -> Option<&SEQUENCE4res> {
        match self.reply.as_ref()?.resarray.first() {
            Some(nfs_resop4::OP_SEQUENCE(r)) => Some(r),
            _ => None,
        }
    }

    /// A SEQUENCE alone: a lease renewal.
    pub fn renewal(&self) -> bool {
        self.sequence().is_some() && self.args.argarray.len() == 1
    }

    /// The first operation other than SEQUENCE and PUTFH/PUTROOTFH.
    pub fn main_op(&self) -> nfs_opnum4 {
        self.args
            .argarray
            .iter()
            .map(nfs_argop4::discriminant)
            .find(|o| !matches!(o, nfs_opnum4::OP_SEQUENCE | nfs_opnum4::OP_PUTFH | nfs_opnum4::OP_PUTROOTFH))
            .unwrap_or(nfs_opnum4::OP_SEQUENCE)
    }

    pub fn open(&self) -> Option<&OPEN4args> {
        self.args.argarray.iter().find_map(|o| match o {
            nfs_argop4::OP_OPEN(a) => Some(a),
            _ => None,
        })
    }

    /// The OPEN's result, when the compound got that far.
    pub fn open_reply(&self) -> Option<&OPEN4res> {
        self.reply.as_ref()?.resarray.iter().find_map(|r| match r {
            nfs_resop4::OP_OPEN(o) => Some(o),
            _ => None,
        })
    }
}

/// A call the core made on a client's back channel.
#[derive(Debug, Clone)]
pub struct Callback {
    pub at: Duration,
    pub conn: u64,
    /// CB_NULL (0) or CB_COMPOUND (1).
    pub proc_: u32,
    pub ops: Vec<nfs_cb_opnum4>,
    /// Whether the connection was there to take it.
    pub sent: bool,
}

#[derive(Default)]
pub struct Log {
    pub compounds: Vec<Seen>,
    pub callbacks: Vec<Callback>,
    /// Replies to callbacks, by connection.
    pub cb_replies: Vec<(Duration, u64)>,
}

struct Conn {
    port: usize,
    /// Records (without record marking) for the writer.
    out: mpsc::UnboundedSender<Vec<Bytes>>,
    kill: Arc<Notify>,
}

/// What the connections' tasks, the core's back channel and the test share.
struct Wire {
    conns: Mutex<HashMap<u64, Conn>>,
    log: Mutex<Log>,
    /// Signalled on every entry in the log and every connection gone.
    changed: Notify,
    start: Instant,
}

impl Wire {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

/// The core's back channel: callbacks go out on the connection's writer.
struct Callbacks(Arc<Wire>);

impl Backchannel for Callbacks {
    fn send(&self, conn: u64, record: Vec<Bytes>) -> bool {
        // Called with the core's state locked: queue, never wait.
        let sent = self.0.conns.lock().get(&conn).is_some_and(|c| c.out.send(record.clone()).is_ok());
        let (proc_, ops) = decode_callback(&join(&record)).unwrap_or((u32::MAX, Vec::new()));
        let at = self.0.elapsed();
        self.0.log.lock().callbacks.push(Callback { at, conn, proc_, ops, sent });
        self.0.changed.notify_waiters();
        sent
    }
}

/// What a reboot builds the next core from.
struct Recipe {
    nfs4: Nfs4Settings,
    fs: Arc<MemFs>,
    store: Arc<MemStore>,
    clock: Arc<ManualClock>,
}

impl Recipe {
    /// The core of boot number `boot` (0 first), calling back through `wire`.
    fn core(&self, wire: &Arc<Wire>, boot: u64) -> Core {
        let parsed = parse_exports("/export *(rw,insecure)\n").expect("exports");
        let exports = parsed
            .entries
            .into_iter()
            .map(|e| Export { id: 1, path: e.path, fs: self.fs.clone(), rules: e.rules })
            .collect();
        let settings = CoreSettings { nfs4: self.nfs4.clone(), ..CoreSettings::default() };
        // A new write verifier each boot, as a restarted server's.
        let verifier = (0x5645_5246_0000_0000u64 + boot).to_be_bytes();
        // Listeners come and go on any port: portmap names none (0), and a
        // client then uses the port it asked on.
        let ports = ServicePorts { tcp: 0, udp: None };
        Core::new(settings, exports, [7; 32], verifier, ports).with_nfs4_env(
            self.clock.clone(),
            Arc::new(Callbacks(wire.clone())),
            self.store.clone(),
        )
    }
}

struct Shared {
    wire: Arc<Wire>,
    core: Mutex<Arc<Core>>,
    recipe: Recipe,
    boots: AtomicU64,
    /// Serialises moving the core's clock up to tokio's.
    clock_step: Mutex<()>,
    /// False while the server is down (rebooting): connections made then
    /// wait to be accepted. (Closing them at once would have the client
    /// connect again without a pause, round after round.)
    up: watch::Sender<bool>,
    next_conn: AtomicU64,
    /// Calls the core parked (a GETATTR waiting for CB_GETATTR's answer),
    /// each woken by the record that answers it or by its timeout.
    parked: Mutex<HashMap<server_core::WaitId, tokio::sync::oneshot::Sender<()>>>,
}

impl Shared {
    /// Moves the core's clock up to the virtual time since the start.
    fn sync_clock(&self) {
        let _one = self.clock_step.lock();
        let target = self.wire.elapsed();
        let now = self.recipe.clock.now();
        if target > now {
            self.recipe.clock.advance(target - now);
        }
    }

    /// Runs one record through the core and sends its reply, if any, on
    /// `tx` (later, for a call the core parks).
    async fn handle(self: &Arc<Self>, record: Bytes, peer: &PeerInfo, port: usize, tx: &Replies) {
        self.sync_clock();
        let core = self.core.lock().clone();
        let boot = self.boots.load(Ordering::Relaxed) as u32;
        let call = decode_compound_call(&record);
        let cb_reply = is_reply(&record);
        let p = peer.clone();
        let outcome = tokio::task::spawn_blocking(move || core.handle(record, &p)).await.expect("the core panicked");
        for wait in &outcome.woken {
            if let Some(wake) = self.parked.lock().remove(wait) {
                let _ = wake.send(());
            }
        }
        if let Some(parked) = outcome.parked {
            self.park(parked, peer.clone(), port, boot, call, tx.clone());
            return;
        }
        self.log(peer, port, boot, call, cb_reply, outcome.reply.as_deref());
        if let Some(reply) = outcome.reply {
            let _ = tx.send(reply);
        }
    }

    /// Resumes `parked` once woken or timed out (on virtual time), and
    /// sends its reply.
    fn park(
        self: &Arc<Self>,
        mut parked: Box<server_core::Parked>,
        peer: PeerInfo,
        port: usize,
        boot: u32,
        call: Option<COMPOUND4args>,
        tx: Replies,
    ) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let (wake, woken) = tokio::sync::oneshot::channel();
                me.parked.lock().insert(parked.wait_id(), wake);
                let _ = tokio::time::timeout(parked.timeout(), woken).await;
                me.parked.lock().remove(&parked.wait_id());
                me.sync_clock();
                let core = me.core.lock().clone();
                let p = peer.clone();
                let outcome =
                    tokio::task::spawn_blocking(move || core.resume(parked, &p)).await.expect("the core panicked");
                match outcome.parked {
                    Some(again) => parked = again,
                    None => {
                        me.log(&peer, port, boot, call, false, outcome.reply.as_deref());
                        if let Some(reply) = outcome.reply {
                            let _ = tx.send(reply);
                        }
                        return;
                    }
                }
            }
        });
    }

    fn log(
        &self,
        peer: &PeerInfo,
        port: usize,
        boot: u32,
        call: Option<COMPOUND4args>,
        cb_reply: bool,
        reply: Option<&[Bytes]>,
    ) {
        let at = self.wire.elapsed();
        {
            let mut log = self.wire.log.lock();
            if let Some(args) = call {
                let reply = reply.and_then(|r| decode_compound_reply(&join(r)));
                log.compounds.push(Seen { at, conn: peer.conn, port, boot, args, reply });
            } else if cb_reply {
                log.cb_replies.push((at, peer.conn));
            }
        }
        self.wire.changed.notify_waiters();
    }
}

/// Where a connection's replies go to be written.
type Replies = mpsc::UnboundedSender<Vec<Bytes>>;

/// A listener into the bridge's core.
pub struct Port {
    pub addr: SocketAddr,
    pub index: usize,
    paused: Arc<watch::Sender<bool>>,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

/// Dropping a port closes its listener; its connections go on, unpaused.
impl Drop for Port {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Port {
    /// The export over NFSv4.1 through this listener.
    pub fn url(&self) -> String {
        format!("nfs://127.0.0.1:{}/export?version=4.1", self.addr.port())
    }

    /// Mounts the export through this listener, without asking portmap
    /// first (a connection less).
    pub async fn mount(&self) -> Client {
        self.mount_with(settings()).await
    }

    pub async fn mount_with(&self, s: ClientSettings) -> Client {
        let url = NfsUrl::parse(&self.url()).expect("url");
        let addrs = ServerAddrs { mount: self.addr, nfs: self.addr, nlm: None };
        Client::connect_to(&url, addrs, s).await.expect("mount")
    }

    /// The network to this listener's clients stops both ways: nothing
    /// more is read from their connections or written to them (what they
    /// send waits in the socket) until [`Port::resume`].
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// Closes this listener's connections (the clients reconnect).
    pub fn cut(&self) {
        for c in self.shared.wire.conns.lock().values().filter(|c| c.port == self.index) {
            c.kill.notify_one();
        }
    }
}

/// The core and its listeners. Dropping it stops every task.
pub struct Bridge {
    shared: Arc<Shared>,
    ticker: JoinHandle<()>,
    ports: Mutex<usize>,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.ticker.abort();
        for c in self.shared.wire.conns.lock().values() {
            c.kill.notify_one();
        }
    }
}

impl Bridge {
    /// A core exporting /export (a MemFs the test user owns) with these
    /// NFSv4 settings, its clock at tokio's now.
    pub fn new(nfs4: Nfs4Settings) -> Bridge {
        let fs = Arc::new(MemFs::with_settings(MemFsSettings { root_owner: (UID, UID), ..MemFsSettings::default() }));
        let wire = Arc::new(Wire {
            conns: Mutex::default(),
            log: Mutex::default(),
            changed: Notify::new(),
            start: Instant::now(),
        });
        let recipe = Recipe { nfs4, fs, store: Arc::new(MemStore::default()), clock: Arc::new(ManualClock::default()) };
        let core = recipe.core(&wire, 0);
        let shared = Arc::new(Shared {
            wire,
            core: Mutex::new(Arc::new(core)),
            recipe,
            boots: AtomicU64::new(0),
            clock_step: Mutex::new(()),
            up: watch::Sender::new(true),
            next_conn: AtomicU64::new(0),
            parked: Mutex::new(HashMap::new()),
        });
        let ticker = tokio::spawn(async {
            loop {
                tokio::time::sleep(TICK).await;
            }
        });
        Bridge { shared, ticker, ports: Mutex::new(0) }
    }

    /// A new listener on 127.0.0.1 into the core.
    pub async fn port(&self) -> Port {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let index = {
            let mut n = self.ports.lock();
            *n += 1;
            *n - 1
        };
        let paused = Arc::new(watch::Sender::new(false));
        let accept = tokio::spawn(accept(listener, index, self.shared.clone(), paused.clone()));
        Port { addr, index, paused, shared: self.shared.clone(), accept }
    }

    /// The core in service now.
    pub fn core(&self) -> Arc<Core> {
        self.shared.core.lock().clone()
    }

    /// The exported file system (it survives reboots).
    pub fn fs(&self) -> Arc<MemFs> {
        self.shared.recipe.fs.clone()
    }

    /// The file `name` in the export's root, as the server has it.
    pub fn file(&self, name: &str) -> Option<Vec<u8>> {
        use vfs::Vfs;
        let fs = self.fs();
        let (id, attrs) = fs.lookup(fs.root(), name.as_bytes()).ok()?;
        Some(fs.read(id, 0, attrs.size as u32).ok()?.data.to_vec())
    }

    /// Reads the log under its lock.
    pub fn with_log<R>(&self, f: impl FnOnce(&Log) -> R) -> R {
        f(&self.shared.wire.log.lock())
    }

    /// Where the compound log is now, to look at what comes after.
    pub fn mark(&self) -> usize {
        self.shared.wire.log.lock().compounds.len()
    }

    pub fn since(&self, mark: usize) -> Vec<Seen> {
        self.shared.wire.log.lock().compounds.get(mark..).unwrap_or_default().to_vec()
    }

    /// Waits until `cond` holds of the log; only new entries wake it, so
    /// it takes no virtual time of its own.
    pub async fn until(&self, cond: impl Fn(&Log) -> bool) {
        loop {
            let changed = self.shared.wire.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if cond(&self.shared.wire.log.lock()) {
                return;
            }
            changed.await;
        }
    }

    /// Virtual time since the bridge started, which the core's clock
    /// follows.
    pub fn now(&self) -> Duration {
        self.shared.wire.elapsed()
    }

    /// Moves tokio's clock (and with it the core's) on by `d` at once:
    /// timers due meanwhile (the clients' lease renewals) fire late, at
    /// the end. `tokio::time::sleep` moves it step by step instead.
    pub async fn advance(&self, d: Duration) {
        tokio::time::advance(d).await;
        self.shared.sync_clock();
    }

    /// The server restarts: every connection drops with whatever it had
    /// not answered, and after a second (a new boot, whose ids differ from
    /// the old ones: they carry its start in seconds) a new core serves
    /// the same export and stable store, in its grace period if clients
    /// held state. Connections made meanwhile are accepted once it is up.
    pub async fn reboot(&self) {
        self.shared.up.send_replace(false);
        for c in self.shared.wire.conns.lock().values() {
            c.kill.notify_one();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.shared.sync_clock();
        let boot = self.shared.boots.fetch_add(1, Ordering::Relaxed) + 1;
        *self.shared.core.lock() = Arc::new(self.shared.recipe.core(&self.shared.wire, boot));
        self.shared.up.send_replace(true);
    }
}

async fn accept(listener: TcpListener, index: usize, shared: Arc<Shared>, paused: Arc<watch::Sender<bool>>) {
    let mut up = shared.up.subscribe();
    while let Ok((sock, _)) = listener.accept().await {
        let _ = up.wait_for(|u| *u).await;
        let _ = sock.set_nodelay(true);
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed) + 1;
        tokio::spawn(serve(id, index, sock, shared.clone(), paused.subscribe()));
    }
}

/// A port that is gone (dropped) pauses nothing any more.
fn gone(paused: &watch::Receiver<bool>) -> bool {
    paused.has_changed().is_err()
}

async fn unpaused(paused: &mut watch::Receiver<bool>) {
    if !gone(paused) {
        let _ = paused.wait_for(|p| !*p).await;
    }
}

/// Returns once the port is paused; never if it cannot be any more.
async fn until_paused(paused: &mut watch::Receiver<bool>) {
    if gone(paused) || paused.wait_for(|p| *p).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn serve(id: u64, port: usize, sock: TcpStream, shared: Arc<Shared>, mut paused: watch::Receiver<bool>) {
    let peer = PeerInfo {
        addr: sock.peer_addr().expect("peer address"),
        local: sock.local_addr().expect("local address"),
        hostname: None,
        conn: id,
        tls: Default::default(),
    };
    let (mut rd, mut wr) = sock.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<Bytes>>();
    let kill = Arc::new(Notify::new());
    shared.wire.conns.lock().insert(id, Conn { port, out: tx.clone(), kill: kill.clone() });
    let mut writer_paused = paused.clone();
    let writer = tokio::spawn(async move {
        while let Some(record) = rx.recv().await {
            unpaused(&mut writer_paused).await;
            for seg in frame_segments(record) {
                if wr.write_all(&seg).await.is_err() {
                    return;
                }
            }
        }
    });
    let mut framer = RecordDecoder::new(16 << 20);
    let killed = 'conn: loop {
        tokio::select! {
            _ = unpaused(&mut paused) => {}
            _ = kill.notified() => break 'conn true,
        }
        tokio::select! {
            r = rd.read_buf(framer.buffer_mut()) => match r {
                Ok(0) | Err(_) => break 'conn false,
                Ok(_) => {}
            },
            _ = kill.notified() => break 'conn true,
            // Paused while waiting: stop reading until resumed.
            _ = until_paused(&mut paused) => continue,
        }
        loop {
            match framer.next_record() {
                Ok(Some(record)) => {
                    shared.handle(record, &peer, port, &tx).await;
                }
                Ok(None) => break,
                Err(_) => break 'conn false,
            }
        }
    };
    shared.wire.conns.lock().remove(&id);
    drop(tx);
    if killed {
        // A server that dies sends nothing more.
        writer.abort();
    } else {
        let _ = writer.await;
    }
    shared.wire.changed.notify_waiters();
}

fn join(segs: &[Bytes]) -> Bytes {
    let mut b = BytesMut::new();
    for s in segs {
        b.extend_from_slice(s);
    }
    b.freeze()
}

fn is_reply(record: &Bytes) -> bool {
    let mut d = Decoder::new(record.clone());
    matches!(rpc_msg::decode(&mut d), Ok(rpc_msg { body: rpc_msg_body::REPLY(_), .. }))
}

fn decode_compound_call(record: &Bytes) -> Option<COMPOUND4args> {
    let mut d = Decoder::new(record.clone());
    let rpc_msg { body: rpc_msg_body::CALL(c), .. } = rpc_msg::decode(&mut d).ok()? else { return None };
    if c.prog != NFS4_PROGRAM || c.proc != COMPOUND {
        return None;
    }
    COMPOUND4args::decode(&mut d).ok()
}

fn decode_compound_reply(record: &Bytes) -> Option<COMPOUND4res> {
    let mut d = Decoder::new(record.clone());
    let rpc_msg { body: rpc_msg_body::REPLY(body), .. } = rpc_msg::decode(&mut d).ok()? else { return None };
    match body {
        reply_body::MSG_ACCEPTED(accepted_reply { reply_data: reply_data::SUCCESS, .. }) => {
            COMPOUND4res::decode(&mut d).ok()
        }
        _ => None,
    }
}

fn decode_callback(record: &Bytes) -> Option<(u32, Vec<nfs_cb_opnum4>)> {
    let mut d = Decoder::new(record.clone());
    let rpc_msg { body: rpc_msg_body::CALL(c), .. } = rpc_msg::decode(&mut d).ok()? else { return None };
    if c.proc != COMPOUND {
        return Some((c.proc, Vec::new()));
    }
    let args = CB_COMPOUND4args::decode(&mut d).ok()?;
    Some((c.proc, args.argarray.iter().map(nfs_cb_argop4::discriminant).collect()))
}

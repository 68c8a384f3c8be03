//! One RPC connection. A call is registered with the sans-IO [`RpcCore`]
//! and, when no other call is outstanding, written to the socket by the
//! caller itself, on its own thread; a task owned by the connection reads the
//! replies, matches them to their callers, runs the retransmit timers,
//! writes what the socket could not take at once, and reconnects when the
//! connection breaks or stops making progress (a call's retransmit timer
//! ran out with no whole record received since it was sent; `RpcCore`
//! decides, see `RpcSettings::timeout_ms`).
//!
//! Why the caller writes: handing each call to the task, and the task to
//! a writer, cost a thread hand-off per call on the way out; with one
//! call in flight the client's two hand-offs per call cost more CPU than
//! the server's whole answer (docs/BENCHMARKS.md, "The client's call
//! path"). Records go out whole and in order: a caller writes only when
//! nothing is queued before it, and leaves what a non-blocking write did
//! not take to the task, which sends it when the socket is writable. So a
//! server that stops reading can never keep the task from reading replies.
//! Over TLS, and while the connection is down, calls still go to the task
//! through a channel, and a writer task does the writes.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use client_core::rpc::{Completion, IncomingCall, Nanos, Results, RpcCore, RpcError, RpcSettings};
use client_core::stats::Stats;
use parking_lot::Mutex;
use proto::framer::RecordDecoder;
use proto::rpc::opaque_auth;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch, Notify};

use crate::rcvlowat::LowWater;

mod gss;
mod incoming;
mod redial;

pub use gss::{BackContext, GssParams};
pub use incoming::{Incoming, Responder};

/// What a connection needs to know besides the RPC settings.
#[derive(Debug, Clone)]
pub struct ConnParams {
    pub addr: SocketAddr,
    pub rpc: RpcSettings,
    pub cred: opaque_auth,
    /// Limit for one connect attempt.
    pub connect_timeout: Duration,
    /// How long to keep trying to reconnect before failing every
    /// outstanding call.
    pub reconnect_timeout: Duration,
    /// Longest pause between reconnect attempts.
    pub reconnect_max_pause: Duration,
    /// Largest reply record accepted.
    pub max_record: usize,
    /// Room made in the receive buffer for a read between replies.
    pub read_buffer: usize,
    /// Replies shorter than this are copied out of the receive buffer.
    pub copy_replies_below: usize,
    /// `SO_RCVLOWAT` for large replies while other calls wait
    /// (`reply_lowat_min`, `reply_lowat_max`; see `rcvlowat`).
    pub reply_lowat_min: usize,
    pub reply_lowat_max: usize,
    /// RPC-with-TLS on every connection made with these parameters.
    pub tls: Option<Arc<crate::tls::ClientTls>>,
    /// On a current-thread runtime, how long a caller keeps polling the
    /// socket for its reply before the runtime sleeps (`reply_poll_us`).
    pub reply_poll: Duration,
    /// NFS calls under RPCSEC_GSS (`sec=krb5`, `krb5i`, `krb5p`).
    pub gss: Option<GssParams>,
}

/// A connected byte stream: TCP, or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// Where a connection's records are written.
enum WriteSide {
    /// Plain TCP: callers and the task write the socket directly.
    Direct(Arc<OwnedWriteHalf>),
    /// TLS: a writer task owns the stream's write half.
    Task(Writer),
}

impl Stream {
    fn split(self) -> (Reader, WriteSide) {
        match self {
            Stream::Plain(s) => {
                let (r, w) = s.into_split();
                (Box::new(r), WriteSide::Direct(Arc::new(w)))
            }
            Stream::Tls(s) => {
                let (r, w) = tokio::io::split(*s);
                (Box::new(r), WriteSide::Task(Box::new(w)))
            }
        }
    }
}

struct Call {
    /// Counted under this name rather than the procedure's.
    name: Option<&'static str>,
    prog: u32,
    vers: u32,
    proc_: u32,
    args: Vec<Bytes>,
    reply: oneshot::Sender<Results>,
    /// An RPCSEC_GSS context-creation call: the handle (empty for the
    /// first) and the token.
    init: Option<(Bytes, Vec<u8>)>,
}

/// A handle to one connection's task. Cheap to clone; the task ends when
/// the last handle is dropped.
#[derive(Clone)]
pub struct Connection {
    calls: mpsc::UnboundedSender<Call>,
    shared: Arc<Shared>,
    /// NFS calls go under RPCSEC_GSS ([`GssParams`]).
    gss: Option<GssParams>,
    setups: Arc<gss::Setups>,
    /// How long a caller polls for its reply (zero off a current-thread
    /// runtime).
    reply_poll: Duration,
}

/// What callers and the connection's task share.
struct Shared {
    /// The calls in progress; taken before `out` when both are needed.
    rpc: Mutex<Rpc>,
    out: Mutex<Out>,
    /// Tells the task that `out` needs it: bytes left to write, or a write
    /// that failed.
    kick: Notify,
    epoch: Instant,
    /// Connections made again so far; an NFSv4.1 session binds each new
    /// one to its back channel.
    reconnects: watch::Sender<u64>,
}

impl Shared {
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }
}

struct Rpc {
    core: RpcCore,
    waiters: HashMap<u32, oneshot::Sender<Results>>,
}

impl Rpc {
    /// Registers a call; its record goes out with the next transmit.
    fn start(&mut self, c: Call, now: Nanos) {
        let xid = match (c.init, c.name) {
            (Some((handle, token)), _) => self.core.call_gss_init(c.prog, c.vers, &handle, &token, now),
            (None, Some(name)) => self.core.call_named(name, c.prog, c.vers, c.proc_, c.args, now),
            (None, None) => self.core.call(c.prog, c.vers, c.proc_, c.args, now),
        };
        self.waiters.insert(xid, c.reply);
    }

    /// The records ready to go out, in order.
    fn transmit(&mut self, now: Nanos) -> Vec<Bytes> {
        let mut segs = Vec::new();
        while let Some(rec) = self.core.poll_transmit(now) {
            segs.extend(rec);
        }
        segs
    }

    /// Takes the waiters of finished calls, to be answered outside the lock.
    fn finish(&mut self, done: impl IntoIterator<Item = Completion>) -> Vec<(oneshot::Sender<Results>, Results)> {
        done.into_iter().filter_map(|c| Some((self.waiters.remove(&c.xid)?, c.into_results()))).collect()
    }
}

/// Hands finished calls their results; sealed ones are opened by their
/// callers, off the connection's task.
fn answer(done: Vec<(oneshot::Sender<Results>, Results)>) {
    for (w, r) in done {
        let _ = w.send(r);
    }
}

/// The socket's write side as callers see it.
#[derive(Default)]
struct Out {
    /// The socket, while the connection is up over plain TCP.
    direct: Option<Arc<OwnedWriteHalf>>,
    /// Bytes that must go out before anything else, in order: what a
    /// non-blocking write did not take.
    queued: VecDeque<Bytes>,
    /// A write failed: the connection is broken.
    failed: Option<String>,
}

impl Out {
    /// Writes `segs` after what is queued, without blocking; returns
    /// whether the task must take over (bytes left, or a failure).
    fn send(&mut self, segs: Vec<Bytes>) -> bool {
        // An empty segment (a procedure with no results) would make a
        // write of nothing but it look like a socket that takes nothing.
        let segs: Vec<Bytes> = segs.into_iter().filter(|b| !b.is_empty()).collect();
        if segs.is_empty() {
            return false;
        }
        if !self.queued.is_empty() || self.failed.is_some() {
            // The task already has them to write (or a failure to act on).
            self.queued.extend(segs);
            return false;
        }
        self.queued.extend(segs);
        self.write_queued()
    }

    /// Writes what is queued until the socket would block; returns whether
    /// the task must take over.
    fn write_queued(&mut self) -> bool {
        use bytes::Buf;
        let Some(w) = self.direct.clone() else { return false };
        while !self.queued.is_empty() {
            let slices: Vec<std::io::IoSlice> =
                self.queued.iter().take(MAX_IOVECS).map(|b| std::io::IoSlice::new(b)).collect();
            match w.try_write_vectored(&slices) {
                Ok(0) => {
                    self.failed = Some("socket accepted nothing".into());
                    return true;
                }
                Ok(mut n) => {
                    // The kernel took at most what was queued.
                    while let (true, Some(front)) = (n > 0, self.queued.front_mut()) {
                        let take = n.min(front.len());
                        front.advance(take);
                        n -= take;
                        if front.is_empty() {
                            self.queued.pop_front();
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) => {
                    self.failed = Some(e.to_string());
                    return true;
                }
            }
        }
        false
    }
}

/// Awaits `reply` while yielding to the runtime for at most `budget`: a
/// current-thread runtime with a task yielded polls its sockets without
/// sleeping (`epoll_wait` with no timeout), so a reply that comes within
/// the budget is read without the wake-up from sleep that otherwise costs
/// a lone caller a quarter of its CPU per call. Past the budget it sleeps
/// as usual.
async fn poll_for<F: std::future::Future>(reply: F, budget: Duration) -> F::Output {
    let mut reply = std::pin::pin!(reply);
    let until = Instant::now() + budget;
    while Instant::now() < until {
        tokio::select! {
            biased;
            r = &mut reply => return r,
            _ = tokio::task::yield_now() => {}
        }
    }
    reply.await
}

/// Most buffers one writev is given (IOV_MAX is 1024 on Linux).
const MAX_IOVECS: usize = 512;

impl Connection {
    /// Connects (failing fast if the first attempt fails) and starts the
    /// connection's task on the current runtime.
    pub async fn connect(params: ConnParams) -> std::io::Result<Connection> {
        Self::start(params, None).await
    }

    /// Connects like [`Connection::connect`], and hands every call the
    /// server makes on the connection (the NFSv4.1 back channel) to
    /// `incoming`.
    pub async fn connect_with_back_channel(
        params: ConnParams,
        incoming: mpsc::UnboundedSender<Incoming>,
    ) -> std::io::Result<Connection> {
        Self::start(params, Some(incoming)).await
    }

    async fn start(
        params: ConnParams,
        incoming: Option<mpsc::UnboundedSender<Incoming>>,
    ) -> std::io::Result<Connection> {
        let stream = dial(&params).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let first_xid = rand_xid();
        let mut core = RpcCore::new(params.rpc.clone(), params.cred.clone(), first_xid);
        if incoming.is_some() {
            core.accept_incoming();
        }
        let shared = Arc::new(Shared {
            rpc: Mutex::new(Rpc { core, waiters: HashMap::new() }),
            out: Mutex::new(Out::default()),
            kick: Notify::new(),
            epoch: Instant::now(),
            reconnects: watch::Sender::new(0),
        });
        let (replies_tx, replies) = mpsc::unbounded_channel();
        // Callers poll only on a current-thread runtime, whose one thread
        // is the caller's own (a lone caller driving it): there the polling
        // costs no other caller its turn. Decided once, here, where the
        // connection's task is bound to its runtime.
        let current_thread =
            tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread;
        let reply_poll = if current_thread { params.reply_poll } else { Duration::ZERO };
        let gss = params.gss.clone();
        let task = Task { params, shared: shared.clone(), calls: rx, incoming, replies_tx, replies };
        tokio::spawn(task.run(stream));
        Ok(Connection { calls: tx, shared, reply_poll, gss, setups: Default::default() })
    }

    /// Makes a call with XDR-encoded arguments; returns the result bytes.
    pub async fn call(&self, prog: u32, vers: u32, proc_: u32, args: Vec<Bytes>) -> Result<Bytes, RpcError> {
        self.call_as(None, prog, vers, proc_, args).await
    }

    /// [`Connection::call`], counted in the statistics under `name`.
    pub async fn call_as(
        &self,
        name: Option<&'static str>,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: Vec<Bytes>,
    ) -> Result<Bytes, RpcError> {
        if self.sealed_program(prog) {
            return self.call_sealed(name, prog, vers, proc_, args).await;
        }
        self.call_once(name, prog, vers, proc_, args).await
    }

    pub(super) async fn call_once(
        &self,
        name: Option<&'static str>,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: Vec<Bytes>,
    ) -> Result<Bytes, RpcError> {
        let (reply, rx) = oneshot::channel();
        let call = Call { name, prog, vers, proc_, args, reply, init: None };
        if let Some(call) = self.write_directly(call) {
            self.calls.send(call).map_err(|_| RpcError::Disconnected("connection closed".into()))?;
        }
        let reply = if self.reply_poll.is_zero() { rx.await } else { poll_for(rx, self.reply_poll).await };
        reply.map_or_else(|_| Err(RpcError::Disconnected("connection closed".into())), Results::open)
    }

    /// Registers `call` and writes it on this thread when it is the only
    /// call outstanding on a plain TCP connection that is up; otherwise
    /// gives it back for the task. With other calls outstanding the task
    /// is awake for their replies anyway and sends every call queued for
    /// it in one write, which is cheaper than each caller's own write and
    /// its turn at the locks (16 threads of 4 KiB READs: 0.85x when every
    /// caller wrote).
    fn write_directly(&self, call: Call) -> Option<Call> {
        let mut rpc = self.shared.rpc.lock();
        if rpc.core.outstanding() > 0 {
            return Some(call);
        }
        let mut out = self.shared.out.lock();
        if out.direct.is_none() || out.failed.is_some() || self.calls.is_closed() {
            return Some(call);
        }
        let now = self.shared.now();
        rpc.start(call, now);
        let segs = rpc.transmit(now);
        drop(rpc);
        if out.send(segs) {
            drop(out);
            self.shared.kick.notify_one();
        }
        None
    }

    /// Changes each time the connection is made again: the server knows
    /// nothing of the new one until told (an NFSv4.1 back channel, RFC
    /// 8881 section 2.10.3.1).
    pub fn reconnects(&self) -> watch::Receiver<u64> {
        self.shared.reconnects.subscribe()
    }

    /// The connection's counters so far.
    pub fn stats(&self) -> Stats {
        self.shared.rpc.lock().core.stats().clone()
    }
}

fn rand_xid() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (t.as_nanos() as u32) ^ std::process::id().rotate_left(16)
}

async fn dial(p: &ConnParams) -> std::io::Result<Stream> {
    let timed_out = || std::io::Error::new(std::io::ErrorKind::TimedOut, format!("connect to {} timed out", p.addr));
    let s = tokio::time::timeout(p.connect_timeout, TcpStream::connect(p.addr)).await.map_err(|_| timed_out())??;
    s.set_nodelay(true)?;
    match &p.tls {
        None => Ok(Stream::Plain(s)),
        Some(tls) => {
            let t = tokio::time::timeout(p.connect_timeout, tls.start(s)).await.map_err(|_| timed_out())?;
            match t {
                Ok(t) => Ok(Stream::Tls(Box::new(t))),
                Err(e) => {
                    tracing::warn!(addr = %p.addr, "RPC-with-TLS: {e}");
                    Err(e)
                }
            }
        }
    }
}

struct Task {
    params: ConnParams,
    shared: Arc<Shared>,
    /// Calls handed to the task: over TLS, or while the connection is down.
    calls: mpsc::UnboundedReceiver<Call>,
    /// Where calls from the server go; None drops them.
    incoming: Option<mpsc::UnboundedSender<Incoming>>,
    /// Answers to those calls, written in turn with the outgoing calls.
    replies_tx: mpsc::UnboundedSender<Vec<Bytes>>,
    replies: mpsc::UnboundedReceiver<Vec<Bytes>>,
}

/// Why a connection's inner loop stopped.
enum Stop {
    /// Every handle is gone: end the task.
    Closed,
    /// The socket failed: reconnect and resend.
    Broken(String),
}

/// How the task writes on the current connection.
enum Sink {
    /// Through `Shared::out`, as callers do.
    Direct(Arc<OwnedWriteHalf>),
    /// Through the writer task (TLS).
    Writer(mpsc::UnboundedSender<Vec<Bytes>>),
}

impl Task {
    fn now(&self) -> Nanos {
        self.shared.now()
    }

    async fn run(mut self, mut stream: Stream) {
        let mut flapping = redial::Flapping::new(self.params.reconnect_max_pause);
        loop {
            let (rd, wr) = stream.split();
            let up_since = Instant::now();
            match self.serve(rd, wr).await {
                Stop::Closed => return,
                Stop::Broken(why) => {
                    tracing::debug!(addr = %self.params.addr, "connection broken: {why}");
                    self.disconnect();
                    if !self.pace_redial(&mut flapping, up_since.elapsed()).await {
                        return;
                    }
                    match self.reconnect().await {
                        Some(s) => {
                            stream = s;
                            self.shared.reconnects.send_modify(|n| *n += 1);
                        }
                        None => {
                            let err = RpcError::Disconnected(format!("{}: {why}", self.params.addr));
                            let now = self.now();
                            let done = {
                                let mut rpc = self.shared.rpc.lock();
                                let failed = rpc.core.fail_all(err, now);
                                rpc.finish(failed)
                            };
                            answer(done);
                            // Later calls get a fresh attempt each.
                            match self.wait_for_call_then_dial().await {
                                Some(s) => {
                                    stream = s;
                                    self.shared.reconnects.send_modify(|n| *n += 1);
                                }
                                None => return,
                            }
                        }
                    }
                }
            }
        }
    }

    /// Everything sent on the broken connection is to be sent again, and
    /// callers stop writing until the next one is up.
    /// Calls already sent as often as `retrans` allows fail here.
    fn disconnect(&mut self) {
        let now = self.now();
        let done = {
            let mut rpc = self.shared.rpc.lock();
            let failed = rpc.core.on_disconnect(now);
            *self.shared.out.lock() = Out::default();
            rpc.finish(failed)
        };
        answer(done);
    }

    /// Writes the records ready to go (calls queued behind the in-flight
    /// limit, retransmissions, calls handed to the task).
    fn transmit(&self, sink: &Sink) -> Result<(), Stop> {
        let now = self.now();
        let mut rpc = self.shared.rpc.lock();
        match sink {
            Sink::Direct(_) => {
                let mut out = self.shared.out.lock();
                let segs = rpc.transmit(now);
                drop(rpc);
                out.send(segs);
                match &out.failed {
                    Some(why) => Err(Stop::Broken(why.clone())),
                    None => Ok(()),
                }
            }
            Sink::Writer(tx) => {
                let segs = rpc.transmit(now);
                if !segs.is_empty() && tx.send(segs).is_err() {
                    return Err(Stop::Broken("writer stopped".into()));
                }
                Ok(())
            }
        }
    }

    /// Writes what callers left queued, once the socket can take more.
    fn write_queued(&self) -> Result<(), Stop> {
        let mut out = self.shared.out.lock();
        out.write_queued();
        match &out.failed {
            Some(why) => Err(Stop::Broken(why.clone())),
            None => Ok(()),
        }
    }

    fn has_queued(&self) -> bool {
        !self.shared.out.lock().queued.is_empty()
    }

    async fn serve(&mut self, mut rd: Reader, wr: WriteSide) -> Stop {
        let now = self.now();
        self.shared.rpc.lock().core.on_connected(now);
        let (sink, mut writer) = match wr {
            WriteSide::Direct(w) => {
                let mut out = self.shared.out.lock();
                *out = Out { direct: Some(w.clone()), ..Out::default() };
                (Sink::Direct(w), None)
            }
            WriteSide::Task(w) => {
                let (tx, rx) = mpsc::unbounded_channel::<Vec<Bytes>>();
                (Sink::Writer(tx), Some(tokio::spawn(write_loop(w, rx))))
            }
        };
        let stop = self.serve_loop(&mut rd, &sink, &mut writer).await;
        // Callers stop writing on this connection now.
        *self.shared.out.lock() = Out::default();
        if let Some(w) = writer {
            w.abort();
        }
        stop
    }

    async fn serve_loop(
        &mut self,
        rd: &mut Reader,
        sink: &Sink,
        writer: &mut Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    ) -> Stop {
        let mut framer = RecordDecoder::new(self.params.max_record)
            .copy_records_below(self.params.copy_replies_below)
            .expect_like_the_last(true);
        // With nothing outstanding, wake up after one call timeout anyway:
        // a call registered meanwhile by a caller's own thread has a later
        // deadline than that, so its timer is never missed.
        let idle = Duration::from_millis(self.params.rpc.timeout_ms.max(1));
        let fd = match sink {
            Sink::Direct(w) => Some(AsRef::<TcpStream>::as_ref(&**w).as_raw_fd()),
            Sink::Writer(_) => None,
        };
        let mut lowat = LowWater::new(fd, self.params.reply_lowat_min, self.params.reply_lowat_max);
        loop {
            if let Err(stop) = self.transmit(sink) {
                return stop;
            }
            let deadline =
                self.shared.rpc.lock().core.next_deadline().map(|d| self.shared.epoch + Duration::from_nanos(d));
            let sleep = tokio::time::sleep_until(deadline.unwrap_or_else(|| Instant::now() + idle).into());
            let queued = matches!(sink, Sink::Direct(_)) && self.has_queued();
            let writable = async {
                match sink {
                    Sink::Direct(w) if queued => w.writable().await,
                    _ => std::future::pending().await,
                }
            };
            let writer_done = async {
                match writer.as_mut() {
                    Some(w) => w.await,
                    None => std::future::pending().await,
                }
            };
            framer.reserve_for_read(self.params.read_buffer);
            let buf = framer.buffer_mut();
            tokio::select! {
                call = self.calls.recv() => match call {
                    Some(c) => {
                        let now = self.now();
                        let mut rpc = self.shared.rpc.lock();
                        rpc.start(c, now);
                        // Take whatever else is queued before writing, so a
                        // burst of calls goes out in one writev.
                        while let Ok(c) = self.calls.try_recv() {
                            rpc.start(c, now);
                        }
                    }
                    None => return Stop::Closed,
                },
                r = rd.read_buf(buf) => match r {
                    Ok(0) => return Stop::Broken("server closed the connection".into()),
                    Err(e) => return Stop::Broken(e.to_string()),
                    Ok(_) => {
                        let now = self.now();
                        let mut rpc = self.shared.rpc.lock();
                        let mut done = Vec::new();
                        loop {
                            match framer.next_record() {
                                Ok(Some(rec)) => done.extend(rpc.core.on_record(rec, now)),
                                Ok(None) => break,
                                Err(e) => return Stop::Broken(e.to_string()),
                            }
                        }
                        let done = rpc.finish(done);
                        let incoming = self.take_incoming(&mut rpc);
                        let others = rpc.core.outstanding() > 1;
                        drop(rpc);
                        lowat.after_read(framer.fragment_missing(), others);
                        answer(done);
                        self.hand_over(incoming);
                    }
                },
                Some(rec) = self.replies.recv() => {
                    match sink {
                        Sink::Direct(_) => {
                            let mut out = self.shared.out.lock();
                            out.send(rec);
                            if let Some(why) = &out.failed {
                                return Stop::Broken(why.clone());
                            }
                        }
                        Sink::Writer(tx) => {
                            if tx.send(rec).is_err() {
                                return Stop::Broken("writer stopped".into());
                            }
                        }
                    }
                }
                _ = sleep => {
                    let now = self.now();
                    let (done, dead) = {
                        let mut rpc = self.shared.rpc.lock();
                        let expired = rpc.core.poll_timers(now);
                        (rpc.finish(expired.failed), expired.reconnect)
                    };
                    answer(done);
                    if dead {
                        // A record begun and never finished would swallow
                        // every later reply: only a new connection helps.
                        tracing::warn!(addr = %self.params.addr, "nothing received for a retransmit timeout: reconnecting");
                        return Stop::Broken("no progress for a retransmit timeout".into());
                    }
                }
                // A caller left bytes queued, or its write failed.
                _ = self.shared.kick.notified() => {
                    if let Some(why) = &self.shared.out.lock().failed {
                        return Stop::Broken(why.clone());
                    }
                }
                r = writable => {
                    if let Err(e) = r {
                        return Stop::Broken(e.to_string());
                    }
                    if let Err(stop) = self.write_queued() {
                        return stop;
                    }
                }
                w = writer_done => return Stop::Broken(match w {
                    Ok(Err(e)) => e.to_string(),
                    _ => "writer stopped".into(),
                }),
            }
        }
    }

    fn take_incoming(&self, rpc: &mut Rpc) -> Vec<IncomingCall> {
        std::iter::from_fn(|| rpc.core.poll_incoming()).collect()
    }

    fn hand_over(&mut self, calls: Vec<IncomingCall>) {
        let Some(to) = &self.incoming else { return };
        for call in calls {
            let reply = Responder::new(call.xid, self.replies_tx.clone());
            let _ = to.send(Incoming { call, reply });
        }
    }
}

/// Writes records as they come, several per writev when they queue up.
async fn write_loop(mut wr: Writer, mut rx: mpsc::UnboundedReceiver<Vec<Bytes>>) -> std::io::Result<()> {
    const BATCH: usize = 64;
    let mut segs: Vec<Bytes> = Vec::new();
    while let Some(first) = rx.recv().await {
        segs.extend(first);
        for _ in 1..BATCH {
            match rx.try_recv() {
                Ok(more) => segs.extend(more),
                Err(_) => break,
            }
        }
        write_all_vectored(&mut wr, &mut segs).await?;
        // A TLS session holds what it encrypted until flushed.
        wr.flush().await?;
    }
    Ok(())
}

async fn write_all_vectored(wr: &mut Writer, segs: &mut Vec<Bytes>) -> std::io::Result<()> {
    use bytes::Buf;
    // Segments before `i` are written.
    let mut i = 0;
    loop {
        // Empty segments are skipped, not offered: a write of only those
        // takes nothing, which would read as a dead socket.
        while segs.get(i).is_some_and(Bytes::is_empty) {
            i += 1;
        }
        let slices: Vec<std::io::IoSlice> =
            segs.iter().skip(i).take(MAX_IOVECS).map(|b| std::io::IoSlice::new(b)).collect();
        if slices.is_empty() {
            break;
        }
        let mut n = wr.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        for s in segs.iter_mut().skip(i) {
            if n == 0 {
                break;
            }
            let take = n.min(s.len());
            s.advance(take);
            n -= take;
        }
        while segs.get(i).is_some_and(Bytes::is_empty) {
            i += 1;
        }
    }
    segs.clear();
    Ok(())
}

//! One RPC connection driven by a task that owns the sans-IO
//! [`RpcCore`]: callers hand it calls through a channel and wait on a
//! oneshot; the task reads records, matches replies, runs the retransmit
//! timers and reconnects when the connection breaks. A separate writer task
//! does the socket writes (batched into one writev), so a server that stops
//! reading can never keep this task from reading replies.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use client_core::rpc::{success_reply, Completion, IncomingCall, Nanos, RpcCore, RpcError, RpcSettings};
use client_core::stats::Stats;
use parking_lot::Mutex;
use proto::framer::RecordDecoder;
use proto::rpc::opaque_auth;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

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
    /// Bytes reserved in the receive buffer before each read.
    pub read_buffer: usize,
    /// RPC-with-TLS on every connection made with these parameters.
    pub tls: Option<Arc<crate::tls::ClientTls>>,
}

/// A connected byte stream: TCP, or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

impl Stream {
    fn split(self) -> (Reader, Writer) {
        match self {
            Stream::Plain(s) => {
                let (r, w) = s.into_split();
                (Box::new(r), Box::new(w))
            }
            Stream::Tls(s) => {
                let (r, w) = tokio::io::split(*s);
                (Box::new(r), Box::new(w))
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
    reply: oneshot::Sender<Result<Bytes, RpcError>>,
}

/// A call the server made on this connection, and how to answer it.
pub struct Incoming {
    pub call: IncomingCall,
    pub reply: Responder,
}

/// Answers one incoming call on the connection it came on (or its
/// successor, after a reconnect).
pub struct Responder {
    xid: u32,
    out: mpsc::UnboundedSender<Vec<Bytes>>,
}

impl Responder {
    /// Sends the procedure's XDR-encoded results.
    pub fn send(self, results: Vec<Bytes>) {
        let _ = self.out.send(success_reply(self.xid, results));
    }
}

/// A handle to one connection's task. Cheap to clone; the task ends when
/// the last handle is dropped.
#[derive(Clone)]
pub struct Connection {
    calls: mpsc::UnboundedSender<Call>,
    stats: Arc<Mutex<Stats>>,
}

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
        let stats = Arc::new(Mutex::new(Stats::default()));
        let first_xid = rand_xid();
        let mut core = RpcCore::new(params.rpc.clone(), params.cred.clone(), first_xid);
        if incoming.is_some() {
            core.accept_incoming();
        }
        let (replies_tx, replies) = mpsc::unbounded_channel();
        let task = Task {
            params,
            core,
            waiters: HashMap::new(),
            calls: rx,
            stats: stats.clone(),
            epoch: Instant::now(),
            incoming,
            replies_tx,
            replies,
        };
        tokio::spawn(task.run(stream));
        Ok(Connection { calls: tx, stats })
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
        let (reply, rx) = oneshot::channel();
        self.calls
            .send(Call { name, prog, vers, proc_, args, reply })
            .map_err(|_| RpcError::Disconnected("connection closed".into()))?;
        rx.await.unwrap_or_else(|_| Err(RpcError::Disconnected("connection closed".into())))
    }

    /// The connection's counters so far.
    pub fn stats(&self) -> Stats {
        self.stats.lock().clone()
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
    core: RpcCore,
    waiters: HashMap<u32, oneshot::Sender<Result<Bytes, RpcError>>>,
    calls: mpsc::UnboundedReceiver<Call>,
    stats: Arc<Mutex<Stats>>,
    epoch: Instant,
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

impl Task {
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    async fn run(mut self, mut stream: Stream) {
        loop {
            let (rd, wr) = stream.split();
            match self.serve(rd, wr).await {
                Stop::Closed => return,
                Stop::Broken(why) => {
                    tracing::debug!(addr = %self.params.addr, "connection broken: {why}");
                    self.core.on_disconnect();
                    match self.reconnect().await {
                        Some(s) => stream = s,
                        None => {
                            let err = RpcError::Disconnected(format!("{}: {why}", self.params.addr));
                            let failed = self.core.fail_all(err, self.now());
                            self.complete(failed);
                            // Later calls get a fresh attempt each.
                            match self.wait_for_call_then_dial().await {
                                Some(s) => stream = s,
                                None => return,
                            }
                        }
                    }
                }
            }
        }
    }

    /// Retries with doubling pauses until `reconnect_timeout` has passed.
    async fn reconnect(&mut self) -> Option<Stream> {
        let give_up = Instant::now() + self.params.reconnect_timeout;
        let mut pause = Duration::from_millis(50);
        loop {
            match dial(&self.params).await {
                Ok(s) => return Some(s),
                Err(e) if Instant::now() + pause >= give_up => {
                    tracing::warn!(addr = %self.params.addr, "cannot reconnect: {e}");
                    return None;
                }
                Err(_) => {}
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(self.params.reconnect_max_pause);
        }
    }

    /// After giving up on a server: each new call gets one connect attempt,
    /// failing at once if the server is still gone.
    async fn wait_for_call_then_dial(&mut self) -> Option<Stream> {
        loop {
            let call = self.calls.recv().await?;
            match dial(&self.params).await {
                Ok(s) => {
                    self.start(call);
                    return Some(s);
                }
                Err(e) => {
                    let _ = call.reply.send(Err(RpcError::Disconnected(format!("{}: {e}", self.params.addr))));
                }
            }
        }
    }

    fn start(&mut self, c: Call) {
        let now = self.now();
        let xid = match c.name {
            Some(name) => self.core.call_named(name, c.prog, c.vers, c.proc_, c.args, now),
            None => self.core.call(c.prog, c.vers, c.proc_, c.args, now),
        };
        self.waiters.insert(xid, c.reply);
    }

    fn complete(&mut self, done: impl IntoIterator<Item = Completion>) {
        // Counters first, so a caller that reads them after its reply sees
        // its own call counted.
        *self.stats.lock() = self.core.stats().clone();
        for c in done {
            if let Some(w) = self.waiters.remove(&c.xid) {
                let _ = w.send(c.result);
            }
        }
    }

    async fn serve(&mut self, mut rd: Reader, wr: Writer) -> Stop {
        let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<Bytes>>();
        let mut writer = tokio::spawn(write_loop(wr, out_rx));
        let mut framer = RecordDecoder::new(self.params.max_record);
        let stop = loop {
            let now = self.now();
            while let Some(rec) = self.core.poll_transmit(now) {
                if out_tx.send(rec).is_err() {
                    break;
                }
            }
            let deadline = self.core.next_deadline().map(|d| self.epoch + Duration::from_nanos(d));
            let sleep =
                tokio::time::sleep_until(deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600)).into());
            let buf = framer.buffer_mut();
            buf.reserve(self.params.read_buffer);
            tokio::select! {
                call = self.calls.recv() => match call {
                    Some(c) => {
                        self.start(c);
                        // Take whatever else is queued before writing, so a
                        // burst of calls goes out in one writev.
                        while let Ok(c) = self.calls.try_recv() {
                            self.start(c);
                        }
                    }
                    None => break Stop::Closed,
                },
                r = rd.read_buf(buf) => match r {
                    Ok(0) => break Stop::Broken("server closed the connection".into()),
                    Err(e) => break Stop::Broken(e.to_string()),
                    Ok(_) => {
                        let mut done = Vec::new();
                        loop {
                            match framer.next_record() {
                                Ok(Some(rec)) => done.extend(self.core.on_record(rec, self.now())),
                                Ok(None) => break,
                                Err(e) => return self.abandon(writer, e.to_string()),
                            }
                        }
                        self.complete(done);
                        self.hand_over_incoming();
                    }
                },
                Some(rec) = self.replies.recv() => {
                    if out_tx.send(rec).is_err() {
                        break Stop::Broken("writer stopped".into());
                    }
                }
                _ = sleep, if deadline.is_some() => {
                    let failed = self.core.poll_timers(self.now());
                    self.complete(failed);
                }
                w = &mut writer => break Stop::Broken(match w {
                    Ok(Err(e)) => e.to_string(),
                    _ => "writer stopped".into(),
                }),
            }
        };
        writer.abort();
        stop
    }

    fn hand_over_incoming(&mut self) {
        while let Some(call) = self.core.poll_incoming() {
            let Some(to) = &self.incoming else { continue };
            let reply = Responder { xid: call.xid, out: self.replies_tx.clone() };
            let _ = to.send(Incoming { call, reply });
        }
    }

    fn abandon(&mut self, writer: tokio::task::JoinHandle<std::io::Result<()>>, why: String) -> Stop {
        writer.abort();
        Stop::Broken(why)
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
    let mut i = 0;
    while i < segs.len() {
        let slices: Vec<std::io::IoSlice> = segs[i..].iter().take(512).map(|b| std::io::IoSlice::new(b)).collect();
        let mut n = wr.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let s = &mut segs[i];
            let take = n.min(s.len());
            s.advance(take);
            n -= take;
            if s.is_empty() {
                i += 1;
            }
        }
        while i < segs.len() && segs[i].is_empty() {
            i += 1;
        }
    }
    segs.clear();
    Ok(())
}

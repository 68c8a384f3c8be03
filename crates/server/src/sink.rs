//! A connection's outgoing byte stream, written by whichever thread has a
//! reply: the connection's own task for a request it ran inline, the
//! worker thread that finished a blocking one, or the core sending an
//! NFSv4.1 callback. No hand-off to a writer task in the common case.
//!
//! A reply is queued, and the thread that finds nobody writing becomes
//! the writer: it takes everything queued, sends it with a non-blocking
//! `writev` outside the lock, and goes on with whatever other threads
//! queued meanwhile before it lets go. So replies never interleave, a
//! thread with a reply never waits for another's system call (with 16
//! WRITEs in flight, threads spinning on a lock held across `writev`
//! were the largest wait of the worker threads), and replies that finish
//! together go out in one `writev`. What the socket cannot take (a slow
//! client, a 1 MiB READ larger than the send buffer) stays queued, and the
//! connection's flusher task sends it when the socket drains; later
//! replies queue behind it, keeping each reply whole.
//!
//! A READ's data may be a file region rather than bytes: it is sent with
//! `sendfile` from the page cache, so the server never copies it through
//! user space.
//!
//! A reply carries its request's in-flight permit until its last byte is
//! handed to the kernel, so a client that stops reading stops the reader
//! (at `max_in_flight_per_connection`) instead of growing our memory.
//!
//! On a TLS connection (RFC 9289) the bytes must go through the TLS
//! session, which one task drives: replies are queued and the flusher
//! encrypts and sends them, reading file regions into memory first.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::Arc;

use std::os::fd::AsFd;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use tokio::io::Interest;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{Notify, OwnedSemaphorePermit};

use crate::Metrics;

/// XDR padding.
static ZEROS: [u8; 3] = [0; 3];
/// iovecs handed to one writev call (Linux IOV_MAX is 1024).
const MAX_IOVECS: usize = 512;

/// Part of the outgoing stream.
pub enum Seg {
    Bytes(Bytes),
    /// `len` bytes of a file from `offset`.
    File {
        fd: Arc<dyn AsFd + Send + Sync>,
        offset: u64,
        len: usize,
    },
}

impl Seg {
    fn len(&self) -> usize {
        match self {
            Seg::Bytes(b) => b.len(),
            Seg::File { len, .. } => *len,
        }
    }
}

struct Queued {
    seg: Seg,
    /// Held only to be dropped: released when this, the reply's last
    /// segment, has been written.
    _permit: Option<OwnedSemaphorePermit>,
}

/// Who sends the queue. Only the owner writes to the socket.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Writer {
    /// Nobody: the queue is empty (or the connection is broken).
    #[default]
    Idle,
    /// A thread with a reply, until the queue is empty or the socket full.
    Sender,
    /// The flusher task, waiting for room in the socket.
    Flusher,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    writer: Writer,
    queued_bytes: usize,
    /// A write failed: the connection is gone and replies are dropped.
    broken: bool,
    /// The reader has finished and every request has replied: the flusher
    /// shuts the socket down once the queue is empty.
    closing: bool,
}

/// A TLS connection's sending half, taken by its flusher.
pub type TlsWriter = tokio::io::WriteHalf<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>;

/// Bytes of a file region read per TLS write.
const TLS_FILE_CHUNK: usize = 256 << 10;

enum Out {
    Plain(OwnedWriteHalf),
    Tls(Mutex<Option<TlsWriter>>),
}

pub struct ReplySink {
    out: Out,
    st: Mutex<State>,
    wake: Notify,
    metrics: Arc<Metrics>,
    peer: std::net::SocketAddr,
}

/// Writes as much of `segs` as the socket takes now; returns how many
/// bytes went out. `segs` is advanced past what was written.
fn write_some(wr: &OwnedWriteHalf, segs: &mut VecDeque<Queued>) -> io::Result<usize> {
    let mut total = 0;
    loop {
        while segs.front().is_some_and(|q| q.seg.len() == 0) {
            segs.pop_front();
        }
        let Some(front) = segs.front_mut() else {
            return Ok(total);
        };
        let result = match &mut front.seg {
            Seg::File { fd, offset, len } => send_file(wr, fd.as_fd(), offset, len),
            Seg::Bytes(_) => {
                let slices: Vec<IoSlice<'_>> = segs
                    .iter()
                    .take(MAX_IOVECS)
                    .map_while(|q| match &q.seg {
                        Seg::Bytes(b) => Some(IoSlice::new(b)),
                        Seg::File { .. } => None,
                    })
                    .collect();
                wr.try_write_vectored(&slices).map(|n| {
                    advance(segs, n);
                    n
                })
            }
        };
        match result {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(total),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Drops `n` written bytes from the front of `segs` (all of them bytes).
fn advance(segs: &mut VecDeque<Queued>, mut n: usize) {
    while n > 0 {
        let Some(Queued { seg: Seg::Bytes(front), .. }) = segs.front_mut() else { break };
        let take = n.min(front.len());
        front.advance(take);
        n -= take;
        if front.is_empty() {
            // Dropping it releases the permit of a finished reply.
            segs.pop_front();
        }
    }
}

/// One sendfile of a file region into the socket, advancing the region.
/// A file that has become shorter since the reply was built (truncated
/// meanwhile) is made up with zeros, so the record keeps the length its
/// header announced.
fn send_file(
    wr: &OwnedWriteHalf,
    fd: std::os::fd::BorrowedFd<'_>,
    offset: &mut u64,
    len: &mut usize,
) -> io::Result<usize> {
    let sock: &tokio::net::TcpStream = wr.as_ref();
    let n = sock.try_io(Interest::WRITABLE, || {
        let mut off = *offset;
        let n = rustix::fs::sendfile(sock, fd, Some(&mut off), *len).map_err(io::Error::from)?;
        if n > 0 {
            return Ok(n);
        }
        // End of file before the region's end: send zeros instead.
        let zeros = vec![0u8; (*len).min(64 << 10)];
        rustix::io::write(sock, &zeros).map_err(io::Error::from)
    })?;
    *offset += n as u64;
    *len -= n;
    Ok(n)
}

/// A file region's bytes in memory, followed by their XDR padding: what a
/// reply carries after it when it does not go by sendfile. A file that
/// became shorter is made up with zeros, as for sendfile.
pub fn region_bytes(region: &vfs::FileRegion) -> io::Result<[Bytes; 2]> {
    let len = region.len as usize;
    let mut buf = vfs::uninit::pread_up_to(region.fd.as_fd(), region.offset, len)?;
    buf.resize(len, 0);
    let pad = (4 - len % 4) % 4;
    Ok([Bytes::from(buf), Bytes::from_static(&ZEROS[..pad])])
}

/// A reply record as the sink sends it: record marking, the encoded
/// segments, then the file tail and its padding. `None` when the record
/// would exceed one fragment (a tail is only set for READs, far smaller).
pub fn framed(reply: Vec<Bytes>, tail: Option<vfs::FileRegion>) -> Option<Vec<Seg>> {
    let Some(tail) = tail else {
        return Some(proto::framer::frame_segments(reply).into_iter().map(Seg::Bytes).collect());
    };
    let len = tail.len as usize;
    let pad = (4 - len % 4) % 4;
    let total = reply.iter().map(Bytes::len).sum::<usize>() + len + pad;
    if total > proto::framer::MAX_FRAGMENT {
        return None;
    }
    let mut out = Vec::with_capacity(reply.len() + 3);
    out.push(Seg::Bytes(Bytes::copy_from_slice(&proto::framer::record_header(total, true))));
    out.extend(reply.into_iter().map(Seg::Bytes));
    out.push(Seg::File { fd: tail.fd, offset: tail.offset, len });
    if pad > 0 {
        out.push(Seg::Bytes(Bytes::from_static(&ZEROS[..pad])));
    }
    Some(out)
}

impl ReplySink {
    /// Nothing queued and nobody writing: a reply sent now goes straight
    /// into the socket.
    pub fn is_idle(&self) -> bool {
        let st = self.st.lock();
        st.queue.is_empty() && st.writer == Writer::Idle
    }

    pub fn new(wr: OwnedWriteHalf, metrics: Arc<Metrics>, peer: std::net::SocketAddr) -> Arc<ReplySink> {
        let out = Out::Plain(wr);
        Arc::new(ReplySink { out, st: Mutex::new(State::default()), wake: Notify::new(), metrics, peer })
    }

    /// A sink whose bytes go through a TLS session.
    pub fn new_tls(wr: TlsWriter, metrics: Arc<Metrics>, peer: std::net::SocketAddr) -> Arc<ReplySink> {
        let out = Out::Tls(Mutex::new(Some(wr)));
        Arc::new(ReplySink { out, st: Mutex::new(State::default()), wake: Notify::new(), metrics, peer })
    }

    /// Sends one framed reply (or callback); `permit` is released once it
    /// is all written. false when the connection is gone.
    pub fn send(&self, segs: Vec<Seg>, permit: Option<OwnedSemaphorePermit>) -> bool {
        let mut st = self.st.lock();
        if st.broken {
            return false;
        }
        let n = segs.len();
        let mut permit = permit;
        for (i, seg) in segs.into_iter().enumerate() {
            st.queued_bytes += seg.len();
            let permit = if i + 1 == n { permit.take() } else { None };
            st.queue.push_back(Queued { seg, _permit: permit });
        }
        let wr = match &self.out {
            Out::Plain(wr) => wr,
            Out::Tls(_) => {
                self.wake.notify_one();
                return true;
            }
        };
        if st.writer != Writer::Idle {
            // The thread writing sends this reply too before it lets go, or
            // it is queued behind one the flusher is still sending.
            return true;
        }
        st.writer = Writer::Sender;
        loop {
            let mut batch = std::mem::take(&mut st.queue);
            drop(st);
            let result = write_some(wr, &mut batch);
            st = self.st.lock();
            let written = match result {
                Ok(written) => written,
                Err(e) => {
                    tracing::debug!(peer = %self.peer, "write failed: {e}");
                    Self::break_(&mut st);
                    return false;
                }
            };
            st.queued_bytes -= written;
            self.metrics.bytes_sent.inc_by(written as u64);
            if !batch.is_empty() {
                // The socket is full: the flusher sends the rest, and what
                // was queued meanwhile after it, once there is room.
                batch.append(&mut st.queue);
                st.queue = batch;
                st.writer = Writer::Flusher;
                self.metrics.replies_deferred.inc();
                self.wake.notify_one();
                return true;
            }
            if st.queue.is_empty() {
                // Keep the emptied queue's allocation for the next reply.
                st.queue = batch;
                st.writer = Writer::Idle;
                if st.closing {
                    self.wake.notify_one();
                }
                return true;
            }
            // Other threads queued replies while this one wrote: send them.
        }
    }

    /// Bytes waiting for the socket.
    pub fn queued_bytes(&self) -> usize {
        self.st.lock().queued_bytes
    }

    fn break_(st: &mut State) {
        st.broken = true;
        st.writer = Writer::Idle;
        // Releases the queued replies' permits: their requests are over.
        st.queue.clear();
        st.queued_bytes = 0;
    }

    /// Tells the flusher that nothing more will be sent: it shuts the
    /// socket's sending side down once the queue is empty.
    pub fn close(&self) {
        self.st.lock().closing = true;
        self.wake.notify_one();
    }

    /// The connection's flusher: sends what [`ReplySink::send`] could not,
    /// whenever the socket has room, until closed.
    pub async fn flush_loop(self: Arc<Self>) {
        let wr = match &self.out {
            Out::Plain(wr) => wr,
            Out::Tls(w) => {
                let Some(w) = w.lock().take() else { return };
                return self.flush_tls(w).await;
            }
        };
        loop {
            self.wake.notified().await;
            loop {
                let mut batch = {
                    let mut st = self.st.lock();
                    if st.broken {
                        return;
                    }
                    match st.writer {
                        // A sender is writing; it hands over if the socket
                        // fills up (this wake-up was an earlier one's).
                        Writer::Sender => break,
                        Writer::Idle if st.queue.is_empty() => {
                            if st.closing {
                                drop(st);
                                self.shutdown();
                                return;
                            }
                            break;
                        }
                        Writer::Idle | Writer::Flusher => st.writer = Writer::Flusher,
                    }
                    std::mem::take(&mut st.queue)
                };
                let result = write_some(wr, &mut batch);
                {
                    let mut st = self.st.lock();
                    match result {
                        Ok(written) => {
                            st.queued_bytes -= written;
                            self.metrics.bytes_sent.inc_by(written as u64);
                        }
                        Err(e) => {
                            tracing::debug!(peer = %self.peer, "write failed: {e}");
                            Self::break_(&mut st);
                            return;
                        }
                    }
                    batch.append(&mut st.queue);
                    st.queue = batch;
                    if st.queue.is_empty() {
                        st.writer = Writer::Idle;
                        if st.closing {
                            drop(st);
                            self.shutdown();
                            return;
                        }
                        break;
                    }
                }
                if wr.writable().await.is_err() {
                    Self::break_(&mut self.st.lock());
                    return;
                }
            }
        }
    }

    /// The flusher of a TLS connection: everything queued goes through the
    /// session, in order; a reply's permit is released once it is written.
    async fn flush_tls(&self, mut wr: TlsWriter) {
        use tokio::io::AsyncWriteExt;
        loop {
            let (batch, closing) = {
                let mut st = self.st.lock();
                if st.broken {
                    return;
                }
                (st.queue.drain(..).collect::<Vec<Queued>>(), st.closing)
            };
            if batch.is_empty() && closing {
                // close_notify, then the end of the stream.
                let _ = wr.shutdown().await;
                return;
            }
            if batch.is_empty() {
                self.wake.notified().await;
                continue;
            }
            let mut written = 0;
            let mut failed = None;
            for q in batch {
                if failed.is_none() {
                    let r = match &q.seg {
                        Seg::Bytes(b) => wr.write_all(b).await,
                        Seg::File { fd, offset, len } => write_region(&mut wr, fd.as_fd(), *offset, *len).await,
                    };
                    match r {
                        Ok(()) => written += q.seg.len(),
                        Err(e) => failed = Some(e),
                    }
                }
                // Dropping `q` releases a finished reply's permit.
            }
            if failed.is_none() {
                if let Err(e) = wr.flush().await {
                    failed = Some(e);
                }
            }
            let mut st = self.st.lock();
            st.queued_bytes = st.queued_bytes.saturating_sub(written);
            self.metrics.bytes_sent.inc_by(written as u64);
            if let Some(e) = failed {
                tracing::debug!(peer = %self.peer, "TLS write failed: {e}");
                Self::break_(&mut st);
                return;
            }
        }
    }

    fn shutdown(&self) {
        let Out::Plain(wr) = &self.out else { return };
        // SHUT_WR: the client sees the end of our replies; the read side
        // is already finished.
        let fd = std::os::fd::AsRawFd::as_raw_fd(wr.as_ref());
        // SAFETY: `fd` is the connection's socket, owned by `self.wr` and
        // open for as long as `self` lives; shutdown(2) does not close it.
        unsafe {
            libc::shutdown(fd, libc::SHUT_WR);
        }
    }
}

/// Sends `len` bytes of a file from `offset` through the TLS session,
/// reading them in chunks (no sendfile: the data must be encrypted here).
/// A file that became shorter is made up with zeros, as for sendfile.
async fn write_region(wr: &mut TlsWriter, fd: std::os::fd::BorrowedFd<'_>, offset: u64, len: usize) -> io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut buf = vec![0u8; len.min(TLS_FILE_CHUNK)];
    let mut done = 0;
    while done < len {
        let want = (len - done).min(buf.len());
        let n = rustix::io::pread(fd, &mut buf[..want], offset + done as u64).map_err(io::Error::from)?;
        if n == 0 {
            buf[..want].fill(0);
            wr.write_all(&buf[..want]).await?;
            done += want;
            continue;
        }
        wr.write_all(&buf[..n]).await?;
        done += n;
    }
    Ok(())
}

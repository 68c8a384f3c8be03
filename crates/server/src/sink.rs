//! A connection's outgoing byte stream, written by whichever thread has a
//! reply: the connection's own task for a request it ran inline, the
//! worker thread that finished a blocking one, or the core sending an
//! NFSv4.1 callback. No hand-off to a writer task in the common case.
//!
//! A reply is written at once with a non-blocking `writev` while the
//! sink's lock is held, so replies never interleave; this is the one lock
//! held across a system call, and that call never waits. What the socket
//! cannot take (a slow client, a 1 MiB READ larger than the send buffer)
//! is queued, and the connection's flusher task sends it when the socket
//! drains. Later replies queue behind it, keeping each reply whole.
//!
//! A reply carries its request's in-flight permit until its last byte is
//! handed to the kernel, so a client that stops reading stops the reader
//! (at `max_in_flight_per_connection`) instead of growing our memory.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{Notify, OwnedSemaphorePermit};

use crate::Metrics;

/// iovecs handed to one writev call (Linux IOV_MAX is 1024).
const MAX_IOVECS: usize = 512;

struct Queued {
    seg: Bytes,
    /// Held only to be dropped: released when this, the reply's last
    /// segment, has been written.
    _permit: Option<OwnedSemaphorePermit>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    queued_bytes: usize,
    /// A write failed: the connection is gone and replies are dropped.
    broken: bool,
    /// The reader has finished and every request has replied: the flusher
    /// shuts the socket down once the queue is empty.
    closing: bool,
}

pub struct ReplySink {
    wr: OwnedWriteHalf,
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
        while segs.front().is_some_and(|q| q.seg.is_empty()) {
            segs.pop_front();
        }
        if segs.is_empty() {
            return Ok(total);
        }
        let slices: Vec<IoSlice<'_>> = segs.iter().take(MAX_IOVECS).map(|q| IoSlice::new(&q.seg)).collect();
        let mut n = match wr.try_write_vectored(&slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(total),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n;
        while n > 0 {
            let Some(front) = segs.front_mut() else { break };
            let take = n.min(front.seg.len());
            front.seg.advance(take);
            n -= take;
            if front.seg.is_empty() {
                // Dropping it releases the permit of a finished reply.
                segs.pop_front();
            }
        }
    }
}

impl ReplySink {
    pub fn new(wr: OwnedWriteHalf, metrics: Arc<Metrics>, peer: std::net::SocketAddr) -> Arc<ReplySink> {
        Arc::new(ReplySink { wr, st: Mutex::new(State::default()), wake: Notify::new(), metrics, peer })
    }

    /// Sends one framed reply (or callback); `permit` is released once it
    /// is all written. false when the connection is gone.
    pub fn send(&self, segs: Vec<Bytes>, permit: Option<OwnedSemaphorePermit>) -> bool {
        let mut st = self.st.lock();
        if st.broken {
            return false;
        }
        let was_empty = st.queue.is_empty();
        let n = segs.len();
        let mut permit = permit;
        for (i, seg) in segs.into_iter().enumerate() {
            st.queued_bytes += seg.len();
            let permit = if i + 1 == n { permit.take() } else { None };
            st.queue.push_back(Queued { seg, _permit: permit });
        }
        if !was_empty {
            // Behind a reply the flusher is still sending.
            return true;
        }
        match write_some(&self.wr, &mut st.queue) {
            Ok(written) => {
                st.queued_bytes -= written;
                self.metrics.bytes_sent.fetch_add(written as u64, Relaxed);
                if !st.queue.is_empty() {
                    self.metrics.replies_deferred.fetch_add(1, Relaxed);
                    self.wake.notify_one();
                }
                true
            }
            Err(e) => {
                tracing::debug!(peer = %self.peer, "write failed: {e}");
                Self::break_(&mut st);
                false
            }
        }
    }

    /// Bytes waiting for the socket.
    pub fn queued_bytes(&self) -> usize {
        self.st.lock().queued_bytes
    }

    fn break_(st: &mut State) {
        st.broken = true;
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
        loop {
            self.wake.notified().await;
            loop {
                {
                    let mut st = self.st.lock();
                    if st.broken {
                        return;
                    }
                    match write_some(&self.wr, &mut st.queue) {
                        Ok(written) => {
                            st.queued_bytes -= written;
                            self.metrics.bytes_sent.fetch_add(written as u64, Relaxed);
                        }
                        Err(e) => {
                            tracing::debug!(peer = %self.peer, "write failed: {e}");
                            Self::break_(&mut st);
                            return;
                        }
                    }
                    if st.queue.is_empty() {
                        if st.closing {
                            drop(st);
                            self.shutdown();
                            return;
                        }
                        break;
                    }
                }
                if self.wr.writable().await.is_err() {
                    Self::break_(&mut self.st.lock());
                    return;
                }
            }
        }
    }

    fn shutdown(&self) {
        // SHUT_WR: the client sees the end of our replies; the read side
        // is already finished.
        let fd = std::os::fd::AsRawFd::as_raw_fd(self.wr.as_ref());
        // SAFETY: `fd` is the connection's socket, owned by `self.wr` and
        // open for as long as `self` lives; shutdown(2) does not close it.
        unsafe {
            libc::shutdown(fd, libc::SHUT_WR);
        }
    }
}

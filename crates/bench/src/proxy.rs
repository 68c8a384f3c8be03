//! A TCP proxy that adds a fixed delay in each direction, to emulate network
//! latency on loopback where netem is not available.
//!
//! Every chunk read is stamped with its arrival time and written out no
//! earlier than arrival + delay, in order. The delay is a property of when
//! bytes arrive, not of how many chunks are queued, so a pipelined stream of
//! small RPCs sees about one delay each, as on a real link, instead of the
//! delays adding up. Buffering is bounded: when the far side does not keep
//! up, the proxy stops reading and TCP flow control pushes back on the
//! sender.
//!
//! The proxy runs on the tokio runtime it was started from.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// Bytes held per direction and connection. In flight data is bounded by
/// this, so the proxy caps bandwidth at about `MAX_QUEUED / delay`
/// (16 MiB / 10 ms = 1.6 GB/s): well above what the workloads reach, so the
/// proxy adds latency without becoming a bandwidth limit.
const MAX_QUEUED: usize = 16 << 20;
const READ_CHUNK: usize = 64 << 10;

/// Current delays in nanoseconds, read once per chunk on arrival.
#[derive(Default)]
struct Delays {
    to_server: AtomicU64,
    to_client: AtomicU64,
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

pub struct DelayProxy {
    addr: SocketAddr,
    delays: Arc<Delays>,
    stop: Option<oneshot::Sender<()>>,
    accept: Option<JoinHandle<()>>,
}

impl DelayProxy {
    /// Listens on 127.0.0.1 (an ephemeral port); every accepted connection
    /// gets its own connection to `upstream`. Must be called inside a tokio
    /// runtime, which then runs the proxy.
    pub async fn start(upstream: SocketAddr, to_server: Duration, to_client: Duration) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let delays = Arc::new(Delays::default());
        let (stop, stopped) = oneshot::channel();
        let accept = tokio::spawn(accept_loop(listener, upstream, delays.clone(), stopped));
        let proxy = DelayProxy { addr, delays, stop: Some(stop), accept: Some(accept) };
        proxy.set_delay(to_server, to_client);
        Ok(proxy)
    }

    /// Where clients connect instead of the upstream server.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// New delays for every byte that arrives from now on, on existing and
    /// new connections; bytes already queued keep the delay they arrived with.
    pub fn set_delay(&self, to_server: Duration, to_client: Duration) {
        self.delays.to_server.store(nanos(to_server), Ordering::Relaxed);
        self.delays.to_client.store(nanos(to_client), Ordering::Relaxed);
    }

    /// A round-trip delay split the way `Target::set_delay` describes it:
    /// half each way, or all of it towards the server when `one_way`.
    pub fn set_rtt(&self, rtt: Duration, one_way: bool) {
        if one_way {
            self.set_delay(rtt, Duration::ZERO);
        } else {
            self.set_delay(rtt / 2, rtt - rtt / 2);
        }
    }

    /// Stops accepting and closes every proxied connection, returning once
    /// all of the proxy's tasks have ended.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(accept) = self.accept.take() {
            let _ = accept.await;
        }
    }
}

impl Drop for DelayProxy {
    /// Without `shutdown`, aborting the accept task drops its `JoinSet`,
    /// which aborts every connection task: nothing outlives the proxy.
    fn drop(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    delays: Arc<Delays>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            // Reap finished connections so the set does not grow forever.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    conns.spawn(serve(client, upstream, delays.clone()));
                }
                Err(e) => {
                    // Out of file descriptors and the like: transient, and
                    // retrying at once would spin.
                    tracing::warn!("delay proxy: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
    conns.shutdown().await;
}

async fn serve(client: TcpStream, upstream: SocketAddr, delays: Arc<Delays>) {
    let server = match TcpStream::connect(upstream).await {
        Ok(s) => s,
        Err(e) => {
            // Dropping `client` closes it, which is what the client would
            // see if it had connected to the dead server directly.
            tracing::warn!("delay proxy: connect {upstream}: {e}");
            return;
        }
    };
    // The delay must be the only added latency: no Nagle batching.
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_rd, client_wr) = client.into_split();
    let (server_rd, server_wr) = server.into_split();
    // An error either way ends both directions: dropping the halves closes
    // both sockets, so each peer sees the failure as its own connection
    // closing. A clean EOF only half-closes, and the other direction goes on.
    let up = pump(client_rd, server_wr, &delays.to_server);
    let down = pump(server_rd, client_wr, &delays.to_client);
    let _ = tokio::try_join!(up, down);
}

/// Copies `from` to `to`, holding each chunk until its arrival time plus the
/// delay current at arrival, then half-closes `to` on EOF.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: &AtomicU64) -> std::io::Result<()> {
    let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut queued = 0usize;
    let mut buf = vec![0u8; READ_CHUNK];
    let mut eof = false;
    loop {
        // Write whatever is due, oldest first; the write blocking on a slow
        // peer is what stops reading.
        while let Some((due, _)) = queue.front() {
            if *due > Instant::now() {
                break;
            }
            let (_, chunk) = queue.pop_front().expect("front exists");
            queued -= chunk.len();
            to.write_all(&chunk).await?;
        }
        if eof && queue.is_empty() {
            to.shutdown().await?;
            return Ok(());
        }
        let head = queue.front().map(|(due, _)| *due);
        tokio::select! {
            // Reading is cancel-safe: a chunk is either read and returned
            // here, or not read at all.
            n = from.read(&mut buf), if !eof && queued < MAX_QUEUED => {
                let n = n?;
                if n == 0 {
                    eof = true;
                    continue;
                }
                let d = Duration::from_nanos(delay.load(Ordering::Relaxed));
                if d.is_zero() && queue.is_empty() {
                    // Fast path: nothing to wait for, no copy.
                    to.write_all(&buf[..n]).await?;
                } else {
                    queued += n;
                    queue.push_back((Instant::now() + d, buf[..n].to_vec()));
                }
            }
            _ = tokio::time::sleep_until(head.unwrap_or_else(Instant::now)), if head.is_some() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant as StdInstant;

    /// An upstream that echoes each connection and half-closes on EOF.
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let _ = s.set_nodelay(true);
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                    let _ = w.shutdown().await;
                });
            }
        });
        addr
    }

    async fn ping(s: &mut TcpStream) -> Duration {
        let t = StdInstant::now();
        s.write_all(b"ping").await.unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"ping");
        t.elapsed()
    }

    /// The fastest of a few pings: the delay is a lower bound on every ping,
    /// and a loaded machine can only make some of them slower.
    async fn best_ping(s: &mut TcpStream, times: usize) -> (Duration, Duration) {
        let mut all = Vec::new();
        for _ in 0..times {
            all.push(ping(s).await);
        }
        (*all.iter().min().unwrap(), *all.iter().max().unwrap())
    }

    #[tokio::test]
    async fn round_trip_matches_the_configured_delay() {
        let proxy =
            DelayProxy::start(echo_server().await, Duration::from_millis(5), Duration::from_millis(5)).await.unwrap();
        let mut s = TcpStream::connect(proxy.local_addr()).await.unwrap();
        let (best, _) = best_ping(&mut s, 5).await;
        assert!(best >= Duration::from_millis(10), "{best:?}");
        assert!(best < Duration::from_millis(30), "{best:?}");
        proxy.shutdown().await;
    }

    #[tokio::test]
    async fn pipelined_writes_do_not_accumulate_delay() {
        let rtt = Duration::from_millis(20);
        let proxy = DelayProxy::start(echo_server().await, rtt / 2, rtt / 2).await.unwrap();
        let s = TcpStream::connect(proxy.local_addr()).await.unwrap();
        s.set_nodelay(true).unwrap();
        let (mut r, mut w) = s.into_split();
        const N: usize = 200;
        let t = StdInstant::now();
        let writer = tokio::spawn(async move {
            for i in 0..N {
                w.write_all(&[i as u8; 16]).await.unwrap();
                if i % 20 == 0 {
                    // Spread the messages out so they arrive as many chunks.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            w
        });
        let mut got = vec![0u8; N * 16];
        r.read_exact(&mut got).await.unwrap();
        let took = t.elapsed();
        assert!(got.chunks(16).enumerate().all(|(i, c)| c.iter().all(|b| *b == i as u8)), "order kept");
        assert!(took >= rtt, "{took:?}");
        // Accumulated delays would take at least 10 chunks × 20 ms.
        assert!(took < rtt * 5, "{took:?}");
        drop(writer.await.unwrap());
        proxy.shutdown().await;
    }

    #[tokio::test]
    async fn eof_propagates_both_ways() {
        let proxy =
            DelayProxy::start(echo_server().await, Duration::from_millis(2), Duration::from_millis(2)).await.unwrap();
        let mut s = TcpStream::connect(proxy.local_addr()).await.unwrap();
        s.write_all(b"last words").await.unwrap();
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
        read.expect("EOF reached the client").unwrap();
        assert_eq!(rest, b"last words");
        proxy.shutdown().await;
    }

    #[tokio::test]
    async fn upstream_close_and_dead_upstream_close_the_client() {
        // An upstream that accepts and hangs up at once.
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let up = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                drop(s);
            }
        });
        let proxy = DelayProxy::start(up, Duration::from_millis(1), Duration::from_millis(1)).await.unwrap();
        let mut s = TcpStream::connect(proxy.local_addr()).await.unwrap();
        let mut b = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.expect("closed in time");
        assert!(matches!(n, Ok(0) | Err(_)));
        proxy.shutdown().await;

        // Nothing listens here any more once the listener is dropped.
        let dead = TcpListener::bind(("127.0.0.1", 0)).await.unwrap().local_addr().unwrap();
        let proxy = DelayProxy::start(dead, Duration::ZERO, Duration::ZERO).await.unwrap();
        let mut s = TcpStream::connect(proxy.local_addr()).await.unwrap();
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.expect("closed in time");
        assert!(matches!(n, Ok(0) | Err(_)));
    }

    #[tokio::test]
    async fn delay_changes_apply_to_later_data() {
        let proxy = DelayProxy::start(echo_server().await, Duration::ZERO, Duration::ZERO).await.unwrap();
        let mut s = TcpStream::connect(proxy.local_addr()).await.unwrap();
        let (fast, _) = best_ping(&mut s, 5).await;
        assert!(fast < Duration::from_millis(5), "zero delay adds nothing noticeable: {fast:?}");
        proxy.set_rtt(Duration::from_millis(20), false);
        let (best, _) = best_ping(&mut s, 3).await;
        assert!(best >= Duration::from_millis(20) && best < Duration::from_millis(45), "{best:?}");
        proxy.set_rtt(Duration::from_millis(10), true);
        let (best, _) = best_ping(&mut s, 3).await;
        assert!(best >= Duration::from_millis(10) && best < Duration::from_millis(35), "{best:?}");
        proxy.set_delay(Duration::ZERO, Duration::ZERO);
        let (best, _) = best_ping(&mut s, 3).await;
        assert!(best < Duration::from_millis(5), "{best:?}");
    }

    #[tokio::test]
    async fn shutdown_closes_open_connections() {
        let proxy = DelayProxy::start(echo_server().await, Duration::ZERO, Duration::ZERO).await.unwrap();
        let mut s = TcpStream::connect(proxy.local_addr()).await.unwrap();
        ping(&mut s).await;
        proxy.shutdown().await;
        let mut b = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await.expect("closed in time");
        assert!(matches!(n, Ok(0) | Err(_)));
    }
}

//! One client connection: read records, run each on a worker thread as
//! soon as it is complete, and write replies in the order they finish.

use std::io::IoSlice;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};

use proto::framer::{frame_segments, RecordDecoder};
use server_core::PeerInfo;

use crate::Shared;

/// Replies gathered into one vectored write when several are ready.
const MAX_REPLIES_PER_WRITE: usize = 64;
/// iovecs handed to one writev call (Linux IOV_MAX is 1024).
const MAX_IOVECS: usize = 512;

pub async fn serve(stream: TcpStream, mut peer: PeerInfo, shared: Arc<Shared>) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!(peer = %peer.addr, "TCP_NODELAY failed: {e}");
    }
    let (mut rd, wr) = stream.into_split();
    let limit = shared.settings.max_in_flight_per_connection;
    let (tx, rx) = mpsc::channel::<Vec<Bytes>>(limit);
    let writer = tokio::spawn(write_loop(wr, rx, shared.clone(), peer.addr));
    let conn_id = shared.connections.register(tx.clone());
    peer.conn = conn_id;
    let permits = Arc::new(Semaphore::new(limit));
    let peer = Arc::new(peer);
    let mut decoder = RecordDecoder::new(shared.settings.max_record_size);
    let idle = Duration::from_secs(shared.settings.idle_timeout_secs);
    let mut shutdown = shared.shutdown.subscribe();

    'conn: loop {
        // Read straight into the framer's buffer: a single-fragment record
        // then reaches the handler as a slice of it, never copied.
        let buf = decoder.buffer_mut();
        buf.reserve(shared.settings.read_buffer_size);
        let n = tokio::select! {
            r = tokio::time::timeout(idle, rd.read_buf(buf)) => match r {
                Ok(Ok(0)) => break,
                Ok(Ok(n)) => n,
                Ok(Err(e)) => {
                    tracing::debug!(peer = %peer.addr, "read failed: {e}");
                    break;
                }
                Err(_) => {
                    tracing::info!(peer = %peer.addr, "closing idle connection");
                    break;
                }
            },
            _ = shutdown.changed() => break,
        };
        shared.metrics.bytes_received.fetch_add(n as u64, Relaxed);
        loop {
            let record = match decoder.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    shared.metrics.bad_records.fetch_add(1, Relaxed);
                    tracing::warn!(peer = %peer.addr, "closing connection: {e}");
                    break 'conn;
                }
            };
            // Backpressure: with `limit` requests outstanding the reader
            // stops here, so TCP flow control slows the client down.
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break 'conn,
                },
                _ = shutdown.changed() => break 'conn,
            };
            let (shared, peer, tx) = (shared.clone(), peer.clone(), tx.clone());
            shared.metrics.in_flight.fetch_add(1, Relaxed);
            tokio::spawn(async move {
                let start = Instant::now();
                let core = shared.core.clone();
                let peer2 = peer.clone();
                let outcome = tokio::task::spawn_blocking(move || core.handle(record, &peer2)).await;
                match outcome {
                    Ok(out) => {
                        shared.metrics.record(out.label, out.ok, start.elapsed());
                        if let Some(reply) = out.reply {
                            let _ = tx.send(frame_segments(reply)).await;
                        } else if out.ok {
                            // Nothing to send: a client's reply to one of
                            // our callbacks, or a retransmission of a call
                            // still running (the first copy's reply answers).
                        } else {
                            shared.metrics.bad_records.fetch_add(1, Relaxed);
                            tracing::warn!(peer = %peer.addr, label = out.label, "request dropped without reply");
                        }
                    }
                    Err(e) => tracing::error!(peer = %peer.addr, "request handler failed: {e}"),
                }
                shared.metrics.in_flight.fetch_sub(1, Relaxed);
                shared.idle.notify_waiters();
                drop(permit);
            });
        }
    }
    // Requests already running still hold senders; the writer ends when the
    // last of them has sent its reply.
    shared.connections.unregister(conn_id);
    drop(tx);
    let _ = writer.await;
}

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Vec<Bytes>>,
    shared: Arc<Shared>,
    peer: std::net::SocketAddr,
) {
    let mut batch: Vec<Bytes> = Vec::new();
    while let Some(first) = rx.recv().await {
        batch.clear();
        batch.extend(first);
        for _ in 1..MAX_REPLIES_PER_WRITE {
            match rx.try_recv() {
                Ok(more) => batch.extend(more),
                Err(_) => break,
            }
        }
        let total: usize = batch.iter().map(|b| b.len()).sum();
        if let Err(e) = write_all_vectored(&mut wr, &mut batch).await {
            tracing::debug!(%peer, "write failed: {e}");
            // Drain so senders do not block; their replies are lost with
            // the connection, as RPC over TCP allows.
            rx.close();
            while rx.recv().await.is_some() {}
            return;
        }
        shared.metrics.bytes_sent.fetch_add(total as u64, Relaxed);
    }
    let _ = wr.shutdown().await;
}

async fn write_all_vectored(wr: &mut OwnedWriteHalf, segs: &mut [Bytes]) -> std::io::Result<()> {
    let mut i = 0;
    while i < segs.len() {
        if segs[i].is_empty() {
            i += 1;
            continue;
        }
        let end = (i + MAX_IOVECS).min(segs.len());
        let slices: Vec<IoSlice<'_>> = segs[i..end].iter().map(|s| IoSlice::new(s)).collect();
        let mut n = wr.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 && i < segs.len() {
            let take = n.min(segs[i].len());
            segs[i].advance(take);
            n -= take;
            if segs[i].is_empty() {
                i += 1;
            }
        }
    }
    Ok(())
}

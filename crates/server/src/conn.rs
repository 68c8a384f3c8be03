//! One client connection: read records, run each where it belongs, and
//! write its reply from the thread that ran it.
//!
//! The core says where a record belongs ([`server_core::Placement`]):
//! requests that touch no disk run right here on the connection's task
//! (no hand-off at all), the rest go to a worker thread, which writes the
//! reply itself (one hand-off). Replies go out in completion order, so
//! one slow request (an fsync) does not hold up the others. A connection
//! that opens with the RPC-with-TLS probe runs the same way over TLS.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use proto::framer::RecordDecoder;
use server_core::{Outcome, PeerInfo, Placement, Record};

use crate::backchannel::ConnEntry;
use crate::lone_poll::{self, Polled};
use crate::sink::ReplySink;
use crate::slots::Slot;
use crate::tls::Start;
use crate::Shared;

pub(crate) mod parked;

pub async fn serve(stream: TcpStream, mut peer: PeerInfo, shared: Arc<Shared>) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!(peer = %peer.addr, "TCP_NODELAY failed: {e}");
    }
    let mut decoder = RecordDecoder::new(shared.settings.max_record_size);
    // With TLS configured, the first record may ask for it (RFC 9289).
    let start = match &shared.tls {
        None => Start::Plain(stream),
        Some(tls) => match crate::tls::start(tls, stream, &mut decoder).await {
            Ok(s) => s,
            Err(why) => {
                shared.metrics.tls_failures.inc();
                tracing::warn!(peer = %peer.addr, "connection dropped: {why}");
                return;
            }
        },
    };
    // The socket a lone client's next request is polled for (plain TCP;
    // under TLS a record may already wait in the session's own buffer).
    let mut poll_fd = None;
    let (mut rd, sink): (Box<dyn AsyncRead + Send + Unpin>, _) = match start {
        Start::Plain(stream) => {
            poll_fd = Some(std::os::fd::AsRawFd::as_raw_fd(&stream));
            let (rd, wr) = stream.into_split();
            (Box::new(rd), ReplySink::new(wr, shared.metrics.clone(), peer.addr))
        }
        Start::Tls(stream, security) => {
            tracing::info!(peer = %peer.addr, transport = ?security, "RPC-with-TLS session established");
            shared.metrics.tls_sessions.inc();
            peer.tls = security;
            let (rd, wr) = tokio::io::split(*stream);
            (Box::new(rd), ReplySink::new_tls(wr, shared.metrics.clone(), peer.addr))
        }
    };
    let flusher = tokio::spawn(sink.clone().flush_loop());
    let (conn_id, entry) = shared.connections.register(sink.clone());
    peer.conn = conn_id;
    let limit = shared.settings.max_in_flight_per_connection;
    let permits = Arc::new(Semaphore::new(limit));
    // Requests of this connection whose replies are not made yet.
    let running = Arc::new(AtomicUsize::new(0));
    let peer = Arc::new(peer);
    let idle = Duration::from_secs(shared.settings.idle_timeout_secs);
    let mut shutdown = shared.shutdown.subscribe();
    // This connection's bytes in the global partial-record account.
    let mut held = 0usize;
    let mut skip_read = decoder.buffered() > 0;
    // Requests in a row that found nothing else of this connection
    // outstanding; see `lone_requests_in_place_after`. block_in_place
    // needs a runtime with other threads to hand the rest to.
    let mut lone = 0u32;
    // The last record ran on this thread itself, not on a worker nor in
    // place by `block_in_place`: only then is this thread the one the next
    // record wakes, and polling for it (`lone_poll_us`) saves a wake-up.
    // After `block_in_place` the runtime's core has moved to another
    // thread, which sleeps in the poll of every socket, and polling here
    // would only take CPU from it and the client.
    let mut ran_here = false;
    let mut polling = lone_poll::Adaptive::new(
        Duration::from_micros(shared.settings.lone_poll_us),
        shared.settings.lone_poll_max_quiet,
        Duration::from_micros(shared.settings.lone_poll_worth_us),
    );
    let in_place_after = match tokio::runtime::Handle::current().runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => shared.settings.lone_requests_in_place_after,
        _ => 0,
    };

    'conn: loop {
        if !wait_for_room(&shared, held, &entry, &mut shutdown, &peer).await {
            break;
        }
        // Read straight into the framer's buffer: a single-fragment record
        // then reaches the handler as a slice of it, never copied. The
        // framer reserves room for a whole fragment, so one read may take
        // in megabytes; once records in progress fill half their budget,
        // reads take at most read_buffer_size, so that what connections
        // read between two looks at the budget stays small.
        // Records the TLS check at the start already read come first.
        if skip_read {
            skip_read = false;
        } else {
            // When this connection started waiting, if it waited as a lone
            // one: how soon its next request came tells the poll whether
            // polling pays (`lone_poll::Adaptive`).
            let mut lone_wait = None;
            if let Some(fd) = poll_fd.filter(|_| {
                ran_here && in_place_after > 0 && lone >= in_place_after && running.load(Ordering::Acquire) == 0
            }) {
                let start = Instant::now();
                let found = if polling.wants_poll() {
                    Some(poll_for_next(&shared, fd))
                } else {
                    if shared.settings.lone_poll_us > 0 {
                        shared.metrics.lone_polls_skipped.inc();
                    }
                    None
                };
                if let Some(found) = &found {
                    polling.polled(found, start.elapsed());
                }
                if !matches!(found, Some(Polled::Ready)) {
                    lone_wait = Some(start);
                }
            }
            decoder.reserve_for_read(shared.settings.read_buffer_size);
            let buf = decoder.buffer_mut();
            let cap = if shared.connections.partial_bytes() > shared.settings.max_partial_record_bytes / 2 {
                shared.settings.read_buffer_size
            } else {
                usize::MAX
            };
            let mut limited = bytes::BufMut::limit(buf, cap);
            let n = tokio::select! {
                r = tokio::time::timeout(idle, rd.read_buf(&mut limited)) => match r {
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
                _ = entry.kick.notified() => {
                    tracing::info!(peer = %peer.addr, "closing the connection idle the longest: the connection limit is reached");
                    break;
                }
                _ = shutdown.changed() => break,
            };
            shared.connections.touch(&entry);
            shared.metrics.bytes_received.inc_by(n as u64);
            if let Some(start) = lone_wait {
                polling.arrived_after(start.elapsed());
            }
        }
        loop {
            let record = match decoder.next_record() {
                Ok(Some(r)) => shared.core.parse(r),
                Ok(None) => break,
                Err(e) => {
                    shared.metrics.bad_records.inc();
                    tracing::warn!(peer = %peer.addr, "closing connection: {e}");
                    break 'conn;
                }
            };
            account(&shared, &entry, &mut held, decoder.buffered());
            // Backpressure: with `limit` requests outstanding (running, or
            // replied but not yet taken by the socket) the reader stops
            // here, so TCP flow control slows the client down.
            let permit = match permits.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => tokio::select! {
                    p = permits.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break 'conn,
                    },
                    _ = shutdown.changed() => break 'conn,
                },
            };
            shared.metrics.in_flight.inc();
            // Not the permits: a worker's reply holds one until its write
            // returns, by which time the client, woken by that very write
            // over loopback, may well have sent its next request.
            let alone = running.load(Ordering::Acquire) == 0 && decoder.buffered() == 0;
            lone = if alone { lone.saturating_add(1) } else { 0 };
            let permit = InFlight::new(permit, &running);
            // Busy: a large READ may be copied here rather than sent by
            // sendfile from a worker (`read_sendfile_alone_only`).
            let busy = !alone && copies_fit(&shared, &sink, 0);
            match shared.core.placement(&record, busy) {
                Placement::Inline => {
                    ran_here = true;
                    shared.metrics.requests_inline.inc();
                    run(&shared, &peer, &sink, record, permit);
                }
                Placement::TryInline => {
                    let start = Instant::now();
                    let tried = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        shared.core.try_handle_inline(&record, &peer)
                    }));
                    match tried.unwrap_or_else(|_| {
                        tracing::error!(peer = %peer.addr, "request handler panicked; retried on a worker");
                        None
                    }) {
                        Some(out) => {
                            ran_here = true;
                            shared.metrics.requests_inline.inc();
                            finish(&shared, &peer, &sink, out, permit, start);
                        }
                        None => {
                            ran_here = false;
                            shared.metrics.requests_inline_fallback.inc();
                            to_worker(&shared, &peer, &sink, record, permit);
                        }
                    }
                }
                Placement::Worker => match in_place_slot(&shared, in_place_after, lone, &record) {
                    Some(_slot) => {
                        shared.metrics.requests_in_place.inc();
                        match direct_slot(&shared, &record) {
                            Some(_direct) => {
                                ran_here = true;
                                shared.metrics.requests_in_place_direct.inc();
                                run(&shared, &peer, &sink, record, permit);
                            }
                            None => {
                                ran_here = false;
                                tokio::task::block_in_place(|| run(&shared, &peer, &sink, record, permit));
                            }
                        }
                    }
                    None => {
                        ran_here = false;
                        to_worker(&shared, &peer, &sink, record, permit);
                    }
                },
            }
        }
        account(&shared, &entry, &mut held, decoder.buffered());
    }
    account(&shared, &entry, &mut held, 0);
    shared.connections.unregister(conn_id);
    shared.core.connection_closed(conn_id);
    // Every permit back means every request has finished and its reply
    // has been written or dropped with a broken connection.
    let _ = permits.acquire_many(limit as u32).await;
    sink.close();
    let _ = flusher.await;
}

/// Before reading more: while records in progress exceed their budget,
/// this connection, holding part of one, stops reading (TCP pushes back on
/// the client), and makes room by closing the connection whose partial
/// record has been stalled the longest, once it has been stalled for
/// `record_stall_secs`. false: close this connection (it waited that long
/// itself, was kicked, or the server is shutting down).
async fn wait_for_room(
    shared: &Shared,
    held: usize,
    entry: &ConnEntry,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
    peer: &PeerInfo,
) -> bool {
    let budget = shared.settings.max_partial_record_bytes;
    if !shared.connections.over_budget(held, budget) {
        return true;
    }
    let stall = Duration::from_secs(shared.settings.record_stall_secs);
    let stall_ms = u64::try_from(stall.as_millis()).unwrap_or(u64::MAX);
    let deadline = Instant::now() + stall;
    while shared.connections.over_budget(held, budget) {
        if let Some(victim) = shared.connections.stalest_partial(stall_ms) {
            if !std::ptr::eq(Arc::as_ptr(&victim), entry) {
                shared.metrics.connections_over_budget.inc();
                victim.kick.notify_one();
            }
        }
        if Instant::now() >= deadline {
            shared.metrics.connections_over_budget.inc();
            tracing::warn!(peer = %peer.addr, held, budget,
                "closing connection: its partial record stalled while records in progress exceed max_partial_record_bytes");
            return false;
        }
        // Polled: this only runs while the server is over its budget.
        tokio::select! {
            _ = tokio::time::sleep(ROOM_POLL) => {}
            _ = entry.kick.notified() => return false,
            _ = shutdown.changed() => return false,
        }
    }
    true
}

/// Moves this connection's share of the partial-record account to `now`.
fn account(shared: &Shared, entry: &ConnEntry, held: &mut usize, now: usize) {
    if now != *held {
        shared.connections.set_partial_of(entry, held, now);
        let total = i64::try_from(shared.connections.partial_bytes()).unwrap_or(i64::MAX);
        shared.metrics.partial_record_bytes.set(total);
    }
}

/// How often a connection stopped by the partial-record budget looks again.
const ROOM_POLL: Duration = Duration::from_millis(50);

/// Before a lone connection's thread sleeps for the next request, it
/// polls the socket for it a while (`lone_poll_us`); the time spent
/// polling is counted, as it is CPU whether or not the request comes.
fn poll_for_next(shared: &Shared, fd: std::os::fd::RawFd) -> Polled {
    let budget = Duration::from_micros(shared.settings.lone_poll_us);
    let start = Instant::now();
    let found = lone_poll::poll_for_next(fd, budget, &shared.lone_pollers, shared.settings.max_lone_pollers);
    match found {
        Polled::Ready => shared.metrics.lone_polls_ready.inc(),
        Polled::Quiet => shared.metrics.lone_polls_quiet.inc(),
        Polled::NoSlot => return found,
    };
    shared.metrics.lone_poll_microseconds.inc_by(start.elapsed().as_micros() as u64);
    found
}

/// A place to run a request that may block on its connection's own
/// thread: the connection has had one request at a time for `after`
/// requests (`lone` so far), the request may run so, and fewer than
/// `max_requests_in_place` do now.
fn in_place_slot<'a>(shared: &'a Shared, after: u32, lone: u32, record: &Record) -> Option<Slot<'a>> {
    if after == 0 || lone < after || !shared.core.may_run_in_place(record) {
        return None;
    }
    Slot::take(&shared.in_place, shared.settings.max_requests_in_place)
}

/// A place to run a request in place without `block_in_place`: it waits
/// for the file system only, and fewer than `max_requests_in_place_direct`
/// run so now.
fn direct_slot<'a>(shared: &'a Shared, record: &Record) -> Option<Slot<'a>> {
    if !shared.core.waits_for_the_file_system_only(record) {
        return None;
    }
    Slot::take(&shared.in_place_direct, shared.settings.max_requests_in_place_direct)
}

/// Hands a record to a worker thread, which writes the reply itself.
fn to_worker(shared: &Arc<Shared>, peer: &Arc<PeerInfo>, sink: &Arc<ReplySink>, record: Record, permit: InFlight) {
    shared.metrics.requests_worker.inc();
    let key = if shared.settings.serial_unstable_writes { shared.core.serial_key(&record) } else { None };
    let (s, peer, sink) = (shared.clone(), peer.clone(), sink.clone());
    // The worker writes the reply itself.
    let job = move || run(&s, &peer, &sink, record, permit);
    match key {
        Some(key) => {
            if shared.workers.spawn_serial(key, job) {
                shared.metrics.requests_chained.inc();
            }
        }
        None => shared.workers.spawn(job),
    }
}

/// Runs one record and sends its reply; on whichever thread it is called.
fn run(shared: &Arc<Shared>, peer: &Arc<PeerInfo>, sink: &Arc<ReplySink>, record: Record, permit: InFlight) {
    let start = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shared.core.handle_record(&record, peer)));
    match outcome {
        Ok(out) => finish(shared, peer, sink, out, permit, start),
        Err(_) => {
            tracing::error!(peer = %peer.addr, "request handler panicked; request dropped");
            done(shared);
        }
    }
}

/// Records a finished request and sends its reply, or keeps it while it
/// waits (parked); resumes the parked requests it answered.
fn finish(
    shared: &Arc<Shared>,
    peer: &Arc<PeerInfo>,
    sink: &Arc<ReplySink>,
    mut out: Outcome,
    permit: InFlight,
    start: Instant,
) {
    for wait in std::mem::take(&mut out.woken) {
        parked::wake(shared, wait);
    }
    if let Some(p) = out.parked.take() {
        parked::park(shared, parked::Waiting { parked: p, peer: peer.clone(), sink: sink.clone(), permit, start });
        return;
    }
    shared.metrics.record(out.label, out.ok, start.elapsed());
    let InFlight { permit, running } = permit;
    // This request still counts itself.
    let others_running = running.0.load(Ordering::Acquire) > 1;
    drop(running);
    if let Some(mut reply) = out.reply {
        let busy = others_running || !sink.is_idle();
        let tail = out.tail.and_then(|region| file_or_copy(shared, peer, sink, &mut reply, region, busy));
        match crate::sink::framed(reply, tail) {
            Some(segs) => {
                sink.send(segs, Some(permit));
            }
            None => tracing::error!(peer = %peer.addr, label = out.label, "reply too large for one record; dropped"),
        }
    } else if out.ok {
        // Nothing to send: a client's reply to one of our callbacks, or a
        // retransmission of a call still running (the first copy's reply
        // answers).
    } else {
        shared.metrics.bad_records.inc();
        tracing::warn!(peer = %peer.addr, label = out.label, "request dropped without reply");
    }
    done(shared);
}

/// A READ's data left in the page cache: sent from there (sendfile) when
/// its request is alone on the connection, else, with
/// `read_sendfile_alone_only`, read into memory and appended to `reply`
/// (with several replies in flight copying was the faster here: see the
/// setting). Not while the connection's queue already holds as much as
/// its requests in flight could with READs below `read_sendfile_min`: a
/// client that stops reading its replies leaves file regions queued,
/// which hold no memory, not megabytes of copies.
fn file_or_copy(
    shared: &Shared,
    peer: &PeerInfo,
    sink: &ReplySink,
    reply: &mut Vec<Bytes>,
    region: vfs::FileRegion,
    busy: bool,
) -> Option<vfs::FileRegion> {
    if busy && shared.core.settings().read_sendfile_alone_only && copies_fit(shared, sink, region.len as usize) {
        match crate::sink::region_bytes(&region) {
            Ok(data) => {
                reply.extend(data);
                shared.metrics.replies_from_files_busy.inc();
                return None;
            }
            Err(e) => {
                tracing::debug!(peer = %peer.addr, "reading a READ's data into memory failed: {e}; sent from the file")
            }
        }
    }
    shared.metrics.replies_from_files.inc();
    Some(region)
}

/// Whether `len` more bytes of copied READ data fit the connection's reply
/// queue: no more than its requests in flight could hold with READs
/// below `read_sendfile_min`.
fn copies_fit(shared: &Shared, sink: &ReplySink, len: usize) -> bool {
    let room =
        shared.settings.max_in_flight_per_connection.saturating_mul(shared.core.settings().read_sendfile_min as usize);
    sink.queued_bytes().saturating_add(len) <= room
}

fn done(shared: &Shared) {
    shared.metrics.in_flight.dec();
    shared.idle.notify_waiters();
}

/// A request of a connection from its reading to its reply: the permit,
/// held until the reply is written (so replies the socket has not taken
/// count against the connection's requests in flight), and its mark in
/// the count of requests still running, cleared once the reply is made.
pub(crate) struct InFlight {
    permit: OwnedSemaphorePermit,
    running: Running,
}

impl InFlight {
    fn new(permit: OwnedSemaphorePermit, running: &Arc<AtomicUsize>) -> InFlight {
        running.fetch_add(1, Ordering::AcqRel);
        InFlight { permit, running: Running(running.clone()) }
    }
}

/// One request in its connection's count of requests running.
struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

//! Flushing one open file: group commit and early write-back (Gronvall).
//!
//! # Group commit
//!
//! Stable WRITEs and COMMITs that arrive together on one file share one
//! `fsync`. A caller whose data is already in the page cache needs a
//! flush that *starts* after its write returned; flushes run one at a
//! time per file, so each caller waits for the first flush numbered after
//! the one running when it arrived, starting it itself when none runs.
//! Everyone who arrived during a flush is covered by the next one: with
//! N writers, about two flushes serve all N. A caller is only answered
//! once its flush has returned, and fails if that flush or the one
//! running when it arrived failed, so an error reaches every write a
//! failed flush may have been carrying.
//!
//! # Write gathering
//!
//! Flushing at once whenever none runs splits N steady writers into two
//! alternating halves: while one flush runs, the writers it serves are
//! between their reply and their next request, so the next flush starts
//! with only the others. Gronvall's write gathering holds a stable write
//! back briefly so that more writes share its flush. Here a flush about
//! to start waits while fewer callers wait for it than were active around
//! the last one (the callers it served plus those that arrived while it
//! ran), for at most the last flush's duration and never more than the
//! group's `gather_max`. A lone writer never waits (one was active, one
//! is waiting); N writers soon share one flush each round instead of
//! two. Waiting changes nothing about what a caller is promised: it is
//! still answered only after a flush that started after its write.
//!
//! Directories get the same treatment ([`DirFlushes`]): namespace changes
//! (CREATE, MKDIR, REMOVE, RENAME, LINK, ...) that arrive together in one
//! directory share its `fsync`.
//!
//! # Early write-back of sequential data
//!
//! UNSTABLE writes that continue a sequential run (tolerating reordering
//! within `sequential_window`) start the kernel's write-back of the run
//! every `writeback_chunk` bytes (`sync_file_range(WRITE)`, which does not
//! wait), so the disk works while the client is still sending and a
//! COMMIT finds little left to flush.

use std::collections::{HashMap, VecDeque};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rustix::io::Errno;

/// Results kept of recent flushes, for callers slow to wake up.
const RESULTS_KEPT: usize = 64;

#[derive(Default, Debug)]
struct GroupState {
    /// Flushes started so far (the running one included).
    started: u64,
    /// The last flush that returned.
    done: u64,
    running: bool,
    /// (flush number, its error) of recent failed flushes.
    failures: VecDeque<(u64, Errno)>,
    /// Callers waiting for the next flush (number `started + 1`).
    next: u32,
    /// Callers the running (or last) flush serves.
    serving: u32,
    /// Callers active around the last flush: those it served and those
    /// that arrived while it ran. A flush waits for this many callers
    /// (write gathering).
    expected: u32,
    /// How long the last flush took: the longest a flush waits to gather.
    last_flush: Duration,
    /// While the next flush waits to gather: when it stops waiting.
    gather_until: Option<Instant>,
}

impl GroupState {
    /// Until when the next flush should wait for more callers, if at all
    /// (see the module documentation).
    fn gather_deadline(&mut self, gather_max: Duration, counts: &FlushCounts) -> Option<Instant> {
        if gather_max.is_zero() || self.next >= self.expected {
            return None;
        }
        let now = Instant::now();
        let until = *self.gather_until.get_or_insert_with(|| {
            counts.gathers.fetch_add(1, Ordering::Relaxed);
            now + self.last_flush.min(gather_max)
        });
        (now < until).then_some(until)
    }
}

/// One file's flushes, shared by the callers that need one.
///
/// Callers wait on the condition variable of their flush's parity: when
/// flush N returns, everyone it served (waiting on N's) is woken, and only
/// one of those waiting for flush N + 1 (on the other), to start it. Waking
/// them all, as one variable would, woke every caller of the next flush
/// only to send all but one back to sleep: with 16 stable writers about
/// ten needless wake-ups per flush.
#[derive(Default, Debug)]
pub(crate) struct FlushGroup {
    state: Mutex<GroupState>,
    cvs: [Condvar; 2],
}

/// Flushes and the callers they served, for the metrics.
#[derive(Default)]
pub(crate) struct FlushCounts {
    pub(crate) flushes: AtomicU64,
    pub(crate) callers: AtomicU64,
    /// Flushes that waited to gather more callers.
    pub(crate) gathers: AtomicU64,
}

impl FlushGroup {
    /// Makes everything written to `fd` before this call durable (`fsync`
    /// when `metadata`, else `fdatasync`), sharing the flush with
    /// concurrent callers. Metadata and data-only callers use separate
    /// groups, so a data-only flush never answers for metadata.
    /// `gather_max` bounds the wait for more callers (0: never waits).
    pub(crate) fn sync(
        &self,
        fd: BorrowedFd<'_>,
        metadata: bool,
        counts: &FlushCounts,
        gather_max: Duration,
    ) -> Result<(), Errno> {
        let since = self.ticket();
        self.sync_since(since, fd, metadata, counts, gather_max)
    }

    /// [`FlushGroup::sync`] for a change made after `since` was taken
    /// ([`FlushGroup::ticket`]): a flush that ran between the change and
    /// this call, and failed, may have lost it (Linux marks the failed
    /// pages clean, and tells only that flush), so its error is this
    /// caller's too.
    pub(crate) fn sync_since(
        &self,
        since: u64,
        fd: BorrowedFd<'_>,
        metadata: bool,
        counts: &FlushCounts,
        gather_max: Duration,
    ) -> Result<(), Errno> {
        self.sync_with(since, counts, gather_max, || {
            if metadata {
                rustix::fs::fsync(fd)
            } else {
                rustix::fs::fdatasync(fd)
            }
        })
    }

    /// The first flush that may carry a change made from now on (the one
    /// running, or the next); taken before the change.
    pub(crate) fn ticket(&self) -> u64 {
        let g = self.state.lock();
        if g.running {
            g.started
        } else {
            g.started + 1
        }
    }

    /// [`FlushGroup::ticket`], with `observe` run under the group's lock
    /// (tests record when the ticket was taken on their own clock).
    #[cfg(test)]
    fn ticket_observed(&self, observe: impl FnOnce() -> u64) -> (u64, u64) {
        let g = self.state.lock();
        let t = if g.running { g.started } else { g.started + 1 };
        (t, observe())
    }

    /// [`FlushGroup::sync_since`] with the flush given as `flush`.
    pub(crate) fn sync_with(
        &self,
        since: u64,
        counts: &FlushCounts,
        gather_max: Duration,
        flush: impl Fn() -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        counts.callers.fetch_add(1, Ordering::Relaxed);
        let mut g = self.state.lock();
        g.next += 1;
        let cv = self.cv(g.started + 1);
        if g.gather_until.is_some() && g.next >= g.expected {
            // The flush waiting to gather has everyone it waited for.
            cv.notify_all();
        }
        // A flush running now may have started before our write returned,
        // so it does not count as ours; but it may also have started after
        // it and failed with our data, after which a later flush can
        // succeed with the data gone (Linux marks failed pages clean). So
        // a failure of the running flush is ours too.
        let mine = g.started + 1;
        let first = since.min(if g.running { g.started } else { mine });
        loop {
            if g.done >= mine {
                let failed = g.failures.iter().find(|(n, _)| (first..=mine).contains(n)).map(|(_, e)| *e);
                return failed.map_or(Ok(()), Err);
            }
            if !g.running {
                if let Some(until) = g.gather_deadline(gather_max, counts) {
                    cv.wait_until(&mut g, until);
                    continue;
                }
                g.running = true;
                g.started += 1;
                g.serving = std::mem::take(&mut g.next);
                g.gather_until = None;
                let number = g.started;
                drop(g);
                counts.flushes.fetch_add(1, Ordering::Relaxed);
                let began = Instant::now();
                let r = flush();
                let took = began.elapsed();
                g = self.state.lock();
                g.running = false;
                g.done = number;
                g.last_flush = took;
                g.expected = g.serving + g.next;
                if let Err(e) = r {
                    if g.failures.len() == RESULTS_KEPT {
                        g.failures.pop_front();
                    }
                    g.failures.push_back((number, e));
                }
                self.cv(number).notify_all();
                if g.next > 0 {
                    // One caller of the next flush starts it. Should
                    // another caller start it first, the one woken finds
                    // it running and waits for it like the rest.
                    self.cv(number + 1).notify_one();
                }
                continue;
            }
            cv.wait(&mut g);
        }
    }

    /// The condition variable the callers of flush `number` wait on.
    fn cv(&self, number: u64) -> &Condvar {
        &self.cvs[(number % 2) as usize]
    }
}

/// One flush group per directory with a flush wanted or running, keyed by
/// inode number and generation; a group leaves the map with its last
/// caller, so the map holds only directories being changed right now.
#[derive(Default)]
pub(crate) struct DirFlushes {
    groups: Mutex<HashMap<(u64, u64), Arc<FlushGroup>>>,
    pub(crate) counts: FlushCounts,
    /// The longest a directory flush waits to gather more changes.
    gather_max: Duration,
}

impl DirFlushes {
    pub(crate) fn new(gather_max: Duration) -> DirFlushes {
        DirFlushes { gather_max, ..Default::default() }
    }

    /// Makes the namespace changes made in `dir` (an O_PATH fd) before this
    /// call durable, sharing the `fsync` with concurrent callers.
    pub(crate) fn sync(&self, key: (u64, u64), dir: BorrowedFd<'_>) -> Result<(), Errno> {
        let group = self.groups.lock().entry(key).or_default().clone();
        let since = group.ticket();
        let r = group.sync_with(since, &self.counts, self.gather_max, || {
            use rustix::fs::{Mode, OFlags};
            let fd = rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
            rustix::fs::fsync(&fd)
        });
        let mut groups = self.groups.lock();
        // Clones are made under this lock: two references (the map's and
        // ours) mean nobody else is using the group.
        if Arc::strong_count(&group) == 2 {
            groups.remove(&key);
        }
        r
    }

    /// Directories with a flush wanted or running.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.groups.lock().len()
    }
}

/// Where a file's current sequential run of UNSTABLE writes stands.
#[derive(Default, Debug)]
struct SeqState {
    /// End of the furthest write of the run.
    end: u64,
    /// Write-back has been started up to here.
    kicked: u64,
}

#[derive(Default, Debug)]
pub(crate) struct Sequential {
    state: Mutex<SeqState>,
}

impl Sequential {
    /// Notes an UNSTABLE write of `[offset, offset + len)`; returns the
    /// range whose write-back should start now, if any.
    pub(crate) fn note(&self, offset: u64, len: u64, window: u64, chunk: u64) -> Option<(u64, u64)> {
        if chunk == 0 {
            return None;
        }
        let mut s = self.state.lock();
        let end = offset.saturating_add(len);
        let continues = offset <= s.end.saturating_add(window) && end.saturating_add(window) >= s.end;
        if !continues || s.end == 0 {
            // A new run: random writes never trigger write-back.
            s.kicked = offset;
            s.end = end;
            return None;
        }
        s.end = s.end.max(end);
        if s.end - s.kicked < chunk {
            return None;
        }
        // Leave the window behind the front alone: reordered writes may
        // still fill it.
        let upto = s.end.saturating_sub(window);
        if upto <= s.kicked {
            return None;
        }
        let range = (s.kicked, upto - s.kicked);
        s.kicked = upto;
        Some(range)
    }
}

/// Starts write-back of a range without waiting for it.
pub(crate) fn start_writeback(fd: BorrowedFd<'_>, offset: u64, len: u64) {
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: sync_file_range only reads its integer arguments; `fd` is a
    // borrowed, open descriptor for the duration of the call.
    let r = unsafe {
        libc::sync_file_range(std::os::fd::AsRawFd::as_raw_fd(&fd), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
    // Advice only: a failure changes nothing that COMMIT does not redo.
    let _ = r;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::sync::Arc;

    #[test]
    fn concurrent_callers_share_flushes() {
        let f = Arc::new(tempfile_fd());
        let g = Arc::new(FlushGroup::default());
        let counts = Arc::new(FlushCounts::default());
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (f, g, counts) = (f.clone(), g.clone(), counts.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        g.sync(f.as_fd(), true, &counts, Duration::from_millis(1)).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (flushes, callers) = (counts.flushes.load(Ordering::Relaxed), counts.callers.load(Ordering::Relaxed));
        assert_eq!(callers, 320);
        assert!(flushes <= callers, "{flushes} flushes for {callers} callers");
    }

    #[test]
    fn namespace_changes_in_one_directory_share_its_flush() {
        // Any directory will do: its flush changes nothing.
        let fd = Arc::new(std::fs::File::open(std::env::temp_dir()).unwrap());
        let flushes = Arc::new(DirFlushes::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (fd, flushes) = (fd.clone(), flushes.clone());
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        flushes.sync((1, 0), fd.as_fd()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let c = &flushes.counts;
        assert_eq!(c.callers.load(Ordering::Relaxed), 200);
        assert!(c.flushes.load(Ordering::Relaxed) <= 200);
        assert_eq!(flushes.len(), 0, "a directory with no flush wanted is still held");
    }

    /// The guarantee, checked on a log of events with one clock: every
    /// caller is answered only after a flush that started after it
    /// arrived has ended; a caller whose covering flush failed fails; and
    /// no caller fails unless a flush that overlapped its wait failed.
    #[test]
    fn every_caller_is_covered_by_a_flush_that_started_after_it() {
        covered_by_a_later_flush(Duration::ZERO);
    }

    #[test]
    fn gathering_keeps_every_caller_covered_by_a_flush_that_started_after_it() {
        covered_by_a_later_flush(Duration::from_millis(2));
    }

    fn covered_by_a_later_flush(gather_max: Duration) {
        use std::sync::atomic::AtomicU64;
        let clock = Arc::new(AtomicU64::new(0));
        let tick = {
            let c = clock.clone();
            move || c.fetch_add(1, Ordering::SeqCst)
        };
        let flushes = Arc::new(parking_lot::Mutex::new(Vec::<(u64, u64, bool)>::new()));
        let g = Arc::new(FlushGroup::default());
        let counts = Arc::new(FlushCounts::default());
        let threads: Vec<_> = (0..16u64)
            .map(|t| {
                let (g, counts, flushes, tick) = (g.clone(), counts.clone(), flushes.clone(), tick.clone());
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    for i in 0..30u64 {
                        let (since, arrived) = g.ticket_observed(&tick);
                        let r = g.sync_with(since, &counts, gather_max, || {
                            let start = tick();
                            std::thread::sleep(std::time::Duration::from_micros(200 + (t * 37 + i * 11) % 300));
                            let fail = (start % 7) == 3;
                            flushes.lock().push((start, tick(), fail));
                            if fail {
                                Err(Errno::IO)
                            } else {
                                Ok(())
                            }
                        });
                        seen.push((arrived, tick(), r.is_err()));
                    }
                    seen
                })
            })
            .collect();
        let callers: Vec<(u64, u64, bool)> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let flushes = flushes.lock().clone();
        for (arrived, answered, failed) in &callers {
            // The first flush to start after the caller arrived covers it.
            let cover = flushes.iter().filter(|f| f.0 > *arrived).min_by_key(|f| f.0).expect("a covering flush");
            assert!(cover.1 < *answered, "answered at {answered} before its flush ended at {}", cover.1);
            if cover.2 {
                assert!(*failed, "the flush covering a caller failed, the caller did not");
            }
            if *failed {
                assert!(
                    flushes.iter().any(|f| f.2 && f.1 > *arrived && f.0 < *answered),
                    "a caller failed with no failed flush during its wait"
                );
            }
        }
        let n = counts.flushes.load(Ordering::Relaxed);
        assert!(n < callers.len() as u64, "{n} flushes for {} callers: nothing shared", callers.len());
    }

    /// Two writers that each think a little between stable writes: without
    /// gathering every flush serves one of them (each arrives while the
    /// other's flush runs); with it they share one flush per round.
    #[test]
    fn a_flush_waits_for_the_writers_of_the_last_round() {
        let flushes_for = |gather_max: Duration| {
            let g = Arc::new(FlushGroup::default());
            let counts = Arc::new(FlushCounts::default());
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (g, counts) = (g.clone(), counts.clone());
                    std::thread::spawn(move || {
                        for _ in 0..6 {
                            let since = g.ticket();
                            g.sync_with(since, &counts, gather_max, || {
                                std::thread::sleep(Duration::from_millis(30));
                                Ok(())
                            })
                            .unwrap();
                            std::thread::sleep(Duration::from_millis(3));
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            (counts.flushes.load(Ordering::Relaxed), counts.gathers.load(Ordering::Relaxed))
        };
        let (alone, no_gathers) = flushes_for(Duration::ZERO);
        let (gathered, gathers) = flushes_for(Duration::from_secs(1));
        assert_eq!(no_gathers, 0);
        assert!(gathers >= 1, "never waited to gather");
        assert!(alone >= 10, "{alone} flushes for 12 callers without gathering");
        assert!(gathered <= 8, "{gathered} flushes for 12 callers with gathering");
    }

    /// One writer at a time: nobody else was active around its last
    /// flush, so no flush waits for anyone.
    #[test]
    fn a_lone_writer_never_waits_to_gather() {
        let g = FlushGroup::default();
        let counts = FlushCounts::default();
        let began = Instant::now();
        for _ in 0..20 {
            let since = g.ticket();
            g.sync_with(since, &counts, Duration::from_secs(5), || {
                std::thread::sleep(Duration::from_millis(1));
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(counts.gathers.load(Ordering::Relaxed), 0);
        assert_eq!(counts.flushes.load(Ordering::Relaxed), 20);
        assert!(began.elapsed() < Duration::from_secs(4), "waited {:?}", began.elapsed());
    }

    #[test]
    fn a_caller_waits_for_a_flush_that_started_after_it() {
        // With one flush already counted as started and running, a new
        // caller must not be answered by its completion.
        let f = tempfile_fd();
        let g = FlushGroup::default();
        {
            let mut s = g.state.lock();
            s.started = 1;
            s.done = 0;
        }
        let counts = FlushCounts::default();
        g.sync(f.as_fd(), false, &counts, Duration::ZERO).unwrap();
        assert_eq!(counts.flushes.load(Ordering::Relaxed), 1, "ran its own flush (number 2)");
        assert_eq!(g.state.lock().done, 2);
    }

    #[test]
    fn sequential_runs_start_writeback_in_chunks() {
        let s = Sequential::default();
        let mib = 1u64 << 20;
        let mut kicked = Vec::new();
        for i in 0..32 {
            // Pairs arrive swapped: a reordering within the window.
            let off = if i % 2 == 0 { (i + 1) * mib } else { (i - 1) * mib };
            if let Some(r) = s.note(off, mib, 2 * mib, 8 * mib) {
                kicked.push(r);
            }
        }
        assert!(kicked.len() >= 2, "{kicked:?}");
        for w in kicked.windows(2) {
            assert_eq!(w[0].0 + w[0].1, w[1].0, "contiguous");
        }
        // Random writes start nothing.
        let r = Sequential::default();
        for off in [50u64, 3, 900, 17, 400, 1000, 5] {
            assert!(r.note(off * mib, mib, 2 * mib, 8 * mib).is_none());
        }
    }

    fn tempfile_fd() -> std::fs::File {
        let p =
            std::env::temp_dir().join(format!("nfsx-flush-{}-{:?}", std::process::id(), std::thread::current().id()));
        let f = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        f
    }
}

//! The worker pool that runs requests which may block.
//!
//! A request handed here costs one wake-up of a parked thread. Which
//! thread matters: a general-purpose pool wakes its idle threads in turn
//! (a condition variable wakes the longest waiter), so with one request at
//! a time every thread of the pool takes turns, each with a cold cache and
//! often on the other CPU (measured at one NFSv4.1 create in flight,
//! ~4,500 a second: 16 threads each woken ~600 times a second, 8,500 CPU
//! migrations a second).
//! Here the thread idle the *shortest* time gets the job: idle threads
//! wait on a stack, each parked on its own slot, so a light load keeps
//! reusing one or two warm threads and the rest stay asleep until they
//! exit after `worker_idle_secs`.
//!
//! Jobs beyond `worker_threads` running at once wait in a queue, taken in
//! arrival order by whichever thread finishes first. A queue that has not
//! moved for `worker_stall_ms` means every thread is stuck (a backend
//! waiting on a cluster that stopped answering, a disk that hangs): the
//! pool then starts spare threads, up to `worker_spare_threads`, so that
//! requests behind the stuck ones still run and get their answer, which
//! for such a backend is "try again later" rather than silence.
//!
//! Jobs with a key ([`Workers::spawn_serial`]) never run two at once: the
//! first goes to a thread as above, and later ones wait behind it on a
//! chain that the same thread runs in turn, with no wake-up of its own.
//! A job that runs for `worker_stall_ms` or longer (a file on a cluster
//! that stopped answering) ends its chain: the jobs behind it, and any
//! that come while it runs, go to the pool as unkeyed jobs, so a stuck
//! file keeps its requests waiting one deadline, not one each in a line.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Where one idle thread waits for its next job.
#[derive(Default)]
struct Slot {
    job: Mutex<Option<Job>>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    /// Idle threads, the most recently idle last.
    idle: Vec<Arc<Slot>>,
    /// Jobs waiting for a thread (all threads busy), with when each came.
    queue: VecDeque<(Instant, Job)>,
    /// Threads alive, busy or idle.
    threads: usize,
}

struct Inner {
    state: Mutex<State>,
    /// Jobs waiting behind the running job of their key, by key.
    chains: Mutex<HashMap<u64, Chain>>,
    max_threads: usize,
    idle_timeout: Duration,
    /// Threads allowed beyond `max_threads` while the queue is stalled.
    spare_threads: usize,
    /// How long the oldest queued job waits before a spare thread takes it.
    stall: Duration,
}

/// The running job of a key, and the jobs waiting behind it.
struct Chain {
    running_since: Instant,
    waiting: VecDeque<Job>,
}

/// How the pool grows past its limit when every thread is stuck.
#[derive(Debug, Clone, Copy)]
pub struct Spare {
    pub threads: usize,
    pub stall: Duration,
}

/// A bounded pool of threads, woken most-recently-idle first.
#[derive(Clone)]
pub struct Workers {
    inner: Arc<Inner>,
}

impl Workers {
    /// At most `max_threads` threads (at least one), plus `spare` threads
    /// while the queue is stalled; an idle thread exits after
    /// `idle_timeout`.
    pub fn new(max_threads: usize, idle_timeout: Duration, spare: Spare) -> Workers {
        let inner = Inner {
            state: Mutex::default(),
            chains: Mutex::default(),
            max_threads: max_threads.max(1),
            idle_timeout,
            spare_threads: spare.threads,
            stall: spare.stall,
        };
        Workers { inner: Arc::new(inner) }
    }

    /// Runs `job` on a worker: the most recently idle one, a new one while
    /// under the limit, or the first to finish its current job; when the
    /// queue has stalled, a spare thread takes its oldest job.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let job: Job = Box::new(job);
        let mut st = self.inner.state.lock();
        if let Some(slot) = st.idle.pop() {
            drop(st);
            *slot.job.lock() = Some(job);
            slot.cv.notify_one();
            return;
        }
        let start = if st.threads < self.inner.max_threads {
            job
        } else {
            let now = Instant::now();
            st.queue.push_back((now, job));
            let stalled = st.queue.front().is_some_and(|(since, _)| now.duration_since(*since) >= self.inner.stall);
            if !stalled || st.threads >= self.inner.max_threads + self.inner.spare_threads {
                return;
            }
            let Some((_, oldest)) = st.queue.pop_front() else { return };
            tracing::warn!(threads = st.threads + 1, "every worker is stuck; starting a spare one");
            oldest
        };
        st.threads += 1;
        drop(st);
        let inner = self.inner.clone();
        let spawned = std::thread::Builder::new().name("nfsx-worker".into()).spawn(move || inner.work(start));
        if let Err(e) = spawned {
            // The job went down with the closure; its permit and reply
            // with it (the client retransmits).
            self.inner.state.lock().threads -= 1;
            tracing::error!("cannot start a worker thread: {e}");
        }
    }

    /// Runs `job` after every job of the same `key` handed here before it,
    /// on the thread that runs those, and never beside one of them. Only
    /// the first of a chain costs a wake-up; true when `job` was queued
    /// behind another. A job that panics ends alone: the chain goes on.
    pub fn spawn_serial(&self, key: u64, job: impl FnOnce() + Send + 'static) -> bool {
        let job: Job = Box::new(job);
        let mut chains = self.inner.chains.lock();
        match chains.entry(key) {
            Entry::Occupied(mut chain) if chain.get().running_since.elapsed() < self.inner.stall => {
                chain.get_mut().waiting.push_back(job);
                return true;
            }
            Entry::Occupied(mut chain) => {
                // The running job is stuck: nothing more waits for it.
                let waiting = std::mem::take(&mut chain.get_mut().waiting);
                drop(chains);
                waiting.into_iter().for_each(|j| self.spawn(j));
                self.spawn(job);
                return false;
            }
            Entry::Vacant(slot) => {
                slot.insert(Chain { running_since: Instant::now(), waiting: VecDeque::new() });
            }
        }
        drop(chains);
        let workers = self.clone();
        self.spawn(move || {
            let mut job = job;
            loop {
                let started = Instant::now();
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                let mut chains = workers.inner.chains.lock();
                let Some(chain) = chains.get_mut(&key) else { return };
                if started.elapsed() >= workers.inner.stall {
                    let waiting = std::mem::take(&mut chain.waiting);
                    chains.remove(&key);
                    drop(chains);
                    waiting.into_iter().for_each(|j| workers.spawn(j));
                    return;
                }
                match chain.waiting.pop_front() {
                    Some(next) => {
                        chain.running_since = Instant::now();
                        job = next;
                    }
                    None => {
                        chains.remove(&key);
                        return;
                    }
                }
            }
        });
        false
    }

    /// Threads alive now (for tests and metrics).
    pub fn threads(&self) -> usize {
        self.inner.state.lock().threads
    }
}

impl Inner {
    /// A worker's life: its first job, then queued jobs, then whatever is
    /// handed to it while parked, until it has been idle too long.
    fn work(&self, first: Job) {
        let slot = Arc::new(Slot::default());
        let mut job = first;
        loop {
            job();
            job = match self.next(&slot) {
                Some(j) => j,
                None => return,
            };
        }
    }

    fn next(&self, slot: &Arc<Slot>) -> Option<Job> {
        let mut st = self.state.lock();
        if let Some((_, j)) = st.queue.pop_front() {
            return Some(j);
        }
        st.idle.push(slot.clone());
        drop(st);
        let mut mine = slot.job.lock();
        loop {
            if let Some(j) = mine.take() {
                return Some(j);
            }
            if slot.cv.wait_for(&mut mine, self.idle_timeout).timed_out() {
                // Still idle: leave, unless a job was handed over just now
                // (the spawner took the slot off the stack first).
                drop(mine);
                let mut st = self.state.lock();
                let mut mine = slot.job.lock();
                if let Some(j) = mine.take() {
                    return Some(j);
                }
                if let Some(i) = st.idle.iter().position(|s| Arc::ptr_eq(s, slot)) {
                    st.idle.remove(i);
                    st.threads -= 1;
                    return None;
                }
                // Taken off the stack but not yet filled: the job is on
                // its way; wait for it.
                drop(st);
                while mine.is_none() {
                    slot.cv.wait(&mut mine);
                }
                return mine.take();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    const NO_SPARE: Spare = Spare { threads: 0, stall: Duration::from_secs(1) };

    #[test]
    fn one_job_at_a_time_reuses_one_thread() {
        let w = Workers::new(8, Duration::from_secs(10), NO_SPARE);
        let (tx, rx) = mpsc::channel();
        for _ in 0..50 {
            let tx = tx.clone();
            w.spawn(move || tx.send(std::thread::current().id()).unwrap());
            rx.recv().unwrap();
            // Let the thread park before the next job.
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(w.threads(), 1);
    }

    #[test]
    fn never_more_threads_than_the_limit_and_every_job_runs() {
        let w = Workers::new(3, Duration::from_secs(10), NO_SPARE);
        let done = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        for _ in 0..200 {
            let (done, tx) = (done.clone(), tx.clone());
            w.spawn(move || {
                std::thread::sleep(Duration::from_micros(200));
                if done.fetch_add(1, Ordering::SeqCst) == 199 {
                    tx.send(()).unwrap();
                }
            });
            assert!(w.threads() <= 3);
        }
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 200);
    }

    #[test]
    fn idle_threads_exit_and_new_jobs_start_new_ones() {
        let w = Workers::new(4, Duration::from_millis(50), NO_SPARE);
        let (tx, rx) = mpsc::channel();
        for _ in 0..4 {
            let tx = tx.clone();
            w.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                tx.send(()).unwrap()
            });
        }
        for _ in 0..4 {
            rx.recv().unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while w.threads() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(w.threads(), 0);
        let tx2 = tx.clone();
        w.spawn(move || tx2.send(()).unwrap());
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn jobs_of_one_key_run_one_at_a_time_and_in_order() {
        let w = Workers::new(8, Duration::from_secs(10), NO_SPARE);
        let running = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let mut queued = 0;
        for i in 0..100 {
            let (running, tx) = (running.clone(), tx.clone());
            queued += usize::from(w.spawn_serial(7, move || {
                assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0, "two jobs of one key at once");
                std::thread::sleep(Duration::from_micros(100));
                running.fetch_sub(1, Ordering::SeqCst);
                if i == 3 {
                    panic!("a failing job does not stop its chain");
                }
                tx.send((i, std::thread::current().id())).unwrap();
            }));
        }
        let got: Vec<_> = (0..99).map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
        let order: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, (0..100).filter(|&i| i != 3).collect::<Vec<_>>());
        assert!(queued >= 90, "most waited behind the first: {queued}");
        // Another key meanwhile runs beside them.
        let (tx2, rx2) = mpsc::channel();
        w.spawn_serial(8, move || tx2.send(()).unwrap());
        rx2.recv_timeout(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn a_stuck_job_lets_the_jobs_of_its_key_go_to_other_threads() {
        let w = Workers::new(4, Duration::from_secs(10), Spare { threads: 0, stall: Duration::from_millis(50) });
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let hold = release.clone();
        w.spawn_serial(1, move || {
            let (m, cv) = &*hold;
            let mut go = m.lock();
            while !*go {
                cv.wait(&mut go);
            }
        });
        let (tx, rx) = mpsc::channel();
        // Queued behind the stuck one before it counts as stuck ...
        let tx1 = tx.clone();
        assert!(w.spawn_serial(1, move || tx1.send(1).unwrap()));
        std::thread::sleep(Duration::from_millis(80));
        // ... and released, with this one, once it does.
        let tx2 = tx.clone();
        assert!(!w.spawn_serial(1, move || tx2.send(2).unwrap()));
        let mut got =
            [rx.recv_timeout(Duration::from_secs(5)).unwrap(), rx.recv_timeout(Duration::from_secs(5)).unwrap()];
        got.sort();
        assert_eq!(got, [1, 2], "both ran while the first was still stuck");
        let (m, cv) = &*release;
        *m.lock() = true;
        cv.notify_all();
    }

    #[test]
    fn a_stalled_queue_gets_spare_threads_and_no_more() {
        let w = Workers::new(2, Duration::from_secs(10), Spare { threads: 2, stall: Duration::from_millis(20) });
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        // Two jobs that hang until released take both threads.
        for _ in 0..2 {
            let release = release.clone();
            w.spawn(move || {
                let (m, cv) = &*release;
                let mut go = m.lock();
                while !*go {
                    cv.wait(&mut go);
                }
            });
        }
        let (tx, rx) = mpsc::channel();
        let quick = |tx: mpsc::Sender<()>| move || tx.send(()).unwrap();
        w.spawn(quick(tx.clone()));
        // Not stalled long enough yet: it waits.
        assert!(rx.recv_timeout(Duration::from_millis(5)).is_err());
        std::thread::sleep(Duration::from_millis(30));
        // The next arrival finds the queue stalled: a spare thread runs the
        // oldest job, then the new one.
        w.spawn(quick(tx.clone()));
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(w.threads() <= 4);
        let (m, cv) = &*release;
        *m.lock() = true;
        cv.notify_all();
        for _ in 0..20 {
            w.spawn(quick(tx.clone()));
        }
        for _ in 0..20 {
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
        }
        assert!(w.threads() <= 4, "{} threads", w.threads());
    }
}

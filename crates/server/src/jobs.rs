//! Where the protocol core's background jobs run ([`server_core::Jobs`]):
//! each on a thread of its own, named after the job. They are few and
//! long (an asynchronous COPY; over a shared file system, one job each
//! that gives back store delegations, releases store locks and watches
//! for another server's first OPEN that denies).
//!
//! Some of them hold the core, and with it the file systems: a stopping
//! server waits for them ([`Threads::wait`]), or the process would end
//! before the last holder lets go and a Ceph export would never unmount,
//! leaving its session to hold capabilities until the metadata server
//! times it out.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use server_core::Jobs;

/// How often a stopping server looks whether the jobs have ended.
const WAIT_POLL: Duration = Duration::from_millis(20);

#[derive(Debug, Default)]
pub struct Threads {
    running: Mutex<Vec<JoinHandle<()>>>,
}

impl Threads {
    /// Waits up to `limit` for every job to end; the number still running
    /// after that.
    pub fn wait(&self, limit: Duration) -> usize {
        let deadline = Instant::now() + limit;
        loop {
            let mut running = self.running.lock();
            for t in std::mem::take(&mut *running) {
                if t.is_finished() {
                    let _ = t.join();
                } else {
                    running.push(t);
                }
            }
            if running.is_empty() || Instant::now() >= deadline {
                return running.len();
            }
            drop(running);
            std::thread::sleep(WAIT_POLL);
        }
    }
}

impl Jobs for Threads {
    fn start(&self, name: &'static str, job: Box<dyn FnOnce() + Send>) -> bool {
        match std::thread::Builder::new().name(name.into()).spawn(job) {
            Ok(t) => {
                let mut running = self.running.lock();
                // Jobs that ended (a finished COPY) are not kept.
                running.retain(|t| !t.is_finished());
                running.push(t);
                true
            }
            Err(e) => {
                tracing::error!(job = name, "cannot start a thread: {e}");
                false
            }
        }
    }
}

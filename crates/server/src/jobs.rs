//! Where the protocol core's background jobs run ([`server_core::Jobs`]):
//! each on a thread of its own, named after the job. They are few and
//! long (an asynchronous COPY; over a shared file system, one job each
//! that gives back store delegations, releases store locks and watches
//! for another server's first OPEN that denies).

use server_core::Jobs;

#[derive(Debug, Default)]
pub struct Threads;

impl Jobs for Threads {
    fn start(&self, name: &'static str, job: Box<dyn FnOnce() + Send>) -> bool {
        match std::thread::Builder::new().name(name.into()).spawn(job) {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(job = name, "cannot start a thread: {e}");
                false
            }
        }
    }
}

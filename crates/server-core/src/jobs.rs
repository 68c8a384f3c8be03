//! Background work the core hands to the embedding server: an asynchronous
//! COPY, and over file systems shared with other servers the giving back
//! of store delegations, the release of store locks and the watch for
//! another server's first OPEN that denies. The core starts no threads of
//! its own (it is a library any transport can drive, and tests run it in
//! one thread): it asks [`Jobs::start`] to run each such job, and the
//! server decides where (`server::jobs::Threads` runs each on a thread).

/// Where the core's background jobs run.
pub trait Jobs: Send + Sync + 'static {
    /// Runs `job`, which may block (on the backend, on a channel) for a
    /// long time, away from the request that asked; `name` names it for
    /// logs and thread lists. False when it cannot be started: the caller
    /// then does without it, as it says.
    fn start(&self, name: &'static str, job: Box<dyn FnOnce() + Send>) -> bool;
}

/// Runs no job: a core no server has given a place to run them. An
/// asynchronous COPY is then refused at its start (the client copies
/// synchronously), and a shared file system's background work is done
/// without, as when a thread cannot be made.
#[derive(Debug, Default)]
pub struct NoJobs;

impl Jobs for NoJobs {
    fn start(&self, name: &'static str, _job: Box<dyn FnOnce() + Send>) -> bool {
        tracing::debug!(job = name, "no place to run background jobs");
        false
    }
}

//! Whether the cluster is answering, judged by the calls waiting on it.
//!
//! libcephfs has no deadline of its own for a metadata or data request: a
//! call made while the MDS or the OSDs are away waits until they are back.
//! An NFS server must not go silent meanwhile (clients would retransmit,
//! then hang), so every backend call is registered here while it runs.
//! Once one has waited `call_deadline_secs`, the cluster counts as away:
//! new calls fail at once with [`VfsError::Delay`] (NFS3ERR_JUKEBOX,
//! NFS4ERR_DELAY: the client tries again later) instead of joining the
//! wait. The calls already waiting stay in libcephfs; when the last of
//! them that passed the deadline returns, the cluster answers again and
//! new calls go through. No probe is needed: those calls are the probe.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use vfs::{VfsError, VfsResult};

pub(crate) struct Health {
    deadline: Duration,
    calls: Mutex<Calls>,
    /// Calls answered DELAY because the cluster was away.
    pub refused: AtomicU64,
}

#[derive(Default)]
struct Calls {
    /// Start of every call in flight, by a sequence number that grows
    /// with the start time, so the first entry is the oldest call.
    started: BTreeMap<u64, Instant>,
    next: u64,
    /// Since when the cluster has counted as away.
    away_since: Option<Instant>,
}

/// One call in flight; unregisters it when dropped.
pub(crate) struct Call<'a> {
    health: &'a Health,
    seq: u64,
}

impl Health {
    pub fn new(deadline: Duration) -> Health {
        Health { deadline, calls: Mutex::default(), refused: AtomicU64::new(0) }
    }

    /// Registers a call about to enter libcephfs, or refuses it while the
    /// cluster is away.
    pub fn enter(&self) -> VfsResult<Call<'_>> {
        let now = Instant::now();
        let mut c = self.calls.lock();
        let oldest = c.started.first_key_value().map(|(_, t)| now.saturating_duration_since(*t));
        if oldest.is_some_and(|waited| waited >= self.deadline) {
            if c.away_since.is_none() {
                c.away_since = Some(now);
                tracing::warn!(
                    waiting = c.started.len(),
                    deadline_secs = self.deadline.as_secs_f64(),
                    "the Ceph cluster is not answering: a call has waited past the deadline; \
                     answering DELAY until it returns"
                );
            }
            drop(c);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(VfsError::Delay);
        }
        let seq = c.next;
        c.next += 1;
        c.started.insert(seq, now);
        Ok(Call { health: self, seq })
    }

    /// Calls in flight now.
    pub fn waiting(&self) -> usize {
        self.calls.lock().started.len()
    }

    /// Whether new calls are being refused now.
    pub fn away(&self) -> bool {
        self.calls.lock().away_since.is_some()
    }

    fn leave(&self, seq: u64) {
        let mut c = self.calls.lock();
        c.started.remove(&seq);
        let Some(since) = c.away_since else { return };
        let now = Instant::now();
        let still_stuck = c.started.first_key_value().is_some_and(|(_, t)| now.duration_since(*t) >= self.deadline);
        if !still_stuck {
            c.away_since = None;
            tracing::info!(away_secs = now.duration_since(since).as_secs_f64(), "the Ceph cluster is answering again");
        }
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        self.health.leave(self.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_only_while_a_call_is_past_the_deadline() {
        let h = Health::new(Duration::from_millis(30));
        let stuck = h.enter().unwrap();
        // Younger than the deadline: others still go through.
        drop(h.enter().unwrap());
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(h.enter().err(), Some(VfsError::Delay));
        assert!(h.away());
        assert_eq!(h.refused.load(Ordering::Relaxed), 1);
        // The stuck call returns: the cluster answers again.
        drop(stuck);
        assert!(!h.away());
        drop(h.enter().unwrap());
        assert_eq!(h.waiting(), 0);
    }

    #[test]
    fn stays_away_while_any_late_call_is_still_waiting() {
        let h = Health::new(Duration::from_millis(20));
        let a = h.enter().unwrap();
        let b = h.enter().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert!(h.enter().is_err());
        drop(a);
        assert!(h.away(), "b has waited past the deadline too");
        assert!(h.enter().is_err());
        drop(b);
        assert!(!h.away());
        assert!(h.enter().is_ok());
    }
}

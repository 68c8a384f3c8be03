//! The grace period after a restart (RFC 8881 section 8.4.2), and, on a
//! head of a cluster, the cluster's: while any head's clients reclaim, no
//! head grants new opens or locks that could take what they reclaim.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Which clients may reclaim, and until when.
#[derive(Debug, Default)]
pub(crate) struct Grace {
    /// Client records loaded from the stable store at start.
    pub known: Vec<Vec<u8>>,
    /// End of the grace period on the state clock; `None`: not in grace.
    pub until: Option<Duration>,
    /// Known owners that sent RECLAIM_COMPLETE.
    pub completed: HashSet<Vec<u8>>,
    /// Set while another head of the cluster is in its grace period
    /// (kept by the transport from the cluster's shared record).
    pub cluster: Arc<AtomicBool>,
    /// Set while `until` is: read without the tables' lock
    /// ([`Grace::may_be_in_grace`]).
    pub open: Arc<AtomicBool>,
    /// NFSv3 hosts held locks before the restart and reclaim them through
    /// NLM, which has no RECLAIM_COMPLETE: the period then runs its full
    /// length.
    pub nlm_hosts: usize,
}

/// Whether a grace period may be running, read without the tables' lock:
/// false means none is, so requests that only need to know that (NLM's
/// locks) need not take the tables.
pub(crate) fn may_be_in_grace(open: &AtomicBool, cluster: &AtomicBool) -> bool {
    open.load(Ordering::Acquire) || cluster.load(Ordering::Acquire)
}

impl Grace {
    /// The grace period after a start, for the NFSv4 clients `known`
    /// and `nlm_hosts` NFSv3 hosts (NSM's list) that held state before.
    pub fn start(known: Vec<Vec<u8>>, nlm_hosts: usize, now: Duration, length: Duration) -> Grace {
        let until = if known.is_empty() && nlm_hosts == 0 { None } else { Some(now + length) };
        if nlm_hosts > 0 {
            tracing::info!(hosts = nlm_hosts, clients = known.len(), "grace period: NFSv3 hosts reclaim their locks");
        }
        let open = Arc::new(AtomicBool::new(until.is_some()));
        Grace { known, until, completed: HashSet::new(), cluster: Arc::default(), open, nlm_hosts }
    }

    /// True while new (non-reclaim) opens and locks must get NFS4ERR_GRACE:
    /// this server's clients are reclaiming, or another head's are.
    pub fn in_grace(&mut self, now: Duration) -> bool {
        self.local(now) || self.cluster.load(Ordering::Acquire)
    }

    /// Adds the records of clients another head served (it died; this
    /// head took over its address) and opens, or extends, a grace period
    /// in which they may reclaim here.
    pub fn adopt(&mut self, records: Vec<Vec<u8>>, now: Duration, length: Duration) {
        if records.is_empty() {
            return;
        }
        for r in records {
            if !self.known.contains(&r) {
                self.known.push(r);
            }
        }
        let until = now + length;
        self.until = Some(self.until.map_or(until, |t| t.max(until)));
        self.open.store(true, Ordering::Release);
        tracing::info!(clients = self.known.len(), "NFSv4 grace period for clients taken over from another head");
    }

    /// True while this server's own clients may still reclaim.
    pub fn local(&mut self, now: Duration) -> bool {
        match self.until {
            Some(t) if now < t => true,
            Some(_) => {
                self.end("time ran out");
                false
            }
            None => false,
        }
    }

    /// Whether `owner` held state before the restart.
    pub fn is_known(&self, owner: &[u8]) -> bool {
        self.until.is_some() && self.known.iter().any(|k| &k[..] == owner)
    }

    /// `owner` finished reclaiming; grace ends once every known client has.
    pub fn complete(&mut self, owner: &[u8]) {
        if self.until.is_none() || !self.known.iter().any(|k| &k[..] == owner) {
            return;
        }
        self.completed.insert(owner.to_vec());
        if self.nlm_hosts == 0 && self.known.iter().all(|k| self.completed.contains(k)) {
            self.end("every client completed reclaim");
        }
    }

    /// A known owner that will not reclaim (it expired or was destroyed)
    /// no longer holds the grace period open.
    pub fn forget(&mut self, owner: &[u8]) {
        self.complete(owner);
    }

    fn end(&mut self, why: &str) {
        if self.until.take().is_some() {
            tracing::info!("NFSv4 grace period over: {why}");
        }
        self.open.store(false, Ordering::Release);
        self.known.clear();
        self.completed.clear();
    }
}

//! Asynchronous COPYs (RFC 7862 sections 4.4 and 15.2): a copy too long
//! to finish within its request runs on a thread of its own, named to the
//! client by a copy stateid. OFFLOAD_STATUS reads its progress,
//! OFFLOAD_CANCEL stops it at the next chunk, and its end goes to the
//! client in CB_OFFLOAD. Finished copies are remembered for a lease so
//! that a client whose CB_OFFLOAD was lost can still ask.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use proto::nfs4::*;

/// One copy in the background.
#[derive(Debug)]
pub(crate) struct CopyJob {
    pub client: u64,
    pub stateid: stateid4,
    /// Bytes copied so far (OFFLOAD_STATUS `osr_count`).
    pub copied: AtomicU64,
    /// Set by OFFLOAD_CANCEL; the copy stops before its next chunk.
    pub cancel: AtomicBool,
    /// The copy's status once it ended, and when.
    pub end: parking_lot::Mutex<Option<(nfsstat4, Duration)>>,
}

impl CopyJob {
    pub fn finished(&self) -> Option<nfsstat4> {
        self.end.lock().map(|(s, _)| s)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Offloads {
    jobs: HashMap<[u8; 12], Arc<CopyJob>>,
}

impl Offloads {
    /// Copies running now.
    pub fn running(&self) -> usize {
        self.jobs.values().filter(|j| j.finished().is_none()).count()
    }

    /// Registers a copy under a fresh stateid `other`; copies that ended
    /// more than `keep` ago are forgotten first.
    pub fn start(&mut self, client: u64, other: [u8; 12], now: Duration, keep: Duration) -> Arc<CopyJob> {
        self.jobs.retain(|_, j| j.end.lock().is_none_or(|(_, at)| now.saturating_sub(at) < keep));
        let job = Arc::new(CopyJob {
            client,
            stateid: stateid4 { seqid: 1, other },
            copied: AtomicU64::new(0),
            cancel: AtomicBool::new(false),
            end: parking_lot::Mutex::new(None),
        });
        self.jobs.insert(other, job.clone());
        job
    }

    /// The copy `stateid` names, if `client` started it.
    pub fn get(&self, client: u64, stateid: &stateid4) -> Option<Arc<CopyJob>> {
        self.jobs.get(&stateid.other).filter(|j| j.client == client).cloned()
    }

    /// OFFLOAD_CANCEL: asks the copy to stop and forgets it.
    pub fn cancel(&mut self, client: u64, stateid: &stateid4) -> bool {
        match self.get(client, stateid) {
            Some(job) => {
                job.cancel.store(true, Ordering::Release);
                self.jobs.remove(&stateid.other);
                true
            }
            None => false,
        }
    }

    /// Stops every copy of a client whose state is being taken away.
    pub fn cancel_client(&mut self, client: u64) {
        self.jobs.retain(|_, j| {
            if j.client == client {
                j.cancel.store(true, Ordering::Release);
            }
            j.client != client
        });
    }
}

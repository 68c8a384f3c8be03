//! Requests the core parked ([`server_core::Parked`]): a GETATTR waiting
//! for a write delegation's holder to answer CB_GETATTR. They hold no
//! thread while they wait: each is kept here with its connection's reply
//! sink and permit, and handed to a worker to run on when the answer
//! arrives (the answering record's [`server_core::Outcome::woken`]) or
//! its timeout passes, whichever comes first; the other finds it gone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use server_core::{Parked, PeerInfo, WaitId};

use super::{finish, InFlight};
use crate::sink::ReplySink;
use crate::Shared;

/// One parked request and what its reply needs.
pub(crate) struct Waiting {
    pub parked: Box<Parked>,
    pub peer: Arc<PeerInfo>,
    pub sink: Arc<ReplySink>,
    pub permit: InFlight,
    pub start: Instant,
}

pub(crate) struct Parking {
    /// Where the timeouts run.
    rt: tokio::runtime::Handle,
    waiting: Mutex<HashMap<WaitId, Waiting>>,
}

impl Parking {
    pub fn new(rt: tokio::runtime::Handle) -> Parking {
        Parking { rt, waiting: Mutex::new(HashMap::new()) }
    }
}

/// Keeps `w` until its answer or its timeout.
pub(super) fn park(shared: &Arc<Shared>, w: Waiting) {
    shared.metrics.requests_parked.inc();
    let (wait, timeout) = (w.parked.wait_id(), w.parked.timeout());
    shared.parking.waiting.lock().insert(wait, w);
    let s = shared.clone();
    shared.parking.rt.spawn(async move {
        tokio::time::sleep(timeout).await;
        resume(&s, wait);
    });
}

/// The answer `wait` waited for came.
pub(super) fn wake(shared: &Arc<Shared>, wait: WaitId) {
    if resume(shared, wait) {
        shared.metrics.requests_woken.inc();
    }
}

/// Runs parked request `wait` on, on a worker; false when it is no
/// longer parked (resumed already).
fn resume(shared: &Arc<Shared>, wait: WaitId) -> bool {
    let Some(w) = shared.parking.waiting.lock().remove(&wait) else { return false };
    let s = shared.clone();
    shared.workers.spawn(move || {
        let Waiting { parked, peer, sink, permit, start } = w;
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.core.resume(parked, &peer)));
        match out {
            Ok(out) => finish(&s, &peer, &sink, out, permit, start),
            Err(_) => {
                tracing::error!(peer = %peer.addr, "request handler panicked on resumption; request dropped");
                super::done(&s);
            }
        }
    });
    true
}

//! Sessions, slot tables and the per-slot reply cache (RFC 8881 2.10).

use std::collections::{HashMap, VecDeque};
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use proto::nfs4::{channel_attrs4, nfs_cb_argop4, sessionid4};

use super::lease::Lease;

/// What a slot remembers of its last request.
#[derive(Debug, Clone)]
pub(crate) enum Cached {
    /// Never used: a request with sequence id 0 is SEQ_MISORDERED.
    Initial,
    /// The reply body (status, tag, results) to send again.
    Reply(Vec<Bytes>),
    /// The reply was not kept (`sa_cachethis` false or too large).
    Uncached,
}

#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub seqid: u32,
    /// Set through [`Session::set_busy`], which keeps the count.
    pub busy: bool,
    /// Digest of the request that last used the slot.
    pub digest: u64,
    pub cached: Cached,
}

/// Bytes of a request's start digested: the SEQUENCE and every operation
/// of an ordinary compound, and a WRITE's handle, stateid and offset.
const DIGEST_HEAD_BYTES: usize = 1024;
/// Bytes of a request's end digested too, so a long request that differs
/// only near its end (the data of a large WRITE) still differs.
const DIGEST_TAIL_BYTES: usize = 256;

/// Digest of a request, to tell a retransmission from a different request
/// that reuses a slot and sequence id (NFS4ERR_SEQ_FALSE_RETRY). Its
/// length, start and end only: hashing all of a 1 MiB WRITE cost more
/// server CPU than the rest of the request (a profile of 1 MiB WRITEs
/// showed 13% of the server's time in this hash), and a client that reuses
/// a slot for another request of the same length, start and end is not
/// one this check could protect anyway.
pub(crate) fn digest(raw: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write_usize(raw.len());
    if raw.len() <= DIGEST_HEAD_BYTES + DIGEST_TAIL_BYTES {
        h.write(raw);
    } else {
        h.write(&raw[..DIGEST_HEAD_BYTES]);
        h.write(&raw[raw.len() - DIGEST_TAIL_BYTES..]);
    }
    h.finish()
}

/// Whether the back channel answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CbState {
    /// Bound, the CB_NULL probe not answered yet.
    Unknown,
    Up,
    Down,
}

/// A back-channel slot (we are the requester).
#[derive(Debug, Clone, Default)]
pub(crate) struct CbSlot {
    pub seqid: u32,
    /// Xid of the callback in flight on the slot.
    pub busy: Option<u32>,
}

#[derive(Debug)]
pub(crate) struct BackChannel {
    pub conn: u64,
    pub program: u32,
    pub state: CbState,
    pub slots: Vec<CbSlot>,
    /// Operations per CB_COMPOUND the client takes.
    pub max_ops: u32,
    /// Largest CB_COMPOUND the client takes (`ca_maxrequestsize`).
    pub max_request: u32,
    /// Callbacks waiting for a free back-channel slot (bounded): the
    /// operations of one CB_COMPOUND each, after its CB_SEQUENCE.
    pub queue: VecDeque<Vec<nfs_cb_argop4>>,
}

/// Longest recall queue per back channel.
pub(crate) const MAX_QUEUED_RECALLS: usize = 1024;

/// Connection directions bound to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnBinding {
    pub conn: u64,
    pub fore: bool,
    pub back: bool,
}

/// Length of the window over which slot use is measured before the target
/// highest slot is raised or lowered.
pub(crate) const TARGET_WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct Session {
    pub id: sessionid4,
    pub client: u64,
    /// The client's lease, renewed by SEQUENCE without the tables' lock.
    pub lease: Arc<Lease>,
    /// Removed from the table: a SEQUENCE that found it just before
    /// answers BADSESSION rather than run in a dead session.
    pub destroyed: bool,
    pub flags: u32,
    pub fore: channel_attrs4,
    pub back: channel_attrs4,
    pub slots: Vec<Slot>,
    /// Slots busy now: counted as they change, since SEQUENCE needs the
    /// figure and a session has up to `max_slots` (1024) slots to count.
    busy: u32,
    /// Slots the client is asked to use (`sr_target_highest_slotid + 1`).
    pub target: u32,
    /// Most slots in use (or declared by `sa_highest_slotid`) in the
    /// current window.
    pub peak: u32,
    pub window_start: Duration,
    pub conns: Vec<ConnBinding>,
    pub cb_program: u32,
    /// The flavors callbacks may go under, in the client's order.
    pub cb_sec: Vec<super::cb_sec::CbOffer>,
    pub backchannel: Option<BackChannel>,
}

impl Session {
    pub fn new(
        id: sessionid4,
        client: u64,
        lease: Arc<Lease>,
        fore: channel_attrs4,
        back: channel_attrs4,
        initial_target: u32,
        now: Duration,
    ) -> Session {
        let n = fore.ca_maxrequests.max(1);
        let slot = Slot { seqid: 0, busy: false, digest: 0, cached: Cached::Initial };
        Session {
            id,
            client,
            lease,
            destroyed: false,
            flags: 0,
            fore,
            back,
            slots: vec![slot; n as usize],
            busy: 0,
            target: initial_target.clamp(1, n),
            peak: 0,
            window_start: now,
            conns: Vec::new(),
            cb_program: 0,
            cb_sec: Vec::new(),
            backchannel: None,
        }
    }

    pub fn busy_slots(&self) -> u32 {
        self.busy
    }

    /// Marks slot `i` (in the table) busy or free.
    pub fn set_busy(&mut self, i: usize, busy: bool) {
        let Some(slot) = self.slots.get_mut(i) else { return };
        if slot.busy != busy {
            slot.busy = busy;
            if busy {
                self.busy += 1;
            } else {
                self.busy -= 1;
            }
        }
    }

    /// Raises or lowers the target highest slot from the use seen in the
    /// windows that ended; `in_use` is what the request at `now` shows
    /// (slots busy including its own, or one more than the client's
    /// `sa_highest_slotid`, whichever is more). Doubling when three quarters of the
    /// target were in use, shrinking by a quarter per window in which
    /// under half was.
    pub fn adjust_target(&mut self, now: Duration, in_use: u32) {
        let n = self.slots.len() as u32;
        // `in_use` may come from the client's sa_highest_slotid: no more
        // slots than the table has can be in use, and the arithmetic below
        // must not overflow on a forged value.
        let in_use = in_use.min(n);
        let elapsed = now.saturating_sub(self.window_start);
        if elapsed >= TARGET_WINDOW {
            let windows = (elapsed.as_nanos() / TARGET_WINDOW.as_nanos()).min(64) as u32;
            let mut peak = self.peak;
            for _ in 0..windows {
                if u64::from(peak) * 4 >= u64::from(self.target) * 3 {
                    self.target = (self.target.saturating_mul(2)).min(n);
                } else if u64::from(peak) * 2 < u64::from(self.target) {
                    let lowered = self.target - (self.target / 4).max(1);
                    self.target = lowered.max(peak).max(1);
                }
                // Windows after the first saw no requests at all.
                peak = 0;
            }
            self.window_start = now;
            self.peak = 0;
        }
        self.peak = self.peak.max(in_use);
        // Use beyond the whole target within one window raises it at once
        // (the client is obviously able to use more).
        if self.peak > self.target {
            self.target = self.peak.min(n);
        }
    }

    pub fn back_bound(&self) -> bool {
        self.backchannel.as_ref().is_some_and(|b| b.state != CbState::Down)
    }
}

/// A session behind its own lock, with the client it belongs to (which
/// never changes) beside it, so that finding a client's sessions locks
/// none of them.
type Entry = (u64, Arc<Mutex<Session>>);

/// Every session, each under a lock of its own: a compound's SEQUENCE
/// locks only its session. Lock order: the tables, then this table, then
/// a session; nothing takes the tables or this table's write lock while
/// it holds a session.
#[derive(Default)]
pub(crate) struct SessionTable {
    map: RwLock<HashMap<sessionid4, Entry>>,
    counter: AtomicU64,
}

impl SessionTable {
    /// A new session id: the boot time, a counter and the client id, so
    /// ids never repeat within or across server instances.
    pub fn new_id(&self, boot: u32, client: u64) -> sessionid4 {
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let mut id = [0u8; 16];
        id[..4].copy_from_slice(&boot.to_be_bytes());
        id[4..12].copy_from_slice(&n.to_be_bytes());
        id[12..].copy_from_slice(&(client as u32).to_be_bytes());
        id
    }

    pub fn insert(&self, s: Session) -> Arc<Mutex<Session>> {
        let (id, client) = (s.id, s.client);
        let s = Arc::new(Mutex::new(s));
        self.map.write().insert(id, (client, s.clone()));
        s
    }

    pub fn get(&self, id: &sessionid4) -> Option<Arc<Mutex<Session>>> {
        self.map.read().get(id).map(|(_, s)| s.clone())
    }

    /// The sessions of `client` (none locked).
    pub fn of_client(&self, client: u64) -> Vec<Arc<Mutex<Session>>> {
        self.map.read().values().filter(|(c, _)| *c == client).map(|(_, s)| s.clone()).collect()
    }

    /// Every session (none locked).
    pub fn all(&self) -> Vec<Arc<Mutex<Session>>> {
        self.map.read().values().map(|(_, s)| s.clone()).collect()
    }

    /// Removes a session and marks it destroyed; its client.
    pub(super) fn take(&self, id: &sessionid4) -> Option<u64> {
        let (client, s) = self.map.write().remove(id)?;
        s.lock().destroyed = true;
        Some(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_tells_requests_apart_by_length_start_and_end() {
        let big = vec![7u8; 1 << 20];
        assert_eq!(digest(&big), digest(&big.clone()));
        let mut head = big.clone();
        head[10] = 8;
        let mut tail = big.clone();
        tail[(1 << 20) - 1] = 8;
        assert_ne!(digest(&big), digest(&head));
        assert_ne!(digest(&big), digest(&tail));
        assert_ne!(digest(&big), digest(&big[..big.len() - 4]));
        assert_ne!(digest(b"short one"), digest(b"short two"));
    }

    fn channel(slots: u32) -> channel_attrs4 {
        channel_attrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: 1 << 20,
            ca_maxresponsesize: 1 << 20,
            ca_maxresponsesize_cached: 1 << 16,
            ca_maxoperations: 16,
            ca_maxrequests: slots,
            ca_rdma_ird: vec![],
        }
    }

    /// A client's sa_highest_slotid can say anything: the target stays
    /// within the table and nothing overflows (found by the nfs4_compound
    /// fuzz target: `peak * 4` with peak near u32::MAX).
    #[test]
    fn forged_slot_use_keeps_the_target_in_the_table() {
        let mut s = Session::new([0; 16], 1, Arc::default(), channel(8), channel(2), 4, Duration::ZERO);
        s.adjust_target(Duration::ZERO, u32::MAX);
        assert!(s.target <= 8);
        for i in 1..200u64 {
            s.adjust_target(TARGET_WINDOW * i as u32, u32::MAX);
            assert!((1..=8).contains(&s.target));
        }
        s.adjust_target(TARGET_WINDOW * 1000, 0);
        assert!((1..=8).contains(&s.target));
    }
}

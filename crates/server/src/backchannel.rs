//! The registry of open connections: the NFSv4.1 back channel sends
//! callbacks on a connection the client opened (the core names connections
//! by number, this maps numbers to reply sinks), and the accept loop finds
//! the connection idle the longest here when the connection limit is
//! reached. It also keeps the global account of bytes held in records still
//! arriving (`max_partial_record_bytes`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::framer::frame_segments;
use server_core::Backchannel;
use tokio::sync::Notify;

use crate::sink::{ReplySink, Seg};

/// One open connection, as the registry sees it.
pub struct ConnEntry {
    pub sink: Arc<ReplySink>,
    /// Milliseconds since the registry was made, at the last data received.
    last_active: AtomicU64,
    /// Notified to make the connection close itself.
    pub kick: Notify,
    /// Bytes of a record still arriving that it holds.
    partial: AtomicUsize,
}

pub struct Connections {
    next: AtomicU64,
    entries: Mutex<HashMap<u64, Arc<ConnEntry>>>,
    /// Bytes a connection may have waiting for its socket before a
    /// callback to it is given up (the client is not reading).
    max_queued: usize,
    epoch: Instant,
    /// Bytes held in incomplete records, all connections together.
    partial_bytes: AtomicUsize,
    /// Connections holding part of a record.
    partial_conns: AtomicUsize,
}

impl Connections {
    pub fn new(max_queued: usize) -> Connections {
        Connections {
            next: AtomicU64::new(0),
            entries: Mutex::new(HashMap::new()),
            max_queued,
            epoch: Instant::now(),
            partial_bytes: AtomicUsize::new(0),
            partial_conns: AtomicUsize::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Numbers a new connection (from 1) and remembers it.
    pub fn register(&self, sink: Arc<ReplySink>) -> (u64, Arc<ConnEntry>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let entry = Arc::new(ConnEntry {
            sink,
            last_active: AtomicU64::new(self.now_ms()),
            kick: Notify::new(),
            partial: AtomicUsize::new(0),
        });
        self.entries.lock().insert(id, entry.clone());
        (id, entry)
    }

    pub fn unregister(&self, id: u64) {
        self.entries.lock().remove(&id);
    }

    /// Notes that `entry`'s client sent something.
    pub fn touch(&self, entry: &ConnEntry) {
        entry.last_active.store(self.now_ms(), Ordering::Relaxed);
    }

    /// The connection that has received nothing for the longest time.
    /// A scan: it only runs when the connection limit is reached.
    pub fn idlest(&self) -> Option<Arc<ConnEntry>> {
        self.entries.lock().values().min_by_key(|e| e.last_active.load(Ordering::Relaxed)).cloned()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The connection holding part of a record that has received nothing
    /// for at least `stalled_ms`, the longest of all; a scan, run only
    /// while partial records exceed their budget.
    pub fn stalest_partial(&self, stalled_ms: u64) -> Option<Arc<ConnEntry>> {
        let cutoff = self.now_ms().saturating_sub(stalled_ms);
        self.entries
            .lock()
            .values()
            .filter(|e| e.partial.load(Ordering::Relaxed) > 0 && e.last_active.load(Ordering::Relaxed) <= cutoff)
            .min_by_key(|e| e.last_active.load(Ordering::Relaxed))
            .cloned()
    }

    /// Moves `entry`'s share of the partial-record account from `*held`
    /// to `now` bytes.
    pub fn set_partial_of(&self, entry: &ConnEntry, held: &mut usize, now: usize) {
        entry.partial.store(now, Ordering::Relaxed);
        self.set_partial(held, now);
    }

    /// Moves one connection's share of the partial-record account from
    /// `*held` to `now` bytes.
    pub fn set_partial(&self, held: &mut usize, now: usize) {
        if now > *held {
            self.partial_bytes.fetch_add(now - *held, Ordering::Relaxed);
        } else {
            self.partial_bytes.fetch_sub(*held - now, Ordering::Relaxed);
        }
        match (*held > 0, now > 0) {
            (false, true) => {
                self.partial_conns.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                self.partial_conns.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
        *held = now;
    }

    /// Bytes held in incomplete records, all connections together.
    pub fn partial_bytes(&self) -> usize {
        self.partial_bytes.load(Ordering::Relaxed)
    }

    /// Whether a connection holding `held` bytes of a record must stop
    /// reading: records in progress exceed `budget`. One starting a new
    /// record (holding nothing) reads on: small calls complete at once.
    pub fn over_budget(&self, held: usize, budget: usize) -> bool {
        held > 0 && self.partial_bytes() > budget
    }
}

impl Backchannel for Connections {
    fn send(&self, conn: u64, record: Vec<Bytes>) -> bool {
        let Some(entry) = self.entries.lock().get(&conn).cloned() else {
            return false;
        };
        // Never wait: the core calls this with its state locked. A client
        // that has stopped reading loses the callback, which then times
        // out like any unanswered one.
        if entry.sink.queued_bytes() > self.max_queued {
            return false;
        }
        entry.sink.send(frame_segments(record).into_iter().map(Seg::Bytes).collect(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_record_account() {
        let c = Connections::new(0);
        let (mut a, mut b) = (0, 0);
        c.set_partial(&mut a, 3 << 20);
        c.set_partial(&mut b, 1 << 20);
        assert_eq!(c.partial_bytes(), 4 << 20);
        assert!(!c.over_budget(a, 8 << 20), "under the budget");
        assert!(c.over_budget(a, 2 << 20), "over the budget");
        assert!(!c.over_budget(b, 4 << 20), "at the budget is not over it");
        assert!(!c.over_budget(0, 1), "holding nothing never stops");
        c.set_partial(&mut a, 0);
        c.set_partial(&mut b, 0);
        assert_eq!(c.partial_bytes(), 0);
        assert_eq!(c.partial_conns.load(Ordering::Relaxed), 0);
    }
}

//! Per-file write-behind state and the client-wide counters and indexes it
//! keeps up to date.
//!
//! Invariants (checked by the tests through the public API):
//! - `dirty`, `in_flight` and `unstable` each hold disjoint extents;
//! - dirty extents never cross a multiple of `wsize`, so one extent is one WRITE;
//! - unstable data never overlaps dirty or in-flight data (those are newer and
//!   supersede it), so resending unstable data can never overwrite newer bytes;
//! - every unstable extent was acknowledged under `verf`;
//! - a dirty extent is in exactly one of `ready_full`/`ready_partial` iff it
//!   overlaps no WRITE in flight (a rewrite of bytes on the wire waits for the
//!   reply, so two WRITEs of the same bytes never race on the server).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::extents::{self, Piece};
use super::{DeferredError, ReqId};

/// Data the server acknowledged as UNSTABLE, kept until a COMMIT makes it stable.
pub(super) struct Unstable {
    pub data: Bytes,
    /// The COMMIT in flight that covers it, if any.
    pub commit: Option<ReqId>,
}

impl Piece for Unstable {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn split_off(&mut self, at: u64) -> Self {
        Unstable { data: self.data.split_off(at as usize), commit: self.commit }
    }
}

/// Client-wide counters and the indexes `next_action` picks from in O(log n).
#[derive(Default)]
pub(super) struct Global {
    pub wsize: u64,
    pub dirty: u64,
    pub in_flight: u64,
    pub unstable: u64,
    /// Unstable bytes no COMMIT in flight covers yet.
    pub uncovered: u64,
    /// (file, start) of sendable dirty extents that fill a whole aligned wsize block.
    pub ready_full: BTreeSet<(u64, u64)>,
    /// (file, start) of the other sendable dirty extents.
    pub ready_partial: BTreeSet<(u64, u64)>,
    /// (uncovered bytes, file) for files with uncovered unstable data.
    pub by_uncovered: BTreeSet<(u64, u64)>,
}

// The signature must match the map's value type for `extents::gaps`.
#[allow(clippy::ptr_arg)]
fn end_of_vec(s: u64, v: &Vec<u8>) -> u64 {
    s + v.len() as u64
}

fn end_of_flight(_: u64, v: &(u64, ReqId)) -> u64 {
    v.0
}

pub(super) struct FileState<K, E> {
    pub key: K,
    pub idx: u64,
    pub dirty: BTreeMap<u64, Vec<u8>>,
    pub dirty_bytes: u64,
    /// start -> (end, request)
    pub in_flight: BTreeMap<u64, (u64, ReqId)>,
    pub in_flight_bytes: u64,
    pub unstable: BTreeMap<u64, Unstable>,
    pub unstable_bytes: u64,
    pub uncovered: u64,
    pub verf: Option<[u8; 8]>,
    pub commit: Option<ReqId>,
    pub flushing: bool,
    pub error: Option<DeferredError<E>>,
}

impl<K, E> FileState<K, E> {
    pub fn new(key: K, idx: u64) -> Self {
        FileState {
            key,
            idx,
            dirty: BTreeMap::new(),
            dirty_bytes: 0,
            in_flight: BTreeMap::new(),
            in_flight_bytes: 0,
            unstable: BTreeMap::new(),
            unstable_bytes: 0,
            uncovered: 0,
            verf: None,
            commit: None,
            flushing: false,
            error: None,
        }
    }

    /// Nothing cached and nothing on the wire.
    pub fn is_clean(&self) -> bool {
        self.dirty.is_empty() && self.in_flight.is_empty() && self.unstable.is_empty() && self.commit.is_none()
    }

    fn set_uncovered(&mut self, new: u64, g: &mut Global) {
        if self.uncovered > 0 {
            g.by_uncovered.remove(&(self.uncovered, self.idx));
        }
        g.uncovered = g.uncovered - self.uncovered + new;
        self.uncovered = new;
        if new > 0 {
            g.by_uncovered.insert((new, self.idx));
        }
    }

    /// Application data: it supersedes anything cached for the range.
    pub fn write(&mut self, off: u64, data: &[u8], g: &mut Global) {
        self.drop_unstable(off, off + data.len() as u64, g);
        self.insert_split(off, data, g);
    }

    /// Inserts `data` into the dirty map, cut at wsize boundaries.
    fn insert_split(&mut self, mut off: u64, mut data: &[u8], g: &mut Global) {
        while !data.is_empty() {
            let room = (g.wsize - off % g.wsize).min(data.len() as u64) as usize;
            let (piece, rest) = data.split_at(room);
            let (idx, full, partial) = (self.idx, &mut g.ready_full, &mut g.ready_partial);
            let m = extents::merge_insert(&mut self.dirty, off, piece, g.wsize, |s| {
                full.remove(&(idx, s));
                partial.remove(&(idx, s));
            });
            self.dirty_bytes = self.dirty_bytes + m.added - m.removed;
            g.dirty = g.dirty + m.added - m.removed;
            self.reindex(m.start, g);
            off += room as u64;
            data = rest;
        }
    }

    /// Puts the dirty extent at `start` in the right ready set, or none if a
    /// WRITE in flight overlaps it.
    #[allow(unknown_lints, clippy::manual_is_multiple_of)] // u64::is_multiple_of is newer than the MSRV
    fn reindex(&self, start: u64, g: &mut Global) {
        let key = (self.idx, start);
        g.ready_full.remove(&key);
        g.ready_partial.remove(&key);
        let Some(v) = self.dirty.get(&start) else { return };
        let end = start + v.len() as u64;
        if extents::overlaps(&self.in_flight, start, end, end_of_flight) {
            return;
        }
        if start % g.wsize == 0 && v.len() as u64 == g.wsize {
            g.ready_full.insert(key);
        } else {
            g.ready_partial.insert(key);
        }
    }

    /// Re-evaluates the dirty extents over `[a, b)` (after a WRITE there completed).
    pub fn reindex_range(&self, a: u64, b: u64, g: &mut Global) {
        for s in extents::overlapping(&self.dirty, a, b) {
            self.reindex(s, g);
        }
    }

    /// Removes the dirty extent at `start` for sending.
    pub fn take_dirty(&mut self, start: u64, g: &mut Global) -> Vec<u8> {
        let v = self.dirty.remove(&start).expect("ready extent is dirty");
        g.ready_full.remove(&(self.idx, start));
        g.ready_partial.remove(&(self.idx, start));
        self.dirty_bytes -= v.len() as u64;
        g.dirty -= v.len() as u64;
        v
    }

    fn drop_unstable(&mut self, a: u64, b: u64, g: &mut Global) {
        let mut uncovered = self.uncovered;
        for (_, p) in extents::take_range(&mut self.unstable, a, b) {
            self.unstable_bytes -= p.len();
            g.unstable -= p.len();
            if p.commit.is_none() {
                uncovered -= p.len();
            }
        }
        self.set_uncovered(uncovered, g);
    }

    /// Returns older data to dirty where nothing newer (dirty or in flight) is
    /// cached, so it is sent again without overwriting newer bytes.
    pub fn redirty(&mut self, off: u64, data: &[u8], g: &mut Global) {
        let end = off + data.len() as u64;
        for (a, b) in extents::gaps(&self.dirty, off, end, end_of_vec) {
            for (c, d) in extents::gaps(&self.in_flight, a, b, end_of_flight) {
                if let Some(piece) = data.get((c - off) as usize..(d - off) as usize) {
                    self.insert_split(c, piece, g);
                }
            }
        }
    }

    /// Keeps data the server acknowledged as UNSTABLE (under `self.verf`) until
    /// a COMMIT, except where newer data is already cached.
    pub fn add_unstable(&mut self, off: u64, data: Bytes, g: &mut Global) {
        let end = off + data.len() as u64;
        self.drop_unstable(off, end, g);
        let mut added = 0;
        for (a, b) in extents::gaps(&self.dirty, off, end, end_of_vec) {
            for (c, d) in extents::gaps(&self.in_flight, a, b, end_of_flight) {
                let piece = data.slice((c - off) as usize..(d - off) as usize);
                self.unstable.insert(c, Unstable { data: piece, commit: None });
                added += d - c;
            }
        }
        self.unstable_bytes += added;
        g.unstable += added;
        self.set_uncovered(self.uncovered + added, g);
    }

    /// The server lost (or may have lost) every unstable byte: send them again.
    pub fn redirty_all_unstable(&mut self, g: &mut Global) {
        let all = std::mem::take(&mut self.unstable);
        g.unstable -= self.unstable_bytes;
        self.unstable_bytes = 0;
        self.set_uncovered(0, g);
        for (off, p) in all {
            self.redirty(off, &p.data, g);
        }
    }

    /// A COMMIT is being sent: it covers every acknowledged unstable byte.
    pub fn tag_commit(&mut self, id: ReqId, g: &mut Global) {
        for v in self.unstable.values_mut() {
            v.commit.get_or_insert(id);
        }
        self.set_uncovered(0, g);
    }

    /// Drops the unstable data covered by COMMIT `id`.
    pub fn release_commit(&mut self, id: ReqId, g: &mut Global) {
        let keys: Vec<u64> = self.unstable.iter().filter(|(_, v)| v.commit == Some(id)).map(|(&k, _)| k).collect();
        for k in keys {
            let v = self.unstable.remove(&k).expect("key just listed");
            self.unstable_bytes -= v.len();
            g.unstable -= v.len();
        }
    }

    /// Keeps the first error: it is the one fsync/close report (as Linux does).
    pub fn record_error(&mut self, e: DeferredError<E>) {
        self.error.get_or_insert(e);
    }

    /// Removes this file's contribution to the client-wide counters and indexes.
    pub fn detach(&mut self, g: &mut Global) {
        for &s in self.dirty.keys() {
            g.ready_full.remove(&(self.idx, s));
            g.ready_partial.remove(&(self.idx, s));
        }
        self.set_uncovered(0, g);
        g.dirty -= self.dirty_bytes;
        g.in_flight -= self.in_flight_bytes;
        g.unstable -= self.unstable_bytes;
    }
}

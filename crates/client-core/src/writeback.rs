//! Write-behind cache: one per client, over many files.
//!
//! Lever & Honeyman found the Linux client stalling `write()` every ~85 calls
//! because a per-inode request limit forced a synchronous flush. Here nothing
//! counts requests per file: `write()` copies into the cache and returns
//! [`Admit::Accepted`] whenever the client-wide `dirty_budget` has room, and
//! the data goes out behind the writer — full wsize blocks as soon as they are
//! complete (streaming), everything once the cache passes the high watermark
//! (until it is back under the low one), and everything of a file on
//! fsync/close. Writers only wait ([`Admit::Wait`]) when the budget is full.
//!
//! Sans-IO: the caller sends the [`Action`]s from [`Writeback::next_action`]
//! and feeds the replies back with [`Writeback::on_write_reply`] and
//! [`Writeback::on_commit_reply`]. Bytes count against the budget from the
//! moment they are written until the server has them on stable storage (a
//! FILE_SYNC/DATA_SYNC reply or a COMMIT with a matching verifier), because
//! until then they may have to be sent again.

mod extents;
mod file;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
mod types;

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use bytes::Bytes;
use proto::nfs3::stable_how;

use file::{FileState, Global};
pub use types::{Action, Admit, DeferredError, FileStatus, ReqId, WriteOk, WritebackSettings};

struct SentWrite {
    idx: u64,
    offset: u64,
    data: Bytes,
}

enum Choice {
    Write(u64, u64),
    Commit(u64),
}

/// The write-behind cache. `K` names a file (a small id or a file handle);
/// `E` is the error a failed WRITE/COMMIT reports.
pub struct Writeback<K, E> {
    s: WritebackSettings,
    keys: HashMap<K, u64>,
    files: HashMap<u64, FileState<K, E>>,
    g: Global,
    writes: HashMap<ReqId, SentWrite>,
    commits: HashMap<ReqId, u64>,
    flushing: BTreeSet<u64>,
    next_idx: u64,
    next_id: u64,
    background: bool,
}

impl<K, E> std::fmt::Debug for Writeback<K, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writeback")
            .field("files", &self.files.len())
            .field("dirty", &self.g.dirty)
            .field("in_flight", &self.g.in_flight)
            .field("unstable", &self.g.unstable)
            .field("requests", &(self.writes.len() + self.commits.len()))
            .field("background", &self.background)
            .finish()
    }
}

impl<K: Hash + Eq + Clone, E> Writeback<K, E> {
    pub fn new(settings: WritebackSettings) -> Self {
        let s = settings.normalized();
        let g = Global { wsize: s.wsize, ..Global::default() };
        Writeback {
            s,
            keys: HashMap::new(),
            files: HashMap::new(),
            g,
            writes: HashMap::new(),
            commits: HashMap::new(),
            flushing: BTreeSet::new(),
            next_idx: 0,
            next_id: 1,
            background: false,
        }
    }

    pub fn settings(&self) -> &WritebackSettings {
        &self.s
    }

    /// Caches `data` at `offset` of `file`, superseding earlier cached bytes
    /// of the range. O(log n) in the cached extents: a sequential stream just
    /// appends to the extent of the current wsize block. Returns `Wait` (and
    /// caches nothing) only if the budget would be exceeded; a write larger
    /// than the whole budget is accepted into an empty cache so it cannot
    /// deadlock.
    pub fn write(&mut self, file: &K, offset: u64, data: &[u8]) -> Admit {
        if data.is_empty() {
            return Admit::Accepted;
        }
        let total = self.total_bytes();
        if total > 0 && total + data.len() as u64 > self.s.dirty_budget {
            return Admit::Wait;
        }
        let idx = self.idx_or_create(file);
        let f = self.files.get_mut(&idx).expect("file state");
        f.write(offset, data, &mut self.g);
        self.update_mode();
        Admit::Accepted
    }

    /// fsync/close: every cached byte of `file` is to be written and
    /// committed. Done when [`is_clean`](Self::is_clean) turns true; then
    /// [`take_error`](Self::take_error) tells whether it all reached the
    /// server. Writes made meanwhile join the flush.
    pub fn request_flush(&mut self, file: &K) {
        if let Some(&idx) = self.keys.get(file) {
            let f = self.files.get_mut(&idx).expect("file state");
            if !f.is_clean() {
                f.flushing = true;
                self.flushing.insert(idx);
            }
        }
    }

    /// sync/unmount: flush every file.
    pub fn request_flush_all(&mut self) {
        for f in self.files.values_mut() {
            if !f.is_clean() {
                f.flushing = true;
                self.flushing.insert(f.idx);
            }
        }
    }

    /// The next request to send, if any may be sent now. Call it until it
    /// returns `None`, and again after every reply and every accepted write.
    ///
    /// Order: files being flushed (WRITE everything, in offset order; a lone
    /// last extent goes FILE_SYNC to save the COMMIT; COMMIT once nothing is
    /// dirty or in flight); in background mode a COMMIT when enough
    /// acknowledged data waits for one (that is what frees memory); complete
    /// wsize blocks; in background mode partial extents, then a COMMIT of
    /// whatever remains.
    pub fn next_action(&mut self) -> Option<Action<K>> {
        self.update_mode();
        if self.in_flight() >= self.s.max_writes_in_flight {
            return None;
        }
        Some(match self.pick()? {
            Choice::Write(idx, start) => self.send_write(idx, start),
            Choice::Commit(idx) => self.send_commit(idx),
        })
    }

    fn pick(&self) -> Option<Choice> {
        for &idx in &self.flushing {
            let Some(f) = self.files.get(&idx) else { continue };
            let full = self.g.ready_full.range((idx, 0)..=(idx, u64::MAX)).next();
            let partial = self.g.ready_partial.range((idx, 0)..=(idx, u64::MAX)).next();
            if let Some(&(_, start)) = full.into_iter().chain(partial).min() {
                return Some(Choice::Write(idx, start));
            }
            if f.dirty.is_empty() && f.in_flight.is_empty() && f.uncovered > 0 && f.commit.is_none() {
                return Some(Choice::Commit(idx));
            }
        }
        if self.background {
            let batch = ((self.s.high_watermark - self.s.low_watermark) / 2).max(self.s.wsize);
            if self.g.uncovered >= batch {
                if let Some(idx) = self.commit_candidate() {
                    return Some(Choice::Commit(idx));
                }
            }
        }
        if self.background || self.s.start_writeback_of_full_chunks {
            if let Some(&(idx, start)) = self.g.ready_full.first() {
                return Some(Choice::Write(idx, start));
            }
        }
        if self.background {
            if let Some(&(idx, start)) = self.g.ready_partial.first() {
                return Some(Choice::Write(idx, start));
            }
            return self.commit_candidate().map(Choice::Commit);
        }
        None
    }

    /// The file with the most uncommitted acknowledged data and no COMMIT in flight.
    fn commit_candidate(&self) -> Option<u64> {
        self.g
            .by_uncovered
            .iter()
            .rev()
            .map(|&(_, idx)| idx)
            .find(|idx| self.files.get(idx).is_some_and(|f| f.commit.is_none()))
    }

    fn new_id(&mut self) -> ReqId {
        let id = ReqId(self.next_id);
        self.next_id += 1;
        id
    }

    fn send_write(&mut self, idx: u64, start: u64) -> Action<K> {
        let id = self.new_id();
        let f = self.files.get_mut(&idx).expect("file state");
        let lone = f.dirty.len() == 1 && f.in_flight.is_empty() && f.unstable.is_empty() && f.commit.is_none();
        let stable = if f.flushing && lone { stable_how::FILE_SYNC } else { stable_how::UNSTABLE };
        let data = Bytes::from(f.take_dirty(start, &mut self.g));
        let len = data.len() as u64;
        f.in_flight.insert(start, (start + len, id));
        f.in_flight_bytes += len;
        self.g.in_flight += len;
        self.writes.insert(id, SentWrite { idx, offset: start, data: data.clone() });
        Action::Write { id, file: f.key.clone(), offset: start, data, stable }
    }

    fn send_commit(&mut self, idx: u64) -> Action<K> {
        let id = self.new_id();
        let f = self.files.get_mut(&idx).expect("file state");
        f.tag_commit(id, &mut self.g);
        f.commit = Some(id);
        self.commits.insert(id, idx);
        Action::Commit { id, file: f.key.clone() }
    }

    /// Feeds back the reply to WRITE `id`. FILE_SYNC/DATA_SYNC: the bytes are
    /// released. UNSTABLE: kept, under the reply's verifier, until a COMMIT
    /// confirms them; if that verifier differs from the one earlier unstable
    /// data of the file was acknowledged under, the server restarted and that
    /// earlier data is resent. A short write returns the rest to dirty. An
    /// error drops the bytes and is kept for [`take_error`](Self::take_error).
    /// Unknown ids (e.g. of a forgotten file) are ignored.
    pub fn on_write_reply(&mut self, id: ReqId, reply: Result<WriteOk, E>) {
        let Some(w) = self.writes.remove(&id) else { return };
        let Some(f) = self.files.get_mut(&w.idx) else { return };
        let len = w.data.len() as u64;
        let end = w.offset + len;
        f.in_flight.remove(&w.offset);
        f.in_flight_bytes -= len;
        self.g.in_flight -= len;
        match reply {
            Ok(ok) => {
                let n = (ok.count as u64).min(len);
                if n == 0 {
                    f.record_error(DeferredError::ZeroCount { offset: w.offset });
                } else {
                    // Verifiers only matter for UNSTABLE replies (as on Linux):
                    // some servers put nothing meaningful in a FILE_SYNC reply's.
                    if ok.committed == stable_how::UNSTABLE {
                        if f.verf != Some(ok.verf) {
                            f.redirty_all_unstable(&mut self.g);
                            f.verf = Some(ok.verf);
                        }
                        f.add_unstable(w.offset, w.data.slice(..n as usize), &mut self.g);
                    }
                    if n < len {
                        f.redirty(w.offset + n, w.data.get(n as usize..).unwrap_or_default(), &mut self.g);
                    }
                }
            }
            Err(e) => f.record_error(DeferredError::Failed(e)),
        }
        // Rewrites of these bytes that waited for this reply may go now.
        f.reindex_range(w.offset, end, &mut self.g);
        self.settle(w.idx);
    }

    /// Feeds back the reply to COMMIT `id`. A verifier equal to the one the
    /// file's unstable data was acknowledged under releases the data the
    /// COMMIT covered; another verifier means the server restarted and lost
    /// it, so every unstable byte of the file is resent. An error drops the
    /// covered data and is kept for [`take_error`](Self::take_error).
    pub fn on_commit_reply(&mut self, id: ReqId, reply: Result<[u8; 8], E>) {
        let Some(idx) = self.commits.remove(&id) else { return };
        let Some(f) = self.files.get_mut(&idx) else { return };
        f.commit = None;
        match reply {
            Ok(verf) if f.verf == Some(verf) => f.release_commit(id, &mut self.g),
            Ok(verf) => {
                f.redirty_all_unstable(&mut self.g);
                f.verf = Some(verf);
            }
            Err(e) => {
                f.release_commit(id, &mut self.g);
                f.record_error(DeferredError::Failed(e));
            }
        }
        self.settle(idx);
    }

    /// Ends a finished flush and drops the state of clean files.
    fn settle(&mut self, idx: u64) {
        let Some(f) = self.files.get_mut(&idx) else { return };
        if f.is_clean() {
            if f.flushing {
                f.flushing = false;
                self.flushing.remove(&idx);
            }
            if f.error.is_none() {
                let f = self.files.remove(&idx).expect("file state");
                self.keys.remove(&f.key);
            }
        }
        self.update_mode();
    }

    fn update_mode(&mut self) {
        let total = self.total_bytes();
        if total >= self.s.high_watermark && total > 0 {
            self.background = true;
        } else if total <= self.s.low_watermark {
            self.background = false;
        }
    }

    fn idx_or_create(&mut self, file: &K) -> u64 {
        if let Some(&idx) = self.keys.get(file) {
            return idx;
        }
        let idx = self.next_idx;
        self.next_idx += 1;
        self.keys.insert(file.clone(), idx);
        self.files.insert(idx, FileState::new(file.clone(), idx));
        idx
    }

    /// The first deferred error of `file` since the last call (fsync/close report it).
    pub fn take_error(&mut self, file: &K) -> Option<DeferredError<E>> {
        let idx = *self.keys.get(file)?;
        let e = self.files.get_mut(&idx)?.error.take();
        self.settle(idx);
        e
    }

    /// Drops everything cached for `file` (it was removed, or the mount is
    /// going away). Replies to its requests still in flight are ignored.
    pub fn forget(&mut self, file: &K) {
        let Some(idx) = self.keys.remove(file) else { return };
        if let Some(mut f) = self.files.remove(&idx) {
            f.detach(&mut self.g);
        }
        self.flushing.remove(&idx);
        self.update_mode();
    }

    /// Nothing of `file` is cached or on the wire (a requested flush is complete).
    pub fn is_clean(&self, file: &K) -> bool {
        self.keys.get(file).and_then(|idx| self.files.get(idx)).is_none_or(|f| f.is_clean())
    }

    pub fn file_state(&self, file: &K) -> FileStatus {
        let Some(f) = self.keys.get(file).and_then(|idx| self.files.get(idx)) else { return FileStatus::default() };
        FileStatus {
            dirty: f.dirty_bytes,
            in_flight: f.in_flight_bytes,
            unstable: f.unstable_bytes,
            writes_in_flight: f.in_flight.len(),
            commit_in_flight: f.commit.is_some(),
            flushing: f.flushing,
            error_pending: f.error.is_some(),
        }
    }

    /// Read-your-writes: copies the bytes of `[offset, offset + buf.len())`
    /// this cache holds for `file` (dirty, in flight, or awaiting COMMIT — all
    /// at least as new as the server's) over `buf`, which the caller filled
    /// from the server or a data cache. Returns how many bytes were copied.
    pub fn overlay(&self, file: &K, offset: u64, buf: &mut [u8]) -> usize {
        let Some(f) = self.keys.get(file).and_then(|idx| self.files.get(idx)) else { return 0 };
        let end = offset + buf.len() as u64;
        let mut copied = 0;
        let mut copy = |s: u64, data: &[u8]| {
            let (a, b) = (s.max(offset), (s + data.len() as u64).min(end));
            if a >= b {
                return;
            }
            let to = buf.get_mut((a - offset) as usize..(b - offset) as usize);
            let from = data.get((a - s) as usize..(b - s) as usize);
            if let (Some(to), Some(from)) = (to, from) {
                to.copy_from_slice(from);
                copied += (b - a) as usize;
            }
        };
        let from = |first: Option<u64>| first.unwrap_or(offset).min(offset);
        for (&s, v) in f.dirty.range(from(f.dirty.range(..offset).next_back().map(|(&s, _)| s))..end) {
            copy(s, v);
        }
        for (&s, (_, id)) in f.in_flight.range(from(f.in_flight.range(..offset).next_back().map(|(&s, _)| s))..end) {
            if let Some(w) = self.writes.get(id) {
                copy(s, &w.data);
            }
        }
        for (&s, u) in f.unstable.range(from(f.unstable.range(..offset).next_back().map(|(&s, _)| s))..end) {
            copy(s, &u.data);
        }
        copied
    }

    /// End of the furthest byte cached for `file`: the file size the
    /// application sees is at least this, before the server knows of it.
    pub fn cached_end(&self, file: &K) -> Option<u64> {
        let f = self.keys.get(file).and_then(|idx| self.files.get(idx))?;
        let dirty = f.dirty.iter().next_back().map(|(&s, v)| s + v.len() as u64);
        let flight = f.in_flight.values().next_back().map(|&(e, _)| e);
        let unstable = f.unstable.iter().next_back().map(|(&s, u)| s + u.data.len() as u64);
        dirty.max(flight).max(unstable)
    }

    /// Bytes counted against the budget: dirty + in flight + unstable.
    pub fn total_bytes(&self) -> u64 {
        self.g.dirty + self.g.in_flight + self.g.unstable
    }

    /// Bytes written by the application and not yet sent.
    pub fn dirty_bytes(&self) -> u64 {
        self.g.dirty
    }

    /// Bytes in WRITEs awaiting their reply.
    pub fn in_flight_bytes(&self) -> u64 {
        self.g.in_flight
    }

    /// Bytes acknowledged UNSTABLE and awaiting a COMMIT.
    pub fn unstable_bytes(&self) -> u64 {
        self.g.unstable
    }

    /// WRITE and COMMIT requests awaiting their reply.
    pub fn in_flight(&self) -> usize {
        self.writes.len() + self.commits.len()
    }

    /// Whether background writeback is on (between crossing the high
    /// watermark and falling back to the low one).
    pub fn in_background(&self) -> bool {
        self.background
    }
}

//! Byte-range locks, shared by NFSv4 LOCK and NLM so that v3 and v4
//! locks conflict with each other.
//!
//! Locks are POSIX-style and advisory: each owner holds a set of
//! non-overlapping ranges per file, each READ (shared) or WRITE
//! (exclusive). Locking a range an owner already holds in part replaces
//! that part (upgrade or downgrade, splitting as needed); unlocking a
//! sub-range splits a lock; adjacent or overlapping ranges of one owner
//! and type merge. Ranges are inclusive (`start..=end`), so a lock to
//! the end of the file (`end == u64::MAX`) needs no special value.
//!
//! A blocking NLM request that meets a conflict waits in its file's queue
//! ([`Waiter`]), in arrival order. Whatever frees a range (an unlock, a
//! downgrade, a CLOSE, a lease running out, a host restarting) hands it
//! to the first waiters that now fit, under the same hold of the shard,
//! so nothing slips in between; who got what is queued in the
//! [`LockBook`] for NLM to tell them (NLM_GRANTED). A new request, NLM or
//! NFSv4, also yields to an earlier waiter of another owner it would
//! conflict with, so that a steady stream of readers cannot starve a
//! waiting writer.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::FileKey;
use crate::nlm::blocked::GrantTo;

/// Who holds a lock. Locks of different owners conflict; one owner's
/// locks never conflict with each other.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum LockOwner {
    /// An NFSv4 lock-owner.
    V4 { client: u64, owner: Bytes },
    /// An NLM lock holder: the caller's host name, its process id
    /// (`svid`) and its opaque owner handle.
    Nlm { caller: Bytes, svid: u32, oh: Bytes },
}

impl LockOwner {
    pub fn client(&self) -> Option<u64> {
        match self {
            LockOwner::V4 { client, .. } => Some(*client),
            LockOwner::Nlm { .. } => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockKind {
    Read,
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lock {
    pub owner: LockOwner,
    pub kind: LockKind,
    /// First byte.
    pub start: u64,
    /// Last byte (inclusive); `u64::MAX` for "to the end of the file".
    pub end: u64,
}

impl Lock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }

    /// The NFSv4 length of this lock (`u64::MAX` when it runs to the end).
    pub fn length(&self) -> u64 {
        if self.end == u64::MAX {
            u64::MAX
        } else {
            self.end - self.start + 1
        }
    }
}

/// The inclusive range of an NFSv4 (offset, length) pair (RFC 8881
/// 18.10.3): NFS4ERR_INVAL, given as `None`, for a zero length or a range
/// that runs past `u64::MAX` without being "to the end of the file".
pub(crate) fn range_of(offset: u64, length: u64) -> Option<(u64, u64)> {
    if length == 0 {
        return None;
    }
    if length == u64::MAX {
        return Some((offset, u64::MAX));
    }
    let end = offset.checked_add(length)?;
    Some((offset, end - 1))
}

/// A blocked lock request waiting for its range.
#[derive(Debug, Clone)]
pub(crate) struct Waiter {
    pub owner: LockOwner,
    pub kind: LockKind,
    pub start: u64,
    pub end: u64,
    /// Whom to tell once it is granted.
    pub grant: Arc<GrantTo>,
}

impl Waiter {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }

    fn as_lock(&self) -> Lock {
        Lock { owner: self.owner.clone(), kind: self.kind, start: self.start, end: self.end }
    }
}

/// A waiter's lock, taken when its range came free: NLM tells the owner.
#[derive(Debug, Clone)]
pub(crate) struct Granted {
    pub file: FileKey,
    pub owner: LockOwner,
    pub start: u64,
    pub end: u64,
    pub grant: Arc<GrantTo>,
}

/// Why a blocked request was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueFull {
    /// `max_blocked` requests wait already.
    All,
    /// The host has `max_blocked_per_host` waiting.
    Host,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockError {
    /// Another owner holds this conflicting lock.
    Conflict(Lock),
    /// The owner's client would hold more locks than allowed.
    TooMany,
}

/// What the lock lists of every file shard share: how many locks each
/// NFSv4 client holds (for `max_locks_per_client`) and the owners whose
/// locks went all at once. Its locks are leaves: taken under a shard's,
/// and nothing is taken under them.
#[derive(Debug, Default)]
pub(crate) struct LockBook {
    per_client: parking_lot::Mutex<HashMap<u64, usize>>,
    /// Whether to queue in `released` every (file, owner) whose locks
    /// went all at once (a CLOSE, a lease expiring, a client host
    /// restarting), for a backend shared with other servers that holds
    /// the locks too (`crate::shared_locks`).
    track_released: AtomicBool,
    released: parking_lot::Mutex<Vec<(FileKey, LockOwner)>>,
    /// Set whenever `released` gains entries, so the server need not look
    /// after every request.
    pub released_pending: Arc<AtomicBool>,
    /// Waiters granted since NLM last looked.
    grants: parking_lot::Mutex<Vec<Granted>>,
    /// Set whenever `grants` gains entries.
    pub grants_pending: AtomicBool,
    /// Waiters queued, all files together, and per host.
    blocked: AtomicUsize,
    blocked_per_host: parking_lot::Mutex<HashMap<Bytes, usize>>,
}

impl LockBook {
    pub fn track_released(&self, on: bool) {
        self.track_released.store(on, Ordering::Relaxed);
    }

    /// The (file, owner) pairs released since the last call.
    pub fn take_released(&self) -> Vec<(FileKey, LockOwner)> {
        std::mem::take(&mut *self.released.lock())
    }

    fn queue_released(&self, mut dropped: Vec<(FileKey, LockOwner)>) {
        if !self.track_released.load(Ordering::Relaxed) || dropped.is_empty() {
            return;
        }
        dropped.dedup();
        self.released.lock().extend(dropped);
        self.released_pending.store(true, Ordering::Release);
    }

    /// Changes `owner`'s count from `before` to `after` locks, unless that
    /// takes its client past `max` (checked and changed at once, so that
    /// two shards locking for one client cannot both pass the cap).
    fn admit(&self, owner: &LockOwner, before: usize, after: usize, max: usize) -> Result<(), LockError> {
        let Some(client) = owner.client() else { return Ok(()) };
        let mut counts = self.per_client.lock();
        let held = counts.get(&client).copied().unwrap_or(0);
        if after > before && held.saturating_sub(before) + after > max {
            return Err(LockError::TooMany);
        }
        let n = held.saturating_sub(before) + after;
        if n == 0 {
            counts.remove(&client);
        } else {
            counts.insert(client, n);
        }
        Ok(())
    }

    /// Locks held by NFSv4 `client`.
    #[cfg(test)]
    pub fn count_for_client(&self, client: u64) -> usize {
        self.per_client.lock().get(&client).copied().unwrap_or(0)
    }

    /// The waiters granted since the last call.
    pub fn take_grants(&self) -> Vec<Granted> {
        // A load first: this runs after every request, and a swap would
        // write the shared line each time.
        if !self.grants_pending.load(Ordering::Acquire) || !self.grants_pending.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *self.grants.lock())
    }

    fn push_grants(&self, granted: Vec<Granted>) {
        if granted.is_empty() {
            return;
        }
        self.grants.lock().extend(granted);
        self.grants_pending.store(true, Ordering::Release);
    }

    /// Blocked requests waiting now.
    pub fn blocked(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Counts one more waiter of `host` unless that passes a cap.
    fn try_block(&self, host: &Bytes, max: usize, max_per_host: usize) -> Result<(), QueueFull> {
        let mut per_host = self.blocked_per_host.lock();
        if self.blocked.load(Ordering::Relaxed) >= max {
            return Err(QueueFull::All);
        }
        let n = per_host.entry(host.clone()).or_default();
        if *n >= max_per_host {
            return Err(QueueFull::Host);
        }
        *n += 1;
        self.blocked.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// One waiter of `host` left its queue.
    fn unblock(&self, host: &Bytes) {
        let mut per_host = self.blocked_per_host.lock();
        if let Some(n) = per_host.get_mut(host) {
            *n -= 1;
            if *n == 0 {
                per_host.remove(host);
            }
            self.blocked.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The host a waiter is counted against.
fn host_of(owner: &LockOwner) -> Bytes {
    match owner {
        LockOwner::Nlm { caller, .. } => caller.clone(),
        LockOwner::V4 { .. } => Bytes::new(),
    }
}

/// The byte-range locks of the files of one shard
/// ([`super::shards::FileShard`]), under that shard's lock.
#[derive(Debug, Default)]
pub(crate) struct LockManager {
    files: HashMap<FileKey, Vec<Lock>>,
    /// Blocked requests per file, in arrival order.
    waiters: HashMap<FileKey, VecDeque<Waiter>>,
    book: Arc<LockBook>,
}

fn conflicts(a: LockKind, b: LockKind) -> bool {
    a == LockKind::Write || b == LockKind::Write
}

/// Removes `owner`'s coverage of `start..=end` from `locks`, splitting
/// locks that extend beyond it.
fn carve(locks: &mut Vec<Lock>, owner: &LockOwner, start: u64, end: u64) {
    let mut out = Vec::with_capacity(locks.len() + 1);
    for l in locks.drain(..) {
        if l.owner != *owner || !l.overlaps(start, end) {
            out.push(l);
            continue;
        }
        if l.start < start {
            out.push(Lock { end: start - 1, ..l.clone() });
        }
        if l.end > end {
            out.push(Lock { start: end + 1, ..l.clone() });
        }
    }
    *locks = out;
}

/// Inserts `new` into `locks` (where its owner holds nothing in its
/// range), merging it with the owner's adjacent locks of the same kind.
fn insert_merged(locks: &mut Vec<Lock>, mut new: Lock) {
    locks.retain(|l| {
        let adjacent = l.owner == new.owner
            && l.kind == new.kind
            && (l.overlaps(new.start, new.end)
                || (l.end != u64::MAX && l.end + 1 == new.start)
                || (new.end != u64::MAX && new.end + 1 == l.start));
        if adjacent {
            new.start = new.start.min(l.start);
            new.end = new.end.max(l.end);
        }
        !adjacent
    });
    locks.push(new);
}

impl LockManager {
    /// The locks of one shard, counted in `book` with every other shard's.
    pub fn with_book(book: Arc<LockBook>) -> LockManager {
        LockManager { files: HashMap::new(), waiters: HashMap::new(), book }
    }

    /// The first lock of another owner that conflicts with `kind` on
    /// `start..=end` (LOCKT, NLM TEST, and LOCK's conflict check).
    pub fn test(&self, file: FileKey, owner: &LockOwner, kind: LockKind, start: u64, end: u64) -> Option<Lock> {
        self.files
            .get(&file)?
            .iter()
            .find(|l| l.owner != *owner && l.overlaps(start, end) && conflicts(l.kind, kind))
            .cloned()
    }

    /// Takes `kind` on `start..=end` for `owner`, replacing whatever the
    /// owner held in that range. `max_per_client` bounds the number of
    /// locks an NFSv4 client holds after the change.
    pub fn lock(
        &mut self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
        max_per_client: usize,
    ) -> Result<(), LockError> {
        if let Some(c) = self.test(file, owner, kind, start, end) {
            return Err(LockError::Conflict(c));
        }
        // An owner changing what it holds (an upgrade, a downgrade, the
        // same lock again) does not queue behind waiters.
        if self.owned_in(file, owner, start, end).is_empty() {
            if let Some(c) = self.first_waiter_conflict(file, owner, kind, start, end) {
                return Err(LockError::Conflict(c));
            }
        }
        self.take(file, owner, kind, start, end, max_per_client)?;
        // A downgrade may let a waiter in.
        self.regrant(file);
        Ok(())
    }

    /// Puts `kind` on `start..=end` into `owner`'s locks, with no
    /// conflict check.
    fn take(
        &mut self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
        max_per_client: usize,
    ) -> Result<(), LockError> {
        let mut next = self.files.get(&file).cloned().unwrap_or_default();
        let before = next.iter().filter(|l| l.owner == *owner).count();
        carve(&mut next, owner, start, end);
        insert_merged(&mut next, Lock { owner: owner.clone(), kind, start, end });
        let after = next.iter().filter(|l| l.owner == *owner).count();
        self.book.admit(owner, before, after, max_per_client)?;
        self.files.insert(file, next);
        Ok(())
    }

    /// The first waiter on `file` of another owner than `owner` whose
    /// request conflicts with `kind` on `start..=end`, as a lock.
    pub fn first_waiter_conflict(
        &self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
    ) -> Option<Lock> {
        self.waiters
            .get(&file)?
            .iter()
            .find(|w| w.owner != *owner && w.overlaps(start, end) && conflicts(w.kind, kind))
            .map(Waiter::as_lock)
    }

    /// Queues a blocked request of `owner` (an NLM host) for `kind` on
    /// `start..=end`, to be granted when it fits. The same request queued
    /// again (clients resend a blocked LOCK now and then) keeps its place
    /// and takes the new `grant` (its cookie).
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue(
        &mut self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
        grant: Arc<GrantTo>,
        max: usize,
        max_per_host: usize,
    ) -> Result<(), QueueFull> {
        let queue = self.waiters.entry(file).or_default();
        if let Some(w) =
            queue.iter_mut().find(|w| w.owner == *owner && w.kind == kind && w.start == start && w.end == end)
        {
            w.grant = grant;
            return Ok(());
        }
        if let Err(e) = self.book.try_block(&host_of(owner), max, max_per_host) {
            if queue.is_empty() {
                self.waiters.remove(&file);
            }
            return Err(e);
        }
        queue.push_back(Waiter { owner: owner.clone(), kind, start, end, grant });
        Ok(())
    }

    /// Removes `owner`'s waiting request for `kind` on `start..=end`
    /// (NLM4_CANCEL); whether there was one.
    pub fn cancel(&mut self, file: FileKey, owner: &LockOwner, kind: LockKind, start: u64, end: u64) -> bool {
        let Some(queue) = self.waiters.get_mut(&file) else { return false };
        let Some(i) =
            queue.iter().position(|w| w.owner == *owner && w.kind == kind && w.start == start && w.end == end)
        else {
            return false;
        };
        if let Some(w) = queue.remove(i) {
            self.book.unblock(&host_of(&w.owner));
        }
        if queue.is_empty() {
            self.waiters.remove(&file);
        }
        // A later request it held back may fit now.
        self.regrant(file);
        true
    }

    /// Removes every waiter whose owner `pred` selects (a host
    /// restarting).
    pub fn drop_waiters_where(&mut self, mut pred: impl FnMut(&LockOwner) -> bool) {
        let mut touched = Vec::new();
        for (file, queue) in self.waiters.iter_mut() {
            let before = queue.len();
            queue.retain(|w| {
                let drop = pred(&w.owner);
                if drop {
                    self.book.unblock(&host_of(&w.owner));
                }
                !drop
            });
            if queue.len() != before {
                touched.push(*file);
            }
        }
        self.waiters.retain(|_, q| !q.is_empty());
        for file in touched {
            self.regrant(file);
        }
    }

    /// Grants, in arrival order, the waiters on `file` that fit now: no
    /// held lock of another owner conflicts, nor an earlier waiter still
    /// waiting. Their locks are taken here; the book tells NLM.
    fn regrant(&mut self, file: FileKey) {
        let Some(mut queue) = self.waiters.remove(&file) else { return };
        let mut kept: VecDeque<Waiter> = VecDeque::with_capacity(queue.len());
        let mut granted = Vec::new();
        for w in queue.drain(..) {
            let behind =
                kept.iter().any(|k| k.owner != w.owner && k.overlaps(w.start, w.end) && conflicts(k.kind, w.kind));
            if behind
                || self.test(file, &w.owner, w.kind, w.start, w.end).is_some()
                || self.take(file, &w.owner, w.kind, w.start, w.end, usize::MAX).is_err()
            {
                kept.push_back(w);
                continue;
            }
            self.book.unblock(&host_of(&w.owner));
            granted.push(Granted { file, owner: w.owner, start: w.start, end: w.end, grant: w.grant });
        }
        if !kept.is_empty() {
            self.waiters.insert(file, kept);
        }
        self.book.push_grants(granted);
    }

    /// The requests waiting on `file`, in order.
    #[cfg(test)]
    pub fn waiters_on(&self, file: FileKey) -> Vec<Waiter> {
        self.waiters.get(&file).map_or_else(Vec::new, |q| q.iter().cloned().collect())
    }

    /// Releases `owner`'s locks on `start..=end` (splitting as needed).
    /// Unlocking what is not locked is not an error.
    pub fn unlock(&mut self, file: FileKey, owner: &LockOwner, start: u64, end: u64) {
        let Some(locks) = self.files.get_mut(&file) else { return };
        let before = locks.iter().filter(|l| l.owner == *owner).count();
        carve(locks, owner, start, end);
        let after = locks.iter().filter(|l| l.owner == *owner).count();
        if locks.is_empty() {
            self.files.remove(&file);
        }
        self.adjust(owner, before, after);
        self.regrant(file);
    }

    fn adjust(&self, owner: &LockOwner, before: usize, after: usize) {
        // A count that only falls is never refused.
        let _ = self.book.admit(owner, before, after, usize::MAX);
    }

    /// Releases all of `owner`'s locks on `file`.
    pub fn unlock_file(&mut self, file: FileKey, owner: &LockOwner) {
        if self.holds_on(file, owner) {
            self.book.queue_released(vec![(file, owner.clone())]);
        }
        self.unlock(file, owner, 0, u64::MAX);
    }

    /// `owner`'s locks on `file` that overlap `start..=end`.
    pub fn owned_in(&self, file: FileKey, owner: &LockOwner, start: u64, end: u64) -> Vec<Lock> {
        self.files.get(&file).map_or_else(Vec::new, |ls| {
            ls.iter().filter(|l| l.owner == *owner && l.overlaps(start, end)).cloned().collect()
        })
    }

    /// Whether `owner` holds any lock on `file`.
    pub fn holds_on(&self, file: FileKey, owner: &LockOwner) -> bool {
        self.files.get(&file).is_some_and(|ls| ls.iter().any(|l| l.owner == *owner))
    }

    /// Whether `owner` holds any lock on this shard's files.
    pub fn holds_any(&self, owner: &LockOwner) -> bool {
        self.files.values().any(|ls| ls.iter().any(|l| l.owner == *owner))
    }

    /// Releases every lock `pred` selects (an NFSv4 client going, an NLM
    /// host rebooting).
    pub fn release_where(&mut self, mut pred: impl FnMut(&LockOwner) -> bool) {
        let mut dropped: Vec<(FileKey, LockOwner)> = Vec::new();
        self.files.retain(|file, ls| {
            ls.retain(|l| {
                let drop = pred(&l.owner);
                if drop {
                    dropped.push((*file, l.owner.clone()));
                }
                !drop
            });
            !ls.is_empty()
        });
        for (_, o) in &dropped {
            self.adjust(o, 1, 0);
        }
        let mut files: Vec<FileKey> = dropped.iter().map(|(f, _)| *f).collect();
        files.dedup();
        for f in files {
            self.regrant(f);
        }
        self.book.queue_released(dropped);
    }

    /// Releases every lock of NFSv4 `client` on this shard's files.
    #[cfg(test)]
    pub fn release_client(&mut self, client: u64) {
        self.release_where(|o| o.client() == Some(client));
    }

    /// The locks on `file`.
    #[cfg(test)]
    pub fn locks_on(&self, file: FileKey) -> Vec<Lock> {
        let mut v = self.files.get(&file).cloned().unwrap_or_default();
        v.sort_by_key(|l| (l.start, l.end));
        v
    }

    /// Locks held by NFSv4 `client`.
    #[cfg(test)]
    pub fn count_for_client(&self, client: u64) -> usize {
        self.book.count_for_client(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FileKey = (1, 10, 1);
    const MAX: usize = 1000;

    fn v4(client: u64, o: &'static str) -> LockOwner {
        LockOwner::V4 { client, owner: Bytes::from_static(o.as_bytes()) }
    }

    fn ranges(m: &LockManager) -> Vec<(u64, u64, LockKind)> {
        m.locks_on(F).into_iter().map(|l| (l.start, l.end, l.kind)).collect()
    }

    #[test]
    fn range_rules() {
        assert_eq!(range_of(0, 0), None);
        assert_eq!(range_of(5, u64::MAX), Some((5, u64::MAX)));
        assert_eq!(range_of(u64::MAX - 1, 2), None);
        assert_eq!(range_of(u64::MAX - 1, 1), Some((u64::MAX - 1, u64::MAX - 1)));
        assert_eq!(range_of(10, 10), Some((10, 19)));
    }

    #[test]
    fn conflicts_between_owners_only() {
        let mut m = LockManager::default();
        let a = v4(1, "a");
        let b = v4(2, "b");
        m.lock(F, &a, LockKind::Write, 0, 99, MAX).unwrap();
        // The same owner may lock over its own lock.
        m.lock(F, &a, LockKind::Write, 50, 149, MAX).unwrap();
        assert_eq!(ranges(&m), vec![(0, 149, LockKind::Write)]);
        let Err(LockError::Conflict(c)) = m.lock(F, &b, LockKind::Read, 100, 100, MAX) else { panic!() };
        assert_eq!((c.owner.clone(), c.start, c.length()), (a.clone(), 0, 150));
        assert!(m.lock(F, &b, LockKind::Read, 150, u64::MAX, MAX).is_ok());
        // Readers share.
        let c = v4(2, "c");
        assert!(m.lock(F, &c, LockKind::Read, 200, 300, MAX).is_ok());
        assert!(m.test(F, &c, LockKind::Write, 200, 300).is_some());
        assert!(m.test(F, &a, LockKind::Read, 0, u64::MAX).is_none());
        // Another file is independent.
        assert!(m.test((1, 11, 1), &c, LockKind::Write, 0, u64::MAX).is_none());
    }

    #[test]
    fn unlock_splits_and_lock_merges() {
        let mut m = LockManager::default();
        let a = v4(1, "a");
        m.lock(F, &a, LockKind::Write, 0, u64::MAX, MAX).unwrap();
        m.unlock(F, &a, 100, 199);
        assert_eq!(ranges(&m), vec![(0, 99, LockKind::Write), (200, u64::MAX, LockKind::Write)]);
        assert_eq!(m.count_for_client(1), 2);
        m.lock(F, &a, LockKind::Write, 100, 199, MAX).unwrap();
        assert_eq!(ranges(&m), vec![(0, u64::MAX, LockKind::Write)]);
        assert_eq!(m.count_for_client(1), 1);
        m.unlock(F, &a, 0, u64::MAX);
        assert!(ranges(&m).is_empty());
        assert_eq!(m.count_for_client(1), 0);
        // Unlocking nothing is fine.
        m.unlock(F, &a, 5, 6);
    }

    #[test]
    fn downgrade_and_upgrade_split() {
        let mut m = LockManager::default();
        let a = v4(1, "a");
        let b = v4(2, "b");
        m.lock(F, &a, LockKind::Write, 0, 99, MAX).unwrap();
        m.lock(F, &a, LockKind::Read, 40, 59, MAX).unwrap();
        assert_eq!(ranges(&m), vec![(0, 39, LockKind::Write), (40, 59, LockKind::Read), (60, 99, LockKind::Write)]);
        // Another reader fits in the downgraded part only.
        assert!(m.lock(F, &b, LockKind::Read, 40, 59, MAX).is_ok());
        assert!(m.lock(F, &b, LockKind::Read, 39, 40, MAX).is_err());
        // Upgrading the middle back conflicts with b's reader.
        let Err(LockError::Conflict(c)) = m.lock(F, &a, LockKind::Write, 40, 59, MAX) else { panic!() };
        assert_eq!(c.owner, b);
        m.unlock_file(F, &b);
        m.lock(F, &a, LockKind::Write, 40, 59, MAX).unwrap();
        assert_eq!(ranges(&m), vec![(0, 99, LockKind::Write)]);
    }

    #[test]
    fn limits_and_release() {
        let mut m = LockManager::default();
        let a = v4(1, "a");
        m.lock(F, &a, LockKind::Read, 0, 9, 2).unwrap();
        m.lock(F, &a, LockKind::Read, 20, 29, 2).unwrap();
        assert_eq!(m.lock(F, &a, LockKind::Read, 40, 49, 2), Err(LockError::TooMany));
        // Merging does not add a lock.
        m.lock(F, &a, LockKind::Read, 10, 19, 2).unwrap();
        assert_eq!(m.count_for_client(1), 1);
        let n = LockOwner::Nlm { caller: Bytes::from_static(b"host"), svid: 7, oh: Bytes::new() };
        assert!(m.lock(F, &n, LockKind::Write, 0, 0, 0).is_err());
        m.lock(F, &n, LockKind::Write, 100, 100, 0).unwrap();
        assert!(m.holds_any(&n));
        m.release_client(1);
        assert!(!m.holds_any(&a));
        assert!(m.holds_on(F, &n));
        assert_eq!(m.count_for_client(1), 0);
    }
    fn nlm(host: &'static str) -> LockOwner {
        LockOwner::Nlm { caller: Bytes::from_static(host.as_bytes()), svid: 1, oh: Bytes::new() }
    }

    fn wait(m: &mut LockManager, o: &LockOwner, kind: LockKind, start: u64, end: u64, cookie: &'static [u8]) {
        let g = Arc::new(GrantTo::for_test(cookie));
        m.enqueue(F, o, kind, start, end, g, 100, 100).unwrap();
    }

    fn granted(m: &LockManager) -> Vec<(LockOwner, Bytes)> {
        m.book.take_grants().into_iter().map(|g| (g.owner, g.grant.cookie.clone())).collect()
    }

    #[test]
    fn waiters_are_granted_in_order_at_the_release() {
        let mut m = LockManager::default();
        let (a, b, c) = (v4(1, "a"), nlm("b"), nlm("c"));
        m.lock(F, &a, LockKind::Write, 0, 99, MAX).unwrap();
        wait(&mut m, &b, LockKind::Write, 0, 9, b"1");
        wait(&mut m, &c, LockKind::Write, 5, 20, b"2");
        assert_eq!(m.book.blocked(), 2);
        m.unlock(F, &a, 0, 99);
        assert_eq!(granted(&m), vec![(b.clone(), Bytes::from_static(b"1"))]);
        assert_eq!(m.waiters_on(F).len(), 1);
        m.unlock(F, &b, 0, u64::MAX);
        assert_eq!(granted(&m), vec![(c.clone(), Bytes::from_static(b"2"))]);
        assert_eq!(m.book.blocked(), 0);
        assert!(m.waiters_on(F).is_empty());
    }

    #[test]
    fn a_reader_does_not_overtake_a_waiting_writer() {
        let mut m = LockManager::default();
        let (a, b, d) = (v4(1, "a"), nlm("b"), v4(2, "d"));
        m.lock(F, &a, LockKind::Read, 0, 99, MAX).unwrap();
        wait(&mut m, &b, LockKind::Write, 0, 9, b"1");
        // Nothing held conflicts with another reader, but the writer waits.
        assert!(m.test(F, &d, LockKind::Read, 0, 9).is_none());
        let Err(LockError::Conflict(c)) = m.lock(F, &d, LockKind::Read, 5, 5, MAX) else { panic!() };
        assert_eq!(c.owner, b);
        assert!(m.lock(F, &d, LockKind::Read, 10, 20, MAX).is_ok());
        // The holder itself may still change its own lock.
        assert!(m.lock(F, &a, LockKind::Read, 0, 99, MAX).is_ok());
    }

    #[test]
    fn a_downgrade_lets_a_reader_in() {
        let mut m = LockManager::default();
        let (a, b) = (v4(1, "a"), nlm("b"));
        m.lock(F, &a, LockKind::Write, 0, 99, MAX).unwrap();
        wait(&mut m, &b, LockKind::Read, 0, 9, b"1");
        m.lock(F, &a, LockKind::Read, 0, 99, MAX).unwrap();
        assert_eq!(granted(&m), vec![(b, Bytes::from_static(b"1"))]);
    }

    #[test]
    fn release_where_cancel_and_resend() {
        let mut m = LockManager::default();
        let (a, b, c) = (nlm("a"), nlm("b"), nlm("c"));
        m.lock(F, &a, LockKind::Write, 0, 99, MAX).unwrap();
        wait(&mut m, &b, LockKind::Write, 0, 9, b"1");
        // Sent again: one waiter, the new cookie.
        wait(&mut m, &b, LockKind::Write, 0, 9, b"2");
        assert_eq!(m.book.blocked(), 1);
        wait(&mut m, &c, LockKind::Write, 50, 60, b"1");
        assert!(m.cancel(F, &c, LockKind::Write, 50, 60));
        assert!(!m.cancel(F, &c, LockKind::Write, 50, 60));
        m.release_where(|o| *o == a);
        assert_eq!(granted(&m), vec![(b.clone(), Bytes::from_static(b"2"))]);
        // A host's waiters go with it.
        wait(&mut m, &c, LockKind::Write, 0, 0, b"1");
        m.drop_waiters_where(|o| *o == c);
        assert_eq!(m.book.blocked(), 0);
        // Caps.
        let g = || Arc::new(GrantTo::for_test(b"1"));
        assert_eq!(m.enqueue(F, &c, LockKind::Write, 0, 0, g(), 0, 10), Err(QueueFull::All));
        assert_eq!(m.enqueue(F, &c, LockKind::Write, 0, 0, g(), 10, 0), Err(QueueFull::Host));
        assert!(m.waiters_on(F).is_empty());
    }
}

//! Byte-range locks held on this client alone, under a write delegation.
//!
//! RFC 8881 section 10.4.2: while a client holds an OPEN_DELEGATE_WRITE
//! delegation no other client can hold a conflicting lock, so its lock
//! operations are performed locally. The client still has to arbitrate
//! between its own lock owners, with POSIX semantics: a lock replaces the
//! same owner's locks over its range (splitting them where it covers part
//! of one), an unlock removes the owner's locks over its range, and an
//! owner never conflicts with itself. When the delegation goes back, the
//! locks are taken at the server ([`LocalLocks::take`]).
//!
//! Ranges are half-open `[start, end)`; `end` `u64::MAX` is "to the end of
//! the file", as NFSv4's length `u64::MAX` is.

use std::collections::HashMap;
use std::hash::Hash;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalLock {
    pub owner: u64,
    pub start: u64,
    pub end: u64,
    pub write: bool,
}

impl LocalLock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start < end && start < self.end
    }

    /// NFSv4's (offset, length) of the lock.
    pub fn offset_length(&self) -> (u64, u64) {
        let length = if self.end == u64::MAX { u64::MAX } else { self.end - self.start };
        (self.start, length)
    }
}

/// The end of NFSv4's (offset, length) as a half-open range's.
pub fn range_end(offset: u64, length: u64) -> u64 {
    if length == u64::MAX {
        u64::MAX
    } else {
        offset.saturating_add(length)
    }
}

#[derive(Debug)]
pub struct LocalLocks<K> {
    files: HashMap<K, Vec<LocalLock>>,
}

impl<K> Default for LocalLocks<K> {
    fn default() -> Self {
        LocalLocks { files: HashMap::new() }
    }
}

impl<K: Hash + Eq + Clone> LocalLocks<K> {
    /// The lock of another owner that a lock `write` of `[start, end)` by
    /// `owner` would conflict with.
    pub fn conflict(&self, file: &K, owner: u64, start: u64, end: u64, write: bool) -> Option<LocalLock> {
        self.files.get(file)?.iter().find(|l| l.owner != owner && l.overlaps(start, end) && (write || l.write)).copied()
    }

    /// Takes the lock, or returns the one in the way.
    pub fn lock(&mut self, file: &K, owner: u64, start: u64, end: u64, write: bool) -> Result<(), LocalLock> {
        if start >= end {
            return Ok(());
        }
        if let Some(c) = self.conflict(file, owner, start, end, write) {
            return Err(c);
        }
        self.unlock(file, owner, start, end);
        self.files.entry(file.clone()).or_default().push(LocalLock { owner, start, end, write });
        Ok(())
    }

    /// Records a lock the server granted `owner`: what this table holds of
    /// other owners in its way is gone at the server (an unlock whose
    /// reply has not come back yet, when the server grants the next
    /// waiter on it), so it goes here too.
    pub fn record(&mut self, file: &K, owner: u64, start: u64, end: u64, write: bool) {
        while let Some(c) = self.conflict(file, owner, start, end, write) {
            self.unlock(file, c.owner, c.start.max(start), c.end.min(end));
        }
        let _ = self.lock(file, owner, start, end, write);
    }

    /// Removes `owner`'s locks over `[start, end)`, keeping what lies
    /// outside it.
    pub fn unlock(&mut self, file: &K, owner: u64, start: u64, end: u64) {
        let Some(locks) = self.files.get_mut(file) else { return };
        let mut kept = Vec::with_capacity(locks.len() + 1);
        for l in locks.drain(..) {
            if l.owner != owner || !l.overlaps(start, end) {
                kept.push(l);
                continue;
            }
            if l.start < start {
                kept.push(LocalLock { end: start, ..l });
            }
            if end < l.end {
                kept.push(LocalLock { start: end, ..l });
            }
        }
        if kept.is_empty() {
            self.files.remove(file);
        } else {
            *locks = kept;
        }
    }

    /// Whether `owner` (any owner, when None) holds a lock on `file`.
    pub fn holds(&self, file: &K, owner: Option<u64>) -> bool {
        self.files.get(file).is_some_and(|ls| ls.iter().any(|l| owner.is_none_or(|o| o == l.owner)))
    }

    /// Every lock held, by file (for reclaiming them all).
    pub fn all(&self) -> Vec<(K, LocalLock)> {
        self.files.iter().flat_map(|(f, ls)| ls.iter().map(move |l| (f.clone(), *l))).collect()
    }

    /// Every lock on `file`, removed: the delegation goes back and they
    /// are to be taken at the server.
    pub fn take(&mut self, file: &K) -> Vec<LocalLock> {
        self.files.remove(file).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: u64 = u64::MAX;

    /// A lock the server granted is recorded over what other owners held
    /// in its way here, which is cut away.
    #[test]
    fn a_granted_lock_is_recorded_over_stale_ones() {
        let mut t = LocalLocks::default();
        t.lock(&1, 10, 0, END, true).unwrap();
        t.lock(&1, 11, 0, 10, false).unwrap_err();
        t.record(&1, 11, 5, 20, true);
        assert!(t.holds(&1, Some(11)));
        assert_eq!(t.conflict(&1, 12, 0, 5, true).map(|l| (l.owner, l.start, l.end)), Some((10, 0, 5)));
        assert_eq!(t.conflict(&1, 12, 5, 20, false).map(|l| l.owner), Some(11));
        assert_eq!(t.conflict(&1, 12, 20, 30, true).map(|l| (l.owner, l.start)), Some((10, 20)));
    }

    #[test]
    fn owners_conflict_by_kind_and_range() {
        let mut t = LocalLocks::default();
        t.lock(&1, 10, 0, 100, false).unwrap();
        // Readers share; a writer is kept out; a range beside is free.
        t.lock(&1, 11, 50, 60, false).unwrap();
        assert_eq!(t.lock(&1, 12, 90, 95, true).unwrap_err().owner, 10);
        t.lock(&1, 12, 100, END, true).unwrap();
        assert_eq!(t.conflict(&1, 13, 5000, 5001, false).map(|l| l.owner), Some(12));
        // Another file is another matter.
        assert!(t.conflict(&2, 13, 0, END, true).is_none());
    }

    #[test]
    fn an_owner_replaces_and_splits_its_own_locks() {
        let mut t = LocalLocks::default();
        t.lock(&1, 10, 0, 100, false).unwrap();
        // Upgrading the middle of its own read lock: never a conflict with
        // itself; the read lock around it stays.
        t.lock(&1, 10, 40, 60, true).unwrap();
        assert_eq!(t.conflict(&1, 11, 45, 46, false).map(|l| l.write), Some(true));
        assert!(t.conflict(&1, 11, 10, 20, false).is_none());
        assert!(t.conflict(&1, 11, 10, 20, true).is_some());
        // Unlocking the middle leaves both ends.
        t.unlock(&1, 10, 30, 70);
        assert!(t.conflict(&1, 11, 30, 70, true).is_none());
        assert!(t.conflict(&1, 11, 0, 30, true).is_some() && t.conflict(&1, 11, 70, 100, true).is_some());
        let mut left = t.take(&1);
        left.sort_by_key(|l| l.start);
        assert_eq!(left.iter().map(|l| (l.start, l.end)).collect::<Vec<_>>(), vec![(0, 30), (70, 100)]);
        assert!(!t.holds(&1, None));
    }

    #[test]
    fn ranges_to_the_end_and_empty_ones() {
        assert_eq!(range_end(5, END), END);
        assert_eq!(range_end(END - 1, 10), END);
        let mut t = LocalLocks::default();
        t.lock(&1, 10, 0, 0, true).unwrap();
        assert!(!t.holds(&1, Some(10)), "an empty range locks nothing");
        t.lock(&1, 10, 7, END, true).unwrap();
        assert_eq!(t.take(&1)[0].offset_length(), (7, END));
    }
}

//! Listings of directories this head read whole, served again while the
//! directory's change attribute says they are current.
//!
//! libcephfs lists a directory it holds complete from its own cache, yet
//! asks the metadata server for the recursive statistics of every
//! subdirectory it passes (a round trip apiece, whatever the caps), so a
//! repeated listing of a tree cost one round trip per directory in it.
//! The change attribute is read under capabilities: while this head holds
//! them it costs no round trip, and once another client changes the
//! directory the metadata server revokes them and the next read is fresh,
//! so a listing kept here is never served after the directory changed.
//! Each entry's attributes are read through its inode, under its own
//! capabilities, when the listing is served.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use vfs::FileId;

/// One entry as the listing found it.
pub(crate) struct Entry {
    pub name: Bytes,
    pub ino: u64,
    /// The stream position after it (the NFS cookie).
    pub cookie: u64,
}

/// A whole directory, as of change attribute `version`.
pub(crate) struct Listing {
    pub version: u64,
    pub entries: Vec<Entry>,
}

#[derive(Default)]
struct Inner {
    dirs: HashMap<FileId, Arc<Listing>>,
    /// Oldest first, for eviction; may name directories dropped since.
    order: VecDeque<FileId>,
    entries: usize,
}

/// Kept listings, bounded by their entries in all.
pub(crate) struct Listings {
    max_entries: usize,
    inner: Mutex<Inner>,
    served: AtomicU64,
}

impl Listings {
    pub fn new(max_entries: usize) -> Listings {
        Listings { max_entries, inner: Mutex::default(), served: AtomicU64::new(0) }
    }

    /// `dir`'s listing if it is as of `version`; a stale one is dropped.
    pub fn get(&self, dir: FileId, version: u64) -> Option<Arc<Listing>> {
        let mut g = self.inner.lock();
        let l = g.dirs.get(&dir)?.clone();
        if l.version == version {
            return Some(l);
        }
        Self::drop_locked(&mut g, dir);
        None
    }

    /// Keeps `listing` of `dir` (too big a one is not kept), letting the
    /// oldest go past `max_entries`.
    pub fn put(&self, dir: FileId, listing: Listing) {
        let n = listing.entries.len();
        if n > self.max_entries / 4 {
            return;
        }
        let mut g = self.inner.lock();
        Self::drop_locked(&mut g, dir);
        while g.entries + n > self.max_entries {
            let Some(old) = g.order.pop_front() else { break };
            Self::drop_locked(&mut g, old);
        }
        g.entries += n;
        g.dirs.insert(dir, Arc::new(listing));
        g.order.push_back(dir);
    }

    /// Forgets `dir`'s listing (found stale while serving it).
    pub fn forget(&self, dir: FileId) {
        Self::drop_locked(&mut self.inner.lock(), dir);
    }

    fn drop_locked(g: &mut Inner, dir: FileId) {
        if let Some(l) = g.dirs.remove(&dir) {
            g.entries -= l.entries.len();
            if g.order.len() > 2 * g.dirs.len() + 16 {
                let dirs = &g.dirs;
                let kept: VecDeque<FileId> = g.order.iter().copied().filter(|d| dirs.contains_key(d)).collect();
                g.order = kept;
            }
        }
    }

    pub fn entries(&self) -> usize {
        self.inner.lock().entries
    }

    /// Counts a listing answered from a kept one.
    pub fn count_served(&self) {
        self.served.fetch_add(1, Relaxed);
    }

    /// Listings answered from kept ones.
    pub fn served(&self) -> u64 {
        self.served.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(version: u64, n: usize) -> Listing {
        let entries =
            (0..n).map(|i| Entry { name: Bytes::from(format!("e{i}")), ino: i as u64, cookie: i as u64 + 3 }).collect();
        Listing { version, entries }
    }

    #[test]
    fn a_listing_is_served_at_its_version_only_and_bounded() {
        let l = Listings::new(40);
        l.put(1, listing(7, 5));
        assert!(l.get(1, 7).is_some());
        assert!(l.get(1, 8).is_none(), "the directory changed");
        assert!(l.get(1, 7).is_none(), "a stale listing is dropped");
        assert_eq!(l.entries(), 0);
        // Too big for the bound: not kept.
        l.put(2, listing(1, 11));
        assert!(l.get(2, 1).is_none());
        // The oldest go first past the bound.
        for d in 10..20 {
            l.put(d, listing(1, 10));
        }
        assert!(l.entries() <= 40);
        assert!(l.get(19, 1).is_some());
        assert!(l.get(10, 1).is_none());
        l.forget(19);
        assert!(l.get(19, 1).is_none());
    }
}

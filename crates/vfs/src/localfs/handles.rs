//! Ids resolved recently, kept as open O_PATH fds so that the next request
//! about them costs one `statx` instead of a walk of names from the root.
//!
//! Sharded by id, each shard a small map behind its own lock, so threads
//! resolving different objects do not meet. An entry remembers the birth
//! generation of the object its fd is open on: a lookup that finds the
//! object unlinked (no links left: removed behind the server's back) or
//! of another generation drops the entry and walks the names again.
//!
//! A cached fd pins its inode, so a file removed on the host keeps its
//! blocks while the fd is open. Entries idle for longer than the
//! configured time are therefore closed by [`HandleCache::sweep`] (as
//! knfsd's file cache closes files it has not used for a couple of
//! seconds), and removals through the server drop theirs at once.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::ids::same_object;
use super::FastMap;
use crate::FileId;

/// Shards of the cache; a power of two so the shard is a mask of the id.
const SHARDS: usize = 64;

pub(crate) struct Handle {
    pub(crate) fd: Arc<OwnedFd>,
    pub(crate) generation: u64,
    /// Milliseconds since the cache was made, at the last use.
    last_used: AtomicU64,
}

/// One shard: its own lock, so lookups of different ids rarely contend.
type Shard = Mutex<FastMap<FileId, Arc<Handle>>>;

pub(crate) struct HandleCache {
    shards: Box<[Shard]>,
    per_shard: usize,
    epoch: Instant,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl HandleCache {
    /// A cache of at most about `capacity` fds (0 disables it).
    pub(crate) fn new(capacity: usize) -> HandleCache {
        let shards = (0..SHARDS).map(|_| Mutex::new(FastMap::default())).collect();
        HandleCache {
            shards,
            per_shard: capacity.div_ceil(SHARDS),
            epoch: Instant::now(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, id: FileId) -> &Shard {
        // Inode numbers are dense in their low bits; mix so that a run of
        // consecutive ids still spreads over the shards.
        let h = id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
        &self.shards[h as usize & (SHARDS - 1)]
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub(crate) fn get(&self, id: FileId) -> Option<Arc<Handle>> {
        let found = self.shard(id).lock().get(&id).cloned();
        match &found {
            Some(h) => {
                h.last_used.store(self.now_ms(), Ordering::Relaxed);
                self.hits.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
            }
        }
        found
    }

    /// The fd cached for `id` if it is the object of `generation`; counted
    /// as a use (a hit) when it is.
    pub(crate) fn held(&self, id: FileId, generation: u64) -> Option<Arc<OwnedFd>> {
        let held = self.shard(id).lock().get(&id).filter(|h| h.generation == generation).map(|h| {
            h.last_used.store(self.now_ms(), Ordering::Relaxed);
            h.fd.clone()
        });
        let counter = if held.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        held
    }

    /// Whether `id` is cached, without counting a use.
    pub(crate) fn contains(&self, id: FileId) -> bool {
        self.shard(id).lock().contains_key(&id)
    }

    /// Caches `fd` for `id`. When the shard is full the least recently
    /// used eighth of it is dropped, so eviction costs a sort once per
    /// many insertions rather than a scan per insertion. The displaced
    /// entries are returned so their fds are closed outside the lock.
    #[must_use]
    pub(crate) fn insert(&self, id: FileId, fd: Arc<OwnedFd>, generation: u64) -> Vec<Arc<Handle>> {
        if self.per_shard == 0 {
            return Vec::new();
        }
        let h = Arc::new(Handle { fd, generation, last_used: AtomicU64::new(self.now_ms()) });
        let mut shard = self.shard(id).lock();
        let mut out = Vec::new();
        if let Some(cur) = shard.get(&id) {
            // Of two objects seen under one inode number the one born
            // later holds it now.
            if cur.generation > generation {
                return out;
            }
        }
        if let Some(old) = shard.insert(id, h) {
            out.push(old);
        }
        if shard.len() > self.per_shard {
            let mut ages: Vec<(u64, FileId)> =
                shard.iter().map(|(k, v)| (v.last_used.load(Ordering::Relaxed), *k)).collect();
            ages.sort_unstable();
            let drop_n = (self.per_shard / 8).max(1);
            for (_, k) in ages.into_iter().take(drop_n) {
                if k != id {
                    out.extend(shard.remove(&k));
                }
            }
        }
        out
    }

    /// Drops `id`'s entry if it is open on the object of `generation`
    /// (0: whichever).
    pub(crate) fn remove(&self, id: FileId, generation: u64) -> Option<Arc<Handle>> {
        let mut shard = self.shard(id).lock();
        if !same_object(shard.get(&id)?.generation, generation) {
            return None;
        }
        shard.remove(&id)
    }

    /// Closes entries unused for `idle_ms`; returns how many.
    pub(crate) fn sweep(&self, idle_ms: u64) -> usize {
        let cutoff = self.now_ms().saturating_sub(idle_ms);
        let mut closed = 0;
        for s in self.shards.iter() {
            let dropped: Vec<Arc<Handle>> = {
                let mut shard = s.lock();
                let old: Vec<FileId> = shard
                    .iter()
                    .filter(|(_, h)| h.last_used.load(Ordering::Relaxed) < cutoff)
                    .map(|(k, _)| *k)
                    .collect();
                old.iter().filter_map(|k| shard.remove(k)).collect()
            };
            closed += dropped.len();
        }
        closed
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// (hits, misses) since the cache was made.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd() -> Arc<OwnedFd> {
        Arc::new(rustix::fs::open("/dev/null", rustix::fs::OFlags::PATH, rustix::fs::Mode::empty()).unwrap())
    }

    #[test]
    fn bounded_and_keeps_the_newer_object() {
        let c = HandleCache::new(SHARDS * 8);
        for id in 0..10_000u64 {
            drop(c.insert(id, fd(), 1));
        }
        assert!(c.len() <= SHARDS * 8, "{} cached", c.len());
        assert!(c.get(9_999).is_some(), "the newest stays");
        drop(c.insert(5, fd(), 300));
        assert!(c.insert(5, fd(), 200).is_empty(), "older generation refused");
        assert_eq!(c.get(5).unwrap().generation, 300);
        assert!(c.remove(5, 200).is_none());
        assert!(c.remove(5, 300).is_some());
        assert!(!c.contains(5));
    }

    #[test]
    fn sweep_closes_idle_entries() {
        let c = HandleCache::new(1024);
        drop(c.insert(1, fd(), 1));
        drop(c.insert(2, fd(), 1));
        std::thread::sleep(std::time::Duration::from_millis(30));
        c.get(2);
        assert_eq!(c.sweep(20), 1);
        assert!(!c.contains(1));
        assert!(c.contains(2));
        assert_eq!(c.counts(), (1, 0));
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let c = HandleCache::new(0);
        assert!(c.insert(1, fd(), 1).is_empty());
        assert!(c.get(1).is_none());
    }
}

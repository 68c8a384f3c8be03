//! Attribute and name caches with actimeo-style timeouts and close-to-open
//! revalidation.
//!
//! Lai (1996) found `find -exec ls -l` slow without an attribute cache: every
//! stat became a GETATTR. Attributes are kept for a time that grows with the
//! file's age — (now − mtime)/10, clamped into [min, max] — so files that
//! just changed are checked again soon and old ones rarely. On open the caller
//! always fetches fresh attributes (close-to-open consistency) and learns here
//! whether its cached data is still good.
//!
//! `now` is wall-clock nanoseconds since the UNIX epoch: the age is measured
//! against the server's mtime, which is on that scale. A clock stepping
//! backwards only makes entries expire early.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use proto::nfs3::{ftype3, wcc_attr};

use crate::fattr::{Fattr, Time};

mod names;
#[cfg(test)]
mod tests;

pub use names::{DirCache, NameBytes};

/// Wall-clock nanoseconds since the UNIX epoch.
pub type WallNanos = u64;

const SEC: u64 = 1_000_000_000;

/// Tuning of the attribute and name caches (the NFS mount options of the same names).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AttrCacheSettings {
    /// Shortest time regular-file attributes are trusted, in seconds. Default 3.
    pub acregmin: u64,
    /// Longest time regular-file attributes are trusted, in seconds. Default 60.
    pub acregmax: u64,
    /// Shortest time directory attributes (and the names looked up in the
    /// directory) are trusted, in seconds. Default 30.
    pub acdirmin: u64,
    /// Longest time directory attributes are trusted, in seconds. Default 60.
    pub acdirmax: u64,
    /// If set, replaces all four bounds above (seconds; 0 disables caching). Default unset.
    pub actimeo: Option<u64>,
    /// No attribute or name caching at all: every check goes to the server. Default false.
    pub noac: bool,
    /// Attribute entries kept; the least recently stored go first. Default 65536.
    pub max_attrs: usize,
    /// Names kept in the name cache; the least recently used go first. Default 65536.
    pub max_names: usize,
}

impl Default for AttrCacheSettings {
    fn default() -> Self {
        AttrCacheSettings {
            acregmin: 3,
            acregmax: 60,
            acdirmin: 30,
            acdirmax: 60,
            actimeo: None,
            noac: false,
            max_attrs: 65536,
            max_names: 65536,
        }
    }
}

impl AttrCacheSettings {
    /// (min, max) trust bounds in nanoseconds for a file of type `t`.
    fn bounds(&self, t: ftype3) -> (u64, u64) {
        if self.noac {
            return (0, 0);
        }
        if let Some(t) = self.actimeo {
            return (t * SEC, t * SEC);
        }
        let (min, max) = match t {
            ftype3::NF3DIR => (self.acdirmin, self.acdirmax),
            _ => (self.acregmin, self.acregmax),
        };
        (min * SEC, max.max(min) * SEC)
    }

    /// How long attributes fetched at `now` stay fresh: a tenth of the
    /// file's age, clamped into the bounds for its type.
    pub fn timeout(&self, attr: &Fattr, now: WallNanos) -> u64 {
        let (min, max) = self.bounds(attr.r#type);
        (now.saturating_sub(nanos(&attr.mtime)) / 10).clamp(min, max)
    }
}

/// `t` in nanoseconds since 1970; a time before it is 0 (the file's age
/// is then the longest there is), one too far ahead the largest.
fn nanos(t: &Time) -> u64 {
    u64::try_from(t.seconds).map_or(0, |s| s.saturating_mul(SEC).saturating_add(u64::from(t.nseconds)))
}

/// The attributes that change when a file's data or entries change: data
/// cached under one validator is stale under another. It is also what
/// NFSv3 sends of a file before an operation (`wcc_attr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validator {
    pub size: u64,
    pub mtime: Time,
    pub ctime: Time,
}

impl From<&Fattr> for Validator {
    fn from(a: &Fattr) -> Self {
        Validator { size: a.size, mtime: a.mtime, ctime: a.ctime }
    }
}

impl From<&wcc_attr> for Validator {
    fn from(a: &wcc_attr) -> Self {
        Validator { size: a.size, mtime: (&a.mtime).into(), ctime: (&a.ctime).into() }
    }
}

/// Stale places the caches' eviction queues may hold beyond twice their
/// live entries before they are swept: small caches sweep rarely too.
const ORDER_SLACK: usize = 64;

struct Entry {
    attr: Fattr,
    fetched: WallNanos,
    timeout: u64,
    seq: u64,
}

impl Entry {
    fn fresh(&self, now: WallNanos) -> bool {
        now >= self.fetched && now - self.fetched < self.timeout
    }
}

/// The caches' maps: a walk of a tree hashes a handle per component, so the
/// hash is on every cached stat's path; foldhash is seeded per process.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Cached attributes of files, by key `K` (file handle or a small id).
pub struct AttrCache<K> {
    s: AttrCacheSettings,
    entries: FastMap<K, Entry>,
    /// Keys in the order they were stored, each with the sequence number it
    /// was stored under: the front is the least recently stored, unless its
    /// entry was stored again since (the numbers differ) or dropped, which
    /// eviction skips. Kept lazily so a store costs a push, not a search.
    order: VecDeque<(u64, K)>,
    seq: u64,
    /// Entries dropped because this client knows they stopped being true
    /// (not evictions): see [`AttrCache::drops`].
    drops: u64,
}

impl<K> std::fmt::Debug for AttrCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttrCache").field("entries", &self.entries.len()).finish()
    }
}

impl<K: Hash + Eq + Clone> AttrCache<K> {
    pub fn new(settings: AttrCacheSettings) -> Self {
        AttrCache { s: settings, entries: FastMap::default(), order: VecDeque::new(), seq: 0, drops: 0 }
    }

    pub fn settings(&self) -> &AttrCacheSettings {
        &self.s
    }

    /// The attributes of `k` if they are still fresh at `now`.
    pub fn get(&self, k: &K, now: WallNanos) -> Option<&Fattr> {
        self.entries.get(k).filter(|e| e.fresh(now)).map(|e| &e.attr)
    }

    /// The attributes of `k` however old: for a file the server promised
    /// to report changes to (an NFSv4.1 delegation), age does not matter.
    pub fn get_any(&self, k: &K) -> Option<&Fattr> {
        self.entries.get(k).map(|e| &e.attr)
    }

    /// When the cached attributes of `k` stop being fresh, if they are now.
    pub fn expires_at(&self, k: &K, now: WallNanos) -> Option<WallNanos> {
        self.entries.get(k).filter(|e| e.fresh(now)).map(|e| e.fetched + e.timeout)
    }

    /// [`AttrCache::get`] with the time the attributes stop being fresh.
    pub fn get_until(&self, k: &K, now: WallNanos) -> Option<(&Fattr, WallNanos)> {
        self.entries.get(k).filter(|e| e.fresh(now)).map(|e| (&e.attr, e.fetched + e.timeout))
    }

    /// How many entries were invalidated so far. An answer worked out from
    /// fresh entries holds until the first of them expires, unless this
    /// count moved meanwhile: storing newer attributes or evicting old ones
    /// leaves it alone, since neither makes a fresh entry untrue.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// Stores attributes fetched at `now` (GETATTR, or the post-op
    /// attributes of any reply). Returns true if the file changed since the
    /// attributes cached before — even expired ones — so the caller drops its
    /// cached data of the file. Nothing cached before counts as unchanged.
    pub fn put(&mut self, k: &K, attr: Fattr, now: WallNanos) -> bool {
        let new = Validator::from(&attr);
        self.store(k, attr, now).is_some_and(|old| Validator::from(&old) != new)
    }

    /// Stores the attributes from the weak cache consistency data of a reply
    /// to this client's own modification (WRITE, SETATTR, CREATE in a
    /// directory...). If the pre-operation attributes match the cached ones,
    /// only this client changed the file, and cached data updated by the
    /// client itself stays valid: returns false. Otherwise returns true.
    pub fn put_wcc(&mut self, k: &K, before: Option<&Validator>, after: Fattr, now: WallNanos) -> bool {
        let ours = match (before, self.entries.get(k)) {
            (Some(b), Some(e)) => *b == Validator::from(&e.attr),
            _ => false,
        };
        let changed = self.put(k, after, now);
        changed && !ours
    }

    /// Close-to-open: on open the caller always fetches fresh attributes and
    /// passes them here. Returns true if the caller must drop its cached data
    /// of the file: the file changed since the attributes cached before, or
    /// nothing was cached so the data cannot be vouched for.
    pub fn revalidate_on_open(&mut self, k: &K, fresh: Fattr, now: WallNanos) -> bool {
        let known = self.entries.contains_key(k);
        let changed = self.put(k, fresh, now);
        changed || !known
    }

    /// Forgets the attributes of `k` (after an operation that changes them
    /// without returning them, or when the file is removed).
    pub fn invalidate(&mut self, k: &K) {
        // Its place in `order` goes stale and is skipped there. Counted
        // whether or not it was cached: a walk kept from before its
        // eviction may have used it.
        self.entries.remove(k);
        self.drops += 1;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.order.len()
    }

    /// Stores `attr` as the newest entry; returns the attributes it replaced.
    fn store(&mut self, k: &K, attr: Fattr, now: WallNanos) -> Option<Fattr> {
        let timeout = self.s.timeout(&attr, now);
        self.seq += 1;
        let seq = self.seq;
        let old = self.entries.insert(k.clone(), Entry { attr, fetched: now, timeout, seq }).map(|e| e.attr);
        self.order.push_back((seq, k.clone()));
        while self.entries.len() > self.s.max_attrs.max(1) {
            let Some((seq, victim)) = self.order.pop_front() else { break };
            if self.entries.get(&victim).is_some_and(|e| e.seq == seq) {
                self.entries.remove(&victim);
            }
        }
        // Stale places outnumbering the live ones: drop them, which costs
        // one pass per as many stores as there are entries.
        if self.order.len() > 2 * self.entries.len() + ORDER_SLACK {
            let entries = &self.entries;
            self.order.retain(|(seq, k)| entries.get(k).is_some_and(|e| e.seq == *seq));
        }
        old
    }
}

//! Name cache: (directory, name) → child and its attributes.
//!
//! Names are trusted while the directory is unchanged: its mtime/ctime/size
//! are those the names were cached under, and they were confirmed within the
//! directory timeout. One GETATTR of the directory thus revalidates all its
//! names at once. Negative results are not cached: a name created by another
//! client shows up at the next lookup.

use std::collections::VecDeque;
use std::hash::Hash;

use bytes::Bytes;

use super::{AttrCacheSettings, FastMap, Validator, WallNanos, ORDER_SLACK};
use crate::fattr::Fattr;

/// A name to store, copied only when it is new to its directory (a
/// directory listed again names what it named before).
pub trait NameBytes: AsRef<[u8]> {
    fn into_bytes(self) -> Bytes;
}

impl NameBytes for Bytes {
    fn into_bytes(self) -> Bytes {
        self
    }
}

impl NameBytes for &[u8] {
    fn into_bytes(self) -> Bytes {
        Bytes::copy_from_slice(self)
    }
}

struct Name<K> {
    child: K,
    attr: Fattr,
    /// The sequence number of this name's place in the eviction queue.
    seq: u64,
    /// Looked up since it was queued: eviction gives it a second chance.
    used: bool,
}

struct Dir<K> {
    validator: Validator,
    checked: WallNanos,
    timeout: u64,
    names: FastMap<Bytes, Name<K>>,
}

impl<K> Dir<K> {
    fn fresh(&self, now: WallNanos) -> bool {
        now >= self.checked && now - self.checked < self.timeout
    }
}

/// Cached LOOKUP results, bounded by `max_names`, the least recently used
/// going first (second-chance: a hit marks its name, which costs a path
/// walk one flag per component instead of reordering a queue).
pub struct DirCache<K> {
    s: AttrCacheSettings,
    dirs: FastMap<K, Dir<K>>,
    /// (sequence, directory, name) in the order names were queued; a place
    /// whose name was dropped or queued again since (its sequence differs)
    /// is stale and skipped.
    queue: VecDeque<(u64, K, Bytes)>,
    /// Names cached.
    names: usize,
    seq: u64,
    /// Names dropped or pointed elsewhere: see [`DirCache::drops`].
    drops: u64,
}

impl<K> std::fmt::Debug for DirCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirCache").field("dirs", &self.dirs.len()).field("names", &self.names).finish()
    }
}

impl<K: Hash + Eq + Clone> DirCache<K> {
    pub fn new(settings: AttrCacheSettings) -> Self {
        DirCache { s: settings, dirs: FastMap::default(), queue: VecDeque::new(), names: 0, seq: 0, drops: 0 }
    }

    /// Names cached.
    pub fn len(&self) -> usize {
        self.names
    }

    pub fn is_empty(&self) -> bool {
        self.names == 0
    }

    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// How many times a name was dropped because it may have stopped
    /// being true (its directory changed, this client removed it), or was
    /// stored again naming another child. A path walk answered from fresh
    /// names holds until the first of them expires, unless this count
    /// moved meanwhile; evictions and refreshes leave it alone.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// The directory's attributes as just fetched (GETATTR, or the post-op
    /// attributes of LOOKUP/READDIR). If it changed since its names were
    /// cached they are dropped; otherwise they are trusted for another
    /// directory timeout.
    pub fn dir_attrs(&mut self, dir: &K, attr: &Fattr, now: WallNanos) {
        let v = Validator::from(attr);
        let timeout = self.s.timeout(attr, now);
        match self.dirs.get_mut(dir) {
            Some(d) if d.validator == v => {
                d.checked = now;
                d.timeout = timeout;
            }
            Some(_) => self.invalidate_dir(dir),
            None => {}
        }
    }

    /// Caches a LOOKUP (or READDIRPLUS) result: `name` in `dir` is `child`
    /// with `child_attr`; `dir_attr` are the directory's attributes from the
    /// same reply.
    pub fn insert(&mut self, dir: &K, name: Bytes, child: K, child_attr: Fattr, dir_attr: &Fattr, now: WallNanos) {
        self.insert_all(dir, dir_attr, now, std::iter::once((name, child, child_attr)));
    }

    /// [`DirCache::insert`] of every (name, child, attributes) of one reply
    /// (a READDIRPLUS): the directory is found once for all of them.
    pub fn insert_all(
        &mut self,
        dir: &K,
        dir_attr: &Fattr,
        now: WallNanos,
        names: impl IntoIterator<Item = (impl NameBytes, K, Fattr)>,
    ) {
        let timeout = self.s.timeout(dir_attr, now);
        if timeout == 0 || self.s.max_names == 0 {
            return;
        }
        self.dir_attrs(dir, dir_attr, now);
        let d = self.dirs.entry(dir.clone()).or_insert_with(|| Dir {
            validator: Validator::from(dir_attr),
            checked: now,
            timeout,
            names: FastMap::default(),
        });
        for (name, child, attr) in names {
            if let Some(e) = d.names.get_mut(name.as_ref()) {
                if e.child == child {
                    // Listed again: newer attributes under the same name.
                    // Its place in the queue stands; the listing is a use.
                    (e.attr, e.used) = (attr, true);
                    continue;
                }
                self.drops += 1;
            }
            self.seq += 1;
            let seq = self.seq;
            let name = name.into_bytes();
            if d.names.insert(name.clone(), Name { child, attr, seq, used: false }).is_none() {
                self.names += 1;
            }
            self.queue.push_back((seq, dir.clone(), name));
        }
        self.evict();
    }

    /// The child named `name` in `dir` and its attributes as of the lookup,
    /// if the directory is still trusted at `now`.
    pub fn lookup(&mut self, dir: &K, name: &[u8], now: WallNanos) -> Option<(K, Fattr)> {
        self.hit(dir, name, now).map(|(e, _)| (e.child.clone(), e.attr.clone()))
    }

    /// [`DirCache::lookup`] of the child alone, for a path walk that takes
    /// the attributes from the attribute cache.
    pub fn child(&mut self, dir: &K, name: &[u8], now: WallNanos) -> Option<K> {
        self.hit(dir, name, now).map(|(e, _)| e.child.clone())
    }

    /// [`DirCache::child`] with the time the name stops being trusted.
    pub fn child_until(&mut self, dir: &K, name: &[u8], now: WallNanos) -> Option<(K, WallNanos)> {
        self.hit(dir, name, now).map(|(e, until)| (e.child.clone(), until))
    }

    fn hit(&mut self, dir: &K, name: &[u8], now: WallNanos) -> Option<(&Name<K>, WallNanos)> {
        let d = self.dirs.get_mut(dir).filter(|d| d.fresh(now))?;
        let until = d.checked + d.timeout;
        let e = d.names.get_mut(name)?;
        e.used = true;
        Some((e, until))
    }

    /// Drops one name (this client removed or renamed it).
    pub fn remove(&mut self, dir: &K, name: &[u8]) {
        self.remove_entry(dir, name);
        self.drops += 1;
    }

    /// Drops every name of `dir`: this client created, removed or renamed
    /// something in it, so its mtime moved and the names' validator with it.
    pub fn invalidate_dir(&mut self, dir: &K) {
        // Counted whether or not anything was cached: a walk kept from
        // before its names were evicted went through this directory too.
        self.drops += 1;
        if let Some(d) = self.dirs.remove(dir) {
            self.names -= d.names.len();
        }
    }

    /// Down to `max_names`: from the front of the queue, a name used since
    /// it was queued goes to the back instead (once), a stale place is
    /// dropped. Then stale places are swept once they outnumber the names.
    fn evict(&mut self) {
        while self.names > self.s.max_names {
            let Some((seq, dir, name)) = self.queue.pop_front() else { break };
            let Some(e) = self.dirs.get_mut(&dir).and_then(|d| d.names.get_mut(&name)).filter(|e| e.seq == seq) else {
                continue;
            };
            if e.used {
                self.seq += 1;
                (e.used, e.seq) = (false, self.seq);
                self.queue.push_back((self.seq, dir, name));
            } else {
                self.remove_entry(&dir, &name);
            }
        }
        if self.queue.len() > 2 * self.names + ORDER_SLACK {
            let dirs = &self.dirs;
            self.queue.retain(|(seq, d, n)| dirs.get(d).and_then(|d| d.names.get(n)).is_some_and(|e| e.seq == *seq));
        }
    }

    fn remove_entry(&mut self, dir: &K, name: &[u8]) {
        if let Some(d) = self.dirs.get_mut(dir) {
            if d.names.remove(name).is_some() {
                self.names -= 1;
            }
            if d.names.is_empty() {
                self.dirs.remove(dir);
            }
        }
    }
}

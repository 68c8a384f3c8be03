//! Name cache: (directory, name) → child and its attributes.
//!
//! Names are trusted while the directory is unchanged: its mtime/ctime/size
//! are those the names were cached under, and they were confirmed within the
//! directory timeout. One GETATTR of the directory thus revalidates all its
//! names at once. Negative results are not cached: a name created by another
//! client shows up at the next lookup.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use bytes::Bytes;
use proto::nfs3::fattr3;

use super::{AttrCacheSettings, Validator, WallNanos};

struct Name<K> {
    child: K,
    attr: fattr3,
    seq: u64,
}

struct Dir<K> {
    validator: Validator,
    checked: WallNanos,
    timeout: u64,
    names: HashMap<Bytes, Name<K>>,
}

impl<K> Dir<K> {
    fn fresh(&self, now: WallNanos) -> bool {
        now >= self.checked && now - self.checked < self.timeout
    }
}

/// Cached LOOKUP results, bounded by `max_names` with LRU eviction.
pub struct DirCache<K> {
    s: AttrCacheSettings,
    dirs: HashMap<K, Dir<K>>,
    /// use sequence -> (directory, name)
    lru: BTreeMap<u64, (K, Bytes)>,
    seq: u64,
}

impl<K> std::fmt::Debug for DirCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirCache").field("dirs", &self.dirs.len()).field("names", &self.lru.len()).finish()
    }
}

impl<K: Hash + Eq + Clone> DirCache<K> {
    pub fn new(settings: AttrCacheSettings) -> Self {
        DirCache { s: settings, dirs: HashMap::new(), lru: BTreeMap::new(), seq: 0 }
    }

    /// Names cached.
    pub fn len(&self) -> usize {
        self.lru.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }

    /// The directory's attributes as just fetched (GETATTR, or the post-op
    /// attributes of LOOKUP/READDIR). If it changed since its names were
    /// cached they are dropped; otherwise they are trusted for another
    /// directory timeout.
    pub fn dir_attrs(&mut self, dir: &K, attr: &fattr3, now: WallNanos) {
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
    pub fn insert(&mut self, dir: &K, name: Bytes, child: K, child_attr: fattr3, dir_attr: &fattr3, now: WallNanos) {
        let timeout = self.s.timeout(dir_attr, now);
        if timeout == 0 || self.s.max_names == 0 {
            return;
        }
        self.dir_attrs(dir, dir_attr, now);
        self.seq += 1;
        let seq = self.seq;
        let d = self.dirs.entry(dir.clone()).or_insert_with(|| Dir {
            validator: Validator::from(dir_attr),
            checked: now,
            timeout,
            names: HashMap::new(),
        });
        if let Some(old) = d.names.insert(name.clone(), Name { child, attr: child_attr, seq }) {
            self.lru.remove(&old.seq);
        }
        self.lru.insert(seq, (dir.clone(), name));
        while self.lru.len() > self.s.max_names {
            let Some((_, (d, n))) = self.lru.pop_first() else { break };
            self.remove_entry(&d, &n);
        }
    }

    /// The child named `name` in `dir` and its attributes as of the lookup,
    /// if the directory is still trusted at `now`.
    pub fn lookup(&mut self, dir: &K, name: &[u8], now: WallNanos) -> Option<(K, fattr3)> {
        let d = self.dirs.get_mut(dir).filter(|d| d.fresh(now))?;
        let e = d.names.get_mut(name)?;
        let entry = self.lru.remove(&e.seq).expect("indexed");
        self.seq += 1;
        e.seq = self.seq;
        self.lru.insert(self.seq, entry);
        Some((e.child.clone(), e.attr.clone()))
    }

    /// Drops one name (this client removed or renamed it).
    pub fn remove(&mut self, dir: &K, name: &[u8]) {
        if let Some(seq) = self.dirs.get(dir).and_then(|d| d.names.get(name)).map(|e| e.seq) {
            self.lru.remove(&seq);
            self.remove_entry(dir, name);
        }
    }

    /// Drops every name of `dir`: this client created, removed or renamed
    /// something in it, so its mtime moved and the names' validator with it.
    pub fn invalidate_dir(&mut self, dir: &K) {
        if let Some(d) = self.dirs.remove(dir) {
            for e in d.names.into_values() {
                self.lru.remove(&e.seq);
            }
        }
    }

    fn remove_entry(&mut self, dir: &K, name: &[u8]) {
        if let Some(d) = self.dirs.get_mut(dir) {
            d.names.remove(name);
            if d.names.is_empty() {
                self.dirs.remove(dir);
            }
        }
    }
}

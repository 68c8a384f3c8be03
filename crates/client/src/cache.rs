//! The client's attribute and name caches, shared by every open file:
//! client-core's sans-IO caches behind locks, on the wall clock (attribute
//! timeouts are measured against the server's mtimes).

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use client_core::attrcache::{AttrCache, DirCache};
use client_core::fattr::Fattr;
use parking_lot::Mutex;
use proto::nfs3::{ftype3, nfs_fh3};

use crate::settings::ClientSettings;

mod walks;
use walks::{Drops, Walks};

pub(crate) struct Caches {
    attrs: Mutex<AttrCache<Bytes>>,
    names: Mutex<DirCache<Bytes>>,
    /// Invalidations so far; see [`Caches::epoch`].
    epoch: AtomicU64,
    /// For each bucket of files (by handle hash), the epoch of the last
    /// invalidation of one of them.
    invalidated: [AtomicU64; INVALIDATION_BUCKETS],
    /// Path prefixes whose walk was answered from the caches lately.
    walks: Mutex<Walks>,
}

/// A path walk under way: when it began and the caches' drops then
/// ([`Caches::walk_began`]), and when its first cached step expires.
pub(crate) struct WalkMark {
    began: u64,
    drops: Drops,
    pub until: u64,
}

/// Buckets of [`Caches::invalidated`]: a reply is refused for another
/// file's invalidation once in this many, which costs a call later, never
/// a wrong answer.
const INVALIDATION_BUCKETS: usize = 256;

fn bucket(fh: &Bytes) -> usize {
    // FNV-1a: handles are short and any spread will do.
    let h = fh.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
    (h % INVALIDATION_BUCKETS as u64) as usize
}

fn wall_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl Caches {
    pub fn new(s: &ClientSettings) -> Caches {
        Caches {
            attrs: Mutex::new(AttrCache::new(s.attr_cache.clone())),
            names: Mutex::new(DirCache::new(s.attr_cache.clone())),
            epoch: AtomicU64::new(0),
            invalidated: std::array::from_fn(|_| AtomicU64::new(0)),
            walks: Mutex::new(Walks::default()),
        }
    }

    /// Taken before a call whose reply carries attributes: they are stored
    /// ([`Caches::revalidate_since`], [`Caches::put_entry_since`]) only if
    /// their file was not invalidated after it. A LOOKUP answered before
    /// this client's last WRITE of the file reached the server, whose
    /// reply is read after that WRITE's, would otherwise put back the size
    /// from before the WRITE; under a delegation, where cached attributes
    /// never expire, that stale size stayed (a COPY of a file just written
    /// took it and copied 2 MiB of 3).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    fn invalidated_since(&self, fh: &Bytes, since: u64) -> bool {
        self.invalidated.get(bucket(fh)).is_some_and(|e| e.load(Ordering::Acquire) > since)
    }

    /// Fresh cached attributes of `fh`.
    pub fn attrs(&self, fh: &Bytes) -> Option<Fattr> {
        self.attrs.lock().get(fh, wall_now()).cloned()
    }

    /// Cached attributes of `fh` however old (under a delegation).
    pub fn attrs_any(&self, fh: &Bytes) -> Option<Fattr> {
        self.attrs.lock().get_any(fh).cloned()
    }

    pub fn put_attrs(&self, fh: &Bytes, a: &Fattr) {
        let now = wall_now();
        self.attrs.lock().put(fh, a.clone(), now);
        if a.r#type == ftype3::NF3DIR {
            // A directory whose attributes did not move keeps its names.
            self.names.lock().dir_attrs(fh, a, now);
        }
    }

    /// Close-to-open: fresh attributes fetched at open.
    pub fn revalidate(&self, fh: &Bytes, a: &Fattr) {
        self.revalidate_since(fh, a, u64::MAX);
    }

    /// [`Caches::revalidate`] for attributes from a call sent
    /// at `since` ([`Caches::epoch`]).
    pub fn revalidate_since(&self, fh: &Bytes, a: &Fattr, since: u64) {
        let mut attrs = self.attrs.lock();
        if !self.invalidated_since(fh, since) {
            attrs.revalidate_on_open(fh, a.clone(), wall_now());
        }
    }

    pub fn invalidate_attrs(&self, fh: &Bytes) {
        // Under the lock, so a reply checked against the epoch either sees
        // this invalidation or is stored before it and removed by it.
        let mut attrs = self.attrs.lock();
        let e = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(b) = self.invalidated.get(bucket(fh)) {
            b.fetch_max(e, Ordering::AcqRel);
        }
        attrs.invalidate(fh);
    }

    /// A cached LOOKUP result, valid while the directory is unchanged.
    pub fn lookup(&self, dir: &Bytes, name: &str) -> Option<(nfs_fh3, Fattr)> {
        let (fh, a) = self.names.lock().lookup(dir, name.as_bytes(), wall_now())?;
        Some((nfs_fh3 { data: fh }, a))
    }

    /// A cached LOOKUP result whose object's attributes are fresh too, with
    /// those attributes: one step of a path walk answered without a call.
    /// The attributes stored with the name were true when it was cached;
    /// the object may have changed since (a write through this client), so
    /// the attribute cache says what is true now.
    pub fn lookup_fresh(&self, dir: &Bytes, name: &str) -> Option<(nfs_fh3, Fattr)> {
        let now = wall_now();
        let fh = self.names.lock().child(dir, name.as_bytes(), now)?;
        let a = self.attrs.lock().get(&fh, now).cloned()?;
        Some((nfs_fh3 { data: fh }, a))
    }

    /// [`Caches::lookup_fresh`] for a step of a walk begun at `mark`,
    /// which learns when this step's entries stop being fresh.
    pub fn lookup_step(&self, dir: &Bytes, name: &str, mark: &mut WalkMark) -> Option<(nfs_fh3, Fattr)> {
        let now = wall_now();
        let (fh, named_until) = self.names.lock().child_until(dir, name.as_bytes(), now)?;
        let (a, attrs_until) = self.attrs.lock().get_until(&fh, now).map(|(a, u)| (a.clone(), u))?;
        mark.until = mark.until.min(named_until).min(attrs_until);
        Some((nfs_fh3 { data: fh }, a))
    }

    fn drops(&self) -> Drops {
        Drops { names: self.names.lock().drops(), attrs: self.attrs.lock().drops() }
    }

    /// Taken before a path walk, so that [`Caches::walked_to`] keeps its
    /// answer only while nothing it used may have stopped being true.
    pub fn walk_began(&self) -> WalkMark {
        WalkMark { began: wall_now(), drops: self.drops(), until: u64::MAX }
    }

    /// A walk of `path`, every step of it answered by [`Caches::lookup_step`]
    /// since `mark`, led to the directory `fh`.
    pub fn walked_to(&self, path: &str, fh: &Bytes, mark: &WalkMark) {
        self.walks.lock().put(path, fh, mark.began, mark.until, mark.drops);
    }

    /// The directory a walk of `path` led to, while that walk still holds
    /// at `mark` (just taken): the answer a walk from the root through the
    /// caches would give now. On a miss the same mark starts the walk.
    pub fn walked(&self, path: &str, mark: &WalkMark) -> Option<nfs_fh3> {
        let fh = self.walks.lock().get(path, mark.began, mark.drops)?;
        Some(nfs_fh3 { data: fh })
    }

    /// Remembers `dir/name` → `fh` (and its attributes). Names are only
    /// cached under known directory attributes, which decide their validity.
    pub fn put_entry(&self, dir: &Bytes, name: &str, fh: &nfs_fh3, a: &Fattr, dir_attrs: Option<&Fattr>) {
        self.put_entry_since(dir, name, fh, a, dir_attrs, u64::MAX);
    }

    /// [`Caches::put_entry`] with attributes from a call sent at `since`
    /// ([`Caches::epoch`]): the name is kept, the attributes only if their
    /// file was not invalidated meanwhile.
    pub fn put_entry_since(
        &self,
        dir: &Bytes,
        name: &str,
        fh: &nfs_fh3,
        a: &Fattr,
        dir_attrs: Option<&Fattr>,
        since: u64,
    ) {
        self.put_entries_since(dir, std::iter::once((name.as_bytes(), fh, a)), dir_attrs, since);
    }

    /// [`Caches::put_entry_since`] for every entry of one READDIRPLUS reply
    /// (name, handle, attributes), under `dir_attrs` from the same reply:
    /// one clock reading and one turn of each lock for the whole reply.
    pub fn put_entries_since<'a>(
        &self,
        dir: &Bytes,
        entries: impl Iterator<Item = (&'a [u8], &'a nfs_fh3, &'a Fattr)> + Clone,
        dir_attrs: Option<&Fattr>,
        since: u64,
    ) {
        let now = wall_now();
        let dir_attrs = {
            let mut attrs = self.attrs.lock();
            for (_, fh, a) in entries.clone() {
                if !self.invalidated_since(&fh.data, since) {
                    attrs.put(&fh.data, a.clone(), now);
                }
            }
            match dir_attrs {
                Some(d) => Some(d.clone()),
                None => attrs.get(dir, now).cloned(),
            }
        };
        if let Some(d) = dir_attrs {
            let names = entries.map(|(name, fh, a)| (name, fh.data.clone(), a.clone()));
            self.names.lock().insert_all(dir, &d, now, names);
        }
    }

    /// `name` in `dir` came, went or names another object now (the
    /// server said so): the name cache forgets it.
    pub fn forget_name(&self, dir: &Bytes, name: &[u8]) {
        self.names.lock().remove(dir, name);
    }

    /// This client changed `dir` (create, remove, rename): what is cached
    /// about it is no longer known to be true.
    pub fn changed_dir(&self, dir: &Bytes) {
        self.names.lock().invalidate_dir(dir);
        self.invalidate_attrs(dir);
    }

    /// [`Caches::put_attrs`] for attributes from a call sent at `since`.
    pub fn put_attrs_since(&self, fh: &Bytes, a: &Fattr, since: u64) {
        let now = wall_now();
        {
            let mut attrs = self.attrs.lock();
            if self.invalidated_since(fh, since) {
                return;
            }
            attrs.put(fh, a.clone(), now);
        }
        if a.r#type == ftype3::NF3DIR {
            self.names.lock().dir_attrs(fh, a, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use client_core::fattr::Time;

    use super::*;

    fn file(size: u64) -> Fattr {
        let m = Time::new((wall_now() / 1_000_000_000) as i64, 0);
        Fattr { r#type: ftype3::NF3REG, size, mtime: m, ctime: m, ..Fattr::default() }
    }

    /// A reply read after an invalidation of its file, for a call sent
    /// before it, must not put back what the invalidation removed.
    #[test]
    fn attributes_from_before_an_invalidation_are_not_stored() {
        let c = Caches::new(&ClientSettings::default());
        let (dir, fh) = (Bytes::from_static(b"dir"), nfs_fh3 { data: Bytes::from_static(b"file") });
        let since = c.epoch(); // a LOOKUP goes out
        c.invalidate_attrs(&fh.data); // the reply to a WRITE sent earlier
        c.put_entry_since(&dir, "f", &fh, &file(2 << 20), None, since); // the LOOKUP's reply
        assert!(c.attrs_any(&fh.data).is_none(), "the size from before the WRITE came back");
        c.revalidate_since(&fh.data, &file(2 << 20), since);
        assert!(c.attrs_any(&fh.data).is_none());
        // A call sent after the invalidation stores its attributes.
        let after = c.epoch();
        c.revalidate_since(&fh.data, &file(3 << 20), after);
        assert_eq!(c.attrs_any(&fh.data).map(|a| a.size), Some(3 << 20));
        // Another file's invalidation does not stop this one's attributes
        // (unless both share a bucket, 1 in 256).
        let other = Bytes::from_static(b"another file");
        let since = c.epoch();
        c.invalidate_attrs(&other);
        if bucket(&other) != bucket(&fh.data) {
            c.revalidate_since(&fh.data, &file(4 << 20), since);
            assert_eq!(c.attrs_any(&fh.data).map(|a| a.size), Some(4 << 20));
        }
    }
}

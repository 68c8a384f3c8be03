//! The client's attribute and name caches, shared by every open file:
//! client-core's sans-IO caches behind locks, on the wall clock (attribute
//! timeouts are measured against the server's mtimes).

use bytes::Bytes;
use client_core::attrcache::{AttrCache, DirCache};
use parking_lot::Mutex;
use proto::nfs3::{fattr3, ftype3, nfs_fh3};

use crate::settings::ClientSettings;

pub(crate) struct Caches {
    attrs: Mutex<AttrCache<Bytes>>,
    names: Mutex<DirCache<Bytes>>,
}

fn wall_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl Caches {
    pub fn new(s: &ClientSettings) -> Caches {
        Caches {
            attrs: Mutex::new(AttrCache::new(s.attr_cache.clone())),
            names: Mutex::new(DirCache::new(s.attr_cache.clone())),
        }
    }

    /// Fresh cached attributes of `fh`.
    pub fn attrs(&self, fh: &Bytes) -> Option<fattr3> {
        self.attrs.lock().get(fh, wall_now()).cloned()
    }

    /// Cached attributes of `fh` however old (under a delegation).
    pub fn attrs_any(&self, fh: &Bytes) -> Option<fattr3> {
        self.attrs.lock().get_any(fh).cloned()
    }

    pub fn put_attrs(&self, fh: &Bytes, a: &fattr3) {
        let now = wall_now();
        self.attrs.lock().put(fh, a.clone(), now);
        if a.r#type == ftype3::NF3DIR {
            // A directory whose attributes did not move keeps its names.
            self.names.lock().dir_attrs(fh, a, now);
        }
    }

    /// Close-to-open: fresh attributes fetched at open.
    pub fn revalidate(&self, fh: &Bytes, a: &fattr3) {
        self.attrs.lock().revalidate_on_open(fh, a.clone(), wall_now());
    }

    pub fn invalidate_attrs(&self, fh: &Bytes) {
        self.attrs.lock().invalidate(fh);
    }

    /// A cached LOOKUP result, valid while the directory is unchanged.
    pub fn lookup(&self, dir: &Bytes, name: &str) -> Option<(nfs_fh3, fattr3)> {
        let (fh, a) = self.names.lock().lookup(dir, name.as_bytes(), wall_now())?;
        Some((nfs_fh3 { data: fh }, a))
    }

    /// Remembers `dir/name` → `fh` (and its attributes). Names are only
    /// cached under known directory attributes, which decide their validity.
    pub fn put_entry(&self, dir: &Bytes, name: &str, fh: &nfs_fh3, a: &fattr3, dir_attrs: Option<&fattr3>) {
        let now = wall_now();
        self.attrs.lock().put(&fh.data, a.clone(), now);
        let dir_attrs = match dir_attrs {
            Some(d) => Some(d.clone()),
            None => self.attrs.lock().get(dir, now).cloned(),
        };
        if let Some(d) = dir_attrs {
            let name = Bytes::copy_from_slice(name.as_bytes());
            self.names.lock().insert(dir, name, fh.data.clone(), a.clone(), &d, now);
        }
    }

    /// This client changed `dir` (create, remove, rename): what is cached
    /// about it is no longer known to be true.
    pub fn changed_dir(&self, dir: &Bytes) {
        self.names.lock().invalidate_dir(dir);
        self.attrs.lock().invalidate(dir);
    }
}

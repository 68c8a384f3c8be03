//! Bounded LRU of open files, so READ and WRITE do not open and close the
//! file on every call.
//!
//! Keyed by id. An entry holds a read-write fd, or a read-only one when the
//! file could not be opened for writing. Recency is a tick per use, with a
//! BTreeMap from tick to id giving the least recently used in O(log n).
//! Evicted entries are handed back to the caller, which closes them outside
//! the lock (and first fdatasyncs files with unstable writes, so that their
//! write-back errors are not lost — see [`super::LocalFs`]).

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::FileId;

#[derive(Debug)]
pub(crate) struct OpenFile {
    pub(crate) fd: OwnedFd,
    pub(crate) writable: bool,
    /// Set by an unstable write, cleared by a successful fsync.
    dirty: AtomicBool,
}

impl OpenFile {
    pub(crate) fn new(fd: OwnedFd, writable: bool) -> OpenFile {
        OpenFile { fd, writable, dirty: AtomicBool::new(false) }
    }

    pub(crate) fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// Clears the dirty mark, returning whether it was set.
    pub(crate) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }
}

struct Inner {
    map: HashMap<FileId, (Arc<OpenFile>, u64)>,
    by_tick: BTreeMap<u64, FileId>,
    tick: u64,
}

pub(crate) struct FileCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl FileCache {
    pub(crate) fn new(capacity: usize) -> FileCache {
        FileCache { capacity, inner: Mutex::new(Inner { map: HashMap::new(), by_tick: BTreeMap::new(), tick: 0 }) }
    }

    pub(crate) fn get(&self, id: FileId) -> Option<Arc<OpenFile>> {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.tick += 1;
        let tick = inner.tick;
        let (file, t) = inner.map.get_mut(&id)?;
        inner.by_tick.remove(t);
        *t = tick;
        inner.by_tick.insert(tick, id);
        Some(file.clone())
    }

    /// Inserts (or replaces) `id`'s entry; returns what had to make room.
    #[must_use]
    pub(crate) fn insert(&self, id: FileId, file: Arc<OpenFile>) -> Vec<(FileId, Arc<OpenFile>)> {
        let mut out = Vec::new();
        if self.capacity == 0 {
            out.push((id, file));
            return out;
        }
        let mut g = self.inner.lock();
        let inner = &mut *g;
        inner.tick += 1;
        let tick = inner.tick;
        if let Some((old, t)) = inner.map.insert(id, (file, tick)) {
            inner.by_tick.remove(&t);
            out.push((id, old));
        }
        inner.by_tick.insert(tick, id);
        while inner.map.len() > self.capacity {
            let Some((_, victim)) = inner.by_tick.pop_first() else {
                break;
            };
            if let Some((f, _)) = inner.map.remove(&victim) {
                out.push((victim, f));
            }
        }
        out
    }

    pub(crate) fn remove(&self, id: FileId) -> Option<Arc<OpenFile>> {
        let mut g = self.inner.lock();
        let (f, t) = g.map.remove(&id)?;
        g.by_tick.remove(&t);
        Some(f)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> Arc<OpenFile> {
        let fd = rustix::fs::open("/dev/null", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        Arc::new(OpenFile::new(fd, false))
    }

    #[test]
    fn evicts_least_recently_used() {
        let c = FileCache::new(2);
        assert!(c.insert(1, file()).is_empty());
        assert!(c.insert(2, file()).is_empty());
        assert!(c.get(1).is_some());
        let ev = c.insert(3, file());
        assert_eq!(ev.iter().map(|e| e.0).collect::<Vec<_>>(), vec![2]);
        assert!(c.get(2).is_none());
        assert!(c.remove(1).is_some());
        assert_eq!(c.len(), 1);
        let ev = c.insert(3, file());
        assert_eq!(ev.len(), 1, "replaced entry is returned for closing");
    }
}

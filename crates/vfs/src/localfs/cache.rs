//! Bounded LRU of open files, so READ and WRITE do not open and close the
//! file on every call.
//!
//! Keyed by id. An entry holds a read-write fd, or a read-only one when the
//! file could not be opened for writing, and the generation (birth time) of
//! the object it was opened on. An inode number freed by a REMOVE can be
//! given to a new file while requests about the old one are still in
//! flight, so removal only drops the entry of the generation removed, and
//! of two objects cached for one id the one born later (the current holder
//! of the inode number) is kept. Without birth times every generation is
//! 0 and the newest insertion wins. Recency is a tick per use, with a
//! BTreeMap from tick to id giving the least recently used in O(log n).
//! Evicted entries are handed back to the caller, which closes them outside
//! the lock (and first fdatasyncs files with unstable writes, so that their
//! write-back errors are not lost — see [`super::LocalFs`]).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::flush::{FlushGroup, Sequential};
use super::ids::same_object;
use super::FastMap;
use crate::FileId;

#[derive(Debug)]
pub(crate) struct OpenFile {
    /// Shared with the handle cache for a file this server created.
    pub(crate) fd: Arc<OwnedFd>,
    pub(crate) writable: bool,
    /// Birth generation of the object `fd` is open on.
    pub(crate) generation: u64,
    /// Set by an unstable write, cleared by a successful fsync.
    dirty: AtomicBool,
    /// Milliseconds since the cache was made, at the last use.
    last_used: std::sync::atomic::AtomicU64,
    /// Flushes with metadata (FILE_SYNC writes, COMMIT), shared.
    pub(crate) fsyncs: FlushGroup,
    /// Data-only flushes (DATA_SYNC writes), shared.
    pub(crate) fdatasyncs: FlushGroup,
    /// The sequential run of UNSTABLE writes, for early write-back.
    pub(crate) sequential: Sequential,
}

impl AsFd for OpenFile {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl OpenFile {
    pub(crate) fn new(fd: OwnedFd, writable: bool, generation: u64) -> OpenFile {
        Self::shared(Arc::new(fd), writable, generation)
    }

    pub(crate) fn shared(fd: Arc<OwnedFd>, writable: bool, generation: u64) -> OpenFile {
        OpenFile {
            fd,
            writable,
            generation,
            dirty: AtomicBool::new(false),
            last_used: Default::default(),
            fsyncs: FlushGroup::default(),
            fdatasyncs: FlushGroup::default(),
            sequential: Sequential::default(),
        }
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
    /// id -> (file, tick of its last use).
    map: FastMap<FileId, (Arc<OpenFile>, u64)>,
    by_tick: BTreeMap<u64, FileId>,
    tick: u64,
}

pub(crate) struct FileCache {
    capacity: usize,
    inner: Mutex<Inner>,
    epoch: Instant,
}

impl FileCache {
    pub(crate) fn new(capacity: usize) -> FileCache {
        FileCache {
            capacity,
            inner: Mutex::new(Inner { map: FastMap::default(), by_tick: BTreeMap::new(), tick: 0 }),
            epoch: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
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
        file.last_used.store(self.now_ms(), Ordering::Relaxed);
        Some(file.clone())
    }

    /// Takes out the files unused for `idle_ms`, for the caller to close
    /// (after flushing the dirty ones).
    #[must_use]
    pub(crate) fn sweep(&self, idle_ms: u64) -> Vec<(FileId, Arc<OpenFile>)> {
        let cutoff = self.now_ms().saturating_sub(idle_ms);
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let idle: Vec<(FileId, u64)> = inner
            .map
            .iter()
            .filter(|(_, (f, _))| f.last_used.load(Ordering::Relaxed) < cutoff)
            .map(|(id, (_, t))| (*id, *t))
            .collect();
        let mut out = Vec::with_capacity(idle.len());
        for (id, t) in idle {
            inner.by_tick.remove(&t);
            if let Some((f, _)) = inner.map.remove(&id) {
                out.push((id, f));
            }
        }
        out
    }

    /// Inserts (or replaces) `id`'s entry; returns what had to make room,
    /// or `file` itself when an object born later is cached for `id` (then
    /// `file` is open on an object that no longer holds the id).
    #[must_use]
    pub(crate) fn insert(&self, id: FileId, file: Arc<OpenFile>) -> Vec<(FileId, Arc<OpenFile>)> {
        let mut out = Vec::new();
        if self.capacity == 0 {
            out.push((id, file));
            return out;
        }
        let mut g = self.inner.lock();
        let inner = &mut *g;
        if inner.map.get(&id).is_some_and(|(cur, _)| cur.generation > file.generation) {
            out.push((id, file));
            return out;
        }
        inner.tick += 1;
        let tick = inner.tick;
        file.last_used.store(self.now_ms(), Ordering::Relaxed);
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

    /// Drops `id`'s entry if it is open on the object of `generation`
    /// (0: whichever it is).
    pub(crate) fn remove(&self, id: FileId, generation: u64) -> Option<Arc<OpenFile>> {
        let mut g = self.inner.lock();
        if !same_object(g.map.get(&id)?.0.generation, generation) {
            return None;
        }
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
        file_of(1)
    }

    fn file_of(generation: u64) -> Arc<OpenFile> {
        let fd = rustix::fs::open("/dev/null", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        Arc::new(OpenFile::new(fd, false, generation))
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
        assert!(c.remove(1, 1).is_some());
        assert_eq!(c.len(), 1);
        let ev = c.insert(3, file());
        assert_eq!(ev.len(), 1, "replaced entry is returned for closing");
    }

    /// An inode number reused by a new file: the removal of the old object
    /// does not drop the new one's fd, and a late insertion of the old
    /// object (a request about it that was still opening it) does not
    /// displace the new one.
    #[test]
    fn reused_id_keeps_the_newer_object() {
        let c = FileCache::new(4);
        assert!(c.insert(7, file_of(100)).is_empty());
        let ev = c.insert(7, file_of(200));
        assert_eq!(ev.iter().map(|e| e.1.generation).collect::<Vec<_>>(), vec![100]);
        assert!(c.remove(7, 100).is_none());
        assert_eq!(c.get(7).unwrap().generation, 200);
        let ev = c.insert(7, file_of(100));
        assert_eq!(ev.iter().map(|e| e.1.generation).collect::<Vec<_>>(), vec![100], "older object refused");
        assert_eq!(c.get(7).unwrap().generation, 200);
        assert_eq!(c.remove(7, 200).unwrap().generation, 200);
        assert!(c.get(7).is_none());
        assert!(c.insert(7, file_of(300)).is_empty());
        assert!(c.remove(7, 0).is_some(), "0 removes whatever is cached");
    }
}

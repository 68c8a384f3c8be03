//! Inodes this head keeps referenced, by id: a handle used again costs no
//! request to the metadata server, and an open file stays open for its
//! READs and WRITEs. Not for ever: a file removed through another head (or
//! any other Ceph client) is only purged once no client references it, so
//! inodes idle for `inode_idle_secs` are let go, as knfsd closes idle files.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use vfs::{FileId, VfsResult};

use crate::ffi::{Fh, Inode};
use crate::mount::{check, Mount};

/// One referenced inode (`ceph_ll_put` when the last user drops it).
pub(crate) struct Node {
    pub m: Arc<Mount>,
    pub inode: *mut Inode,
    /// Opened on first use and kept open with the node.
    fh: Mutex<Files>,
}

// SAFETY: libcephfs inodes and open files may be used from any thread; the
// client locks internally.
unsafe impl Send for Node {}
unsafe impl Sync for Node {}

/// The node's open files: read-only until something is written, so that
/// the head may hold a CephFS read delegation on a file it only reads
/// (libcephfs refuses one while the client has the file open for writing).
/// Neither is closed before the node goes: another thread may be reading
/// through the read-only one when the read-write one is opened.
#[derive(Default)]
struct Files {
    read: Option<*mut Fh>,
    write: Option<*mut Fh>,
}

/// An open file of a node, and whether it was opened for writing.
#[derive(Clone, Copy)]
pub(crate) struct OpenFh {
    pub fh: *mut Fh,
    pub writable: bool,
}

impl Node {
    /// Takes over the reference a libcephfs call returned.
    pub fn adopt(m: &Arc<Mount>, inode: *mut Inode) -> Arc<Node> {
        Arc::new(Node { m: m.clone(), inode, fh: Mutex::new(Files::default()) })
    }

    /// Takes over an inode reference and the file a create opened with it
    /// (for reading and writing).
    pub fn adopt_open(m: &Arc<Mount>, inode: *mut Inode, fh: *mut Fh) -> Arc<Node> {
        let write = (!fh.is_null()).then_some(fh);
        Arc::new(Node { m: m.clone(), inode, fh: Mutex::new(Files { read: None, write }) })
    }

    /// The open file (the writable one, if both are), if one is open
    /// already; never waits (not even for another thread opening it, which
    /// may wait on the cluster).
    pub fn open_fh(&self) -> Option<OpenFh> {
        let f = self.fh.try_lock()?;
        match (f.write, f.read) {
            (Some(fh), _) => Some(OpenFh { fh, writable: true }),
            (None, Some(fh)) => Some(OpenFh { fh, writable: false }),
            (None, None) => None,
        }
    }

    /// An open file to read through (or lock), opened read-only on first use.
    pub fn fh(&self) -> VfsResult<*mut Fh> {
        let mut f = self.fh.lock();
        if let Some(fh) = f.write.or(f.read) {
            return Ok(fh);
        }
        if !self.m.read_only_first {
            let fh = self.open(libc::O_RDWR)?;
            f.write = Some(fh);
            return Ok(fh);
        }
        let fh = self.open(libc::O_RDONLY)?;
        f.read = Some(fh);
        Ok(fh)
    }

    /// An open file to write through, opened read-write on first use.
    pub fn fh_write(&self) -> VfsResult<*mut Fh> {
        let mut f = self.fh.lock();
        if let Some(fh) = f.write {
            return Ok(fh);
        }
        let fh = self.open(libc::O_RDWR)?;
        f.write = Some(fh);
        Ok(fh)
    }

    fn open(&self, flags: i32) -> VfsResult<*mut Fh> {
        let mut fh = std::ptr::null_mut();
        // SAFETY: a referenced inode of this mount; `fh` receives the file.
        check(unsafe { (self.m.api.ceph_ll_open)(self.m.cm, self.inode, flags, &mut fh, self.m.perms) })?;
        Ok(fh)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // SAFETY: the files and the inode reference are this node's own and
        // not used after this.
        unsafe {
            let f = self.fh.get_mut();
            for fh in [f.read.take(), f.write.take()].into_iter().flatten() {
                (self.m.api.ceph_ll_close)(self.m.cm, fh);
            }
            (self.m.api.ceph_ll_put)(self.m.cm, self.inode);
        }
    }
}

const SHARDS: usize = 16;

/// Nodes by id, bounded; the oldest entries of a full shard go first.
pub(crate) struct Nodes {
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

#[derive(Default)]
struct Shard {
    /// Each node with its last use.
    map: HashMap<FileId, (Arc<Node>, Instant)>,
}

impl Nodes {
    pub fn new(capacity: usize) -> Nodes {
        Nodes {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            per_shard: capacity.div_ceil(SHARDS).max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, id: FileId) -> &Mutex<Shard> {
        &self.shards[(id as usize) % SHARDS]
    }

    pub fn get(&self, id: FileId) -> Option<Arc<Node>> {
        let mut s = self.shard(id).lock();
        let now = Instant::now();
        let found = s.map.get_mut(&id).map(|(n, used)| {
            *used = now;
            n.clone()
        });
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `node` under `id`, or returns the one already kept (the new
    /// reference is then dropped, which releases it).
    pub fn insert(&self, id: FileId, node: Arc<Node>) -> Arc<Node> {
        let evicted;
        let kept = {
            let mut s = self.shard(id).lock();
            let now = Instant::now();
            if let Some((n, used)) = s.map.get_mut(&id) {
                *used = now;
                return n.clone();
            }
            evicted = if s.map.len() >= self.per_shard { Self::evict_oldest(&mut s) } else { None };
            s.map.insert(id, (node.clone(), now));
            node
        };
        // Released outside the lock: closing a file may wait on the cluster.
        drop(evicted);
        kept
    }

    /// The least recently used of a few entries (an approximation that
    /// keeps an insert into a full shard cheap).
    fn evict_oldest(s: &mut Shard) -> Option<Arc<Node>> {
        const SAMPLE: usize = 16;
        let oldest = s.map.iter().take(SAMPLE).min_by_key(|(_, (_, used))| *used).map(|(id, _)| *id)?;
        s.map.remove(&oldest).map(|(n, _)| n)
    }

    /// Forgets `id` (removed, or found stale).
    pub fn remove(&self, id: FileId) {
        let gone = self.shard(id).lock().map.remove(&id);
        drop(gone);
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// Lets go of nodes unused for `idle` that no request holds.
    pub fn expire_idle(&self, idle: Duration) -> usize {
        let Some(before) = Instant::now().checked_sub(idle) else { return 0 };
        let mut gone = Vec::new();
        for shard in &self.shards {
            let mut s = shard.lock();
            s.map.retain(|_, (n, used)| {
                let keep = *used > before || Arc::strong_count(n) > 1;
                if !keep {
                    gone.push(n.clone());
                }
                keep
            });
        }
        // Released outside the locks: closing a file may wait on the cluster.
        let n = gone.len();
        drop(gone);
        n
    }

    /// Expires idle nodes every half `idle` on a thread of its own, until
    /// the cache is dropped.
    pub fn sweep(nodes: &Arc<Nodes>, idle: Duration) {
        if idle.is_zero() {
            return;
        }
        let weak: Weak<Nodes> = Arc::downgrade(nodes);
        let every = (idle / 2).max(Duration::from_millis(100));
        let spawned = std::thread::Builder::new().name("nfsx-ceph-idle".into()).spawn(move || loop {
            std::thread::sleep(every);
            let Some(nodes) = weak.upgrade() else { return };
            nodes.expire_idle(idle);
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the thread that lets idle Ceph inodes go: {e}");
        }
    }
}

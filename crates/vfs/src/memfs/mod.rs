//! In-memory backend, for tests and for benchmarking the protocol path
//! without a disk.
//!
//! Concurrency: every object has its own `RwLock`, and the id → object table
//! is sharded, so READ/WRITE on different files never meet on a shared lock
//! (two READs of one file share a read lock). An operation that changes
//! several objects (link, remove, rename) write-locks them in ascending id
//! order, after which it re-checks what it looked up unlocked and retries
//! if the tree changed in between. Cross-directory renames additionally
//! hold one rename mutex, as in Linux: it keeps the parent chain stable
//! while checking that a directory is not moved into its own subtree.
//!
//! Ids come from a counter and are never reused, so a removed object's id
//! is simply Stale. The generation is a per-instance constant taken from the
//! clock at start, so handles issued by an earlier MemFs (a restarted
//! server) are recognised as stale instead of naming whatever new object
//! got the same id.

mod data;
mod node;
mod ops;
mod v42;
mod xattr;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use self::data::Budget;
use self::node::{Body, Dir, Meta, Node, NodeCell, NodeRef};
use crate::{Attrs, FileId, SetAttrs, SetTime, Timespec, VfsError, VfsResult};

/// Limits and defaults of a [`MemFs`].
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemFsSettings {
    /// Largest logical file size; writes or truncates past it get `FBig`.
    /// Default 1 TiB (sparse: only written chunks use memory); at most
    /// `i64::MAX`.
    pub max_file_size: u64,
    /// Memory all file data together may occupy; a write needing more gets
    /// `NoSpace`. Default 2 GiB.
    pub max_total_bytes: u64,
    /// Allocation unit of file data. Smaller wastes less on sparse or tiny
    /// files, larger means fewer allocations for big sequential writes.
    /// Default 64 KiB; values below 512 are raised to 512.
    pub chunk_size: u32,
    /// Most objects that may exist at once; beyond, creates get `NoSpace`.
    /// Default 16 Mi.
    pub max_files: u64,
    /// Longest name accepted (`NameTooLong` beyond). Default 255.
    pub max_name_len: usize,
    /// Longest symlink target accepted (`NameTooLong` beyond). Default 4096.
    pub max_symlink_len: usize,
    /// Most bytes one `read` returns (a short read, not an error), bounding
    /// the buffer a caller-chosen count can make us allocate. Default 1 MiB.
    pub max_read: u32,
    /// Number of shards of the id → object table. Default 64.
    pub table_shards: usize,
    /// Reported as the file system id. Default `0x6d656d6673` ("memfs").
    pub fsid: u64,
    /// Permission bits of a new file when the caller sets no mode (also
    /// exclusive creates, whose mode arrives in a later SETATTR). Default 0o644.
    pub default_file_mode: u32,
    /// Permission bits of a new directory without a mode. Default 0o755.
    pub default_dir_mode: u32,
    /// Owner of the root directory. Default 0:0.
    pub root_owner: (u32, u32),
    /// Permission bits of the root directory. Default 0o755.
    pub root_mode: u32,
}

impl Default for MemFsSettings {
    fn default() -> Self {
        MemFsSettings {
            max_file_size: 1 << 40,
            max_total_bytes: 2 << 30,
            chunk_size: 64 << 10,
            max_files: 16 << 20,
            max_name_len: crate::names::DEFAULT_MAX_NAME_LEN,
            max_symlink_len: 4096,
            max_read: 1 << 20,
            table_shards: 64,
            fsid: 0x006d_656d_6673,
            default_file_mode: 0o644,
            default_dir_mode: 0o755,
            root_owner: (0, 0),
            root_mode: 0o755,
        }
    }
}

/// The in-memory file system. See the module documentation.
pub struct MemFs {
    settings: MemFsSettings,
    chunk: u64,
    shards: Box<[RwLock<HashMap<FileId, NodeRef>>]>,
    next_id: AtomicU64,
    objects: AtomicU64,
    budget: Budget,
    generation: u64,
    rename_lock: Mutex<()>,
}

const ROOT: FileId = 1;

impl Default for MemFs {
    fn default() -> Self {
        MemFs::new()
    }
}

impl MemFs {
    pub fn new() -> MemFs {
        MemFs::with_settings(MemFsSettings::default())
    }

    pub fn with_settings(mut settings: MemFsSettings) -> MemFs {
        // Chunk arithmetic near u64::MAX would overflow; no real file
        // needs more than an off_t can address.
        settings.max_file_size = settings.max_file_size.min(i64::MAX as u64);
        let shards = settings.table_shards.max(1);
        let now = Timespec::now();
        let fs = MemFs {
            chunk: u64::from(settings.chunk_size.max(512)),
            shards: (0..shards).map(|_| RwLock::new(HashMap::new())).collect(),
            next_id: AtomicU64::new(ROOT + 1),
            objects: AtomicU64::new(1),
            budget: Budget::new(settings.max_total_bytes),
            // Never 0, so a zeroed handle field never matches.
            generation: ((now.seconds as u64) << 30 ^ u64::from(now.nanos)) | 1,
            rename_lock: Mutex::new(()),
            settings,
        };
        let (uid, gid) = fs.settings.root_owner;
        let root =
            Node { meta: Meta::new(fs.settings.root_mode, uid, gid, 2), body: Body::Dir(Dir::new(ROOT)), live: true };
        fs.insert_node(ROOT, root);
        fs
    }

    pub fn settings(&self) -> &MemFsSettings {
        &self.settings
    }

    fn shard(&self, id: FileId) -> &RwLock<HashMap<FileId, NodeRef>> {
        &self.shards[(id % self.shards.len() as u64) as usize]
    }

    fn node(&self, id: FileId) -> VfsResult<NodeRef> {
        self.shard(id).read().get(&id).cloned().ok_or(VfsError::Stale)
    }

    fn insert_node(&self, id: FileId, node: Node) -> NodeRef {
        let cell = Arc::new(NodeCell { id, state: RwLock::new(node) });
        self.shard(id).write().insert(id, cell.clone());
        cell
    }

    fn alloc_id(&self) -> VfsResult<FileId> {
        let max = self.settings.max_files;
        self.objects
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
            .map_err(|_| VfsError::NoSpace)?;
        Ok(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Drops an object whose last name is gone; the caller holds its lock.
    fn free(&self, id: FileId, node: &mut Node) {
        node.live = false;
        self.budget.release(node.meta.xattr_bytes());
        node.meta.xattrs.clear();
        if let Body::File(f) = &mut node.body {
            f.release_all(self.chunk, &self.budget);
        }
        self.shard(id).write().remove(&id);
        self.objects.fetch_sub(1, Ordering::AcqRel);
    }

    fn attrs(&self, id: FileId, n: &Node) -> Attrs {
        let (size, used) = match &n.body {
            Body::File(f) => (f.size(), f.allocated(self.chunk)),
            Body::Dir(d) => {
                // Roughly what a real directory of this many entries takes;
                // clients only use it as a hint.
                let s = 4096 + 32 * d.len() as u64;
                (s, s)
            }
            Body::Symlink(t) => (t.len() as u64, 0),
            Body::Special(_) => (0, 0),
        };
        Attrs {
            ftype: n.ftype(),
            mode: n.meta.mode,
            nlink: n.meta.nlink,
            uid: n.meta.uid,
            gid: n.meta.gid,
            size,
            used,
            rdev: n.meta.rdev,
            fsid: self.settings.fsid,
            fileid: id,
            atime: n.meta.atime,
            mtime: n.meta.mtime,
            ctime: n.meta.ctime,
            generation: self.generation,
            change: n.meta.change,
        }
    }

    /// Applies `set` to a locked object: everything is validated before
    /// anything changes, so a refused SETATTR leaves the object untouched.
    fn apply_setattrs(&self, n: &mut Node, set: &SetAttrs) -> VfsResult<()> {
        if let Some(size) = set.size {
            match &n.body {
                Body::File(_) if size > self.settings.max_file_size => return Err(VfsError::FBig),
                Body::File(_) => {}
                Body::Dir(_) => return Err(VfsError::IsDir),
                _ => return Err(VfsError::Invalid),
            }
        }
        for t in [set.atime, set.mtime] {
            if let SetTime::Client(ts) = t {
                if ts.nanos >= 1_000_000_000 {
                    return Err(VfsError::Invalid);
                }
            }
        }
        let now = Timespec::now();
        let mut changed = false;
        if let Some(size) = set.size {
            if let Body::File(f) = &mut n.body {
                if size != f.size() {
                    f.truncate(size, self.chunk, &self.budget);
                    n.meta.mtime = now;
                }
            }
            changed = true;
        }
        if let Some(mode) = set.mode {
            n.meta.mode = mode & 0o7777;
            changed = true;
        }
        if let Some(uid) = set.uid {
            n.meta.uid = uid;
            changed = true;
        }
        if let Some(gid) = set.gid {
            n.meta.gid = gid;
            changed = true;
        }
        for (want, slot) in [(set.atime, &mut n.meta.atime), (set.mtime, &mut n.meta.mtime)] {
            match want {
                SetTime::DontChange => {}
                SetTime::ServerNow => {
                    *slot = now;
                    changed = true;
                }
                SetTime::Client(t) => {
                    *slot = t;
                    changed = true;
                }
            }
        }
        if changed {
            n.meta.ctime = now;
            n.meta.change += 1;
        }
        n.meta.verifier = None;
        Ok(())
    }

    /// Links a new object into `dir` under `name`, failing with `Exists`
    /// if the name is taken.
    fn insert_entry(&self, dir: FileId, name: &[u8], mut new: Node) -> VfsResult<(FileId, Attrs)> {
        crate::names::check_entry_name(name, self.settings.max_name_len)?;
        let dref = self.node(dir)?;
        let mut g = dref.state.write();
        if g.dir()?.get(name).is_some() {
            return Err(VfsError::Exists);
        }
        let id = self.alloc_id()?;
        let is_dir = matches!(new.body, Body::Dir(_));
        if let Body::Dir(d) = &mut new.body {
            d.parent = dir;
        }
        let attrs = self.attrs(id, &new);
        self.insert_node(id, new);
        g.dir_mut()?.insert(name, id);
        if is_dir {
            g.meta.nlink = g.meta.nlink.saturating_add(1);
        }
        g.meta.touch_content();
        Ok((id, attrs))
    }
}

//! The protocol-neutral backend every NFS version is served from.
//!
//! Names and types here are neutral on purpose: NFSv3 and NFSv4 each map
//! [`VfsError`] to their own status codes with one exhaustive match, and
//! file handles are built by the server from a [`FileId`] plus the
//! [`Attrs::generation`] that tells a reused id from the original object.
//!
//! The trait is synchronous: a local file system blocks anyway, and the
//! server calls it from worker threads, keeping the protocol cores free of
//! any async runtime. The server calls it on a connection's own thread only
//! for what the backend says needs no wait ([`FastPaths::resident`],
//! [`FastPaths::read_cached`]); a backend whose calls wait on the network
//! offers no [`FastPaths`] and is always called from workers.

mod error;
pub use error::*;

mod types;
pub use types::*;

mod access;
pub use access::{check_access, Access};

mod names;
pub use names::{check_entry_name, classify_lookup, LookupName, DEFAULT_MAX_NAME_LEN};

mod v42;
pub use v42::*;

mod scope;
pub use scope::RequestScope;

pub mod uninit;

mod shared;
mod dir_events;
pub use dir_events::{DirEvent, DirEvents, WatchId};
pub use shared::{DelegationRecallSink, ShareDenialSink, SharedStore};

/// Keeps a file reachable by its id after its last name is removed, for
/// as long as it is held (see [`KeepUnlinked`]); dropping it lets the
/// file go.
// Never read: what it holds does its work when dropped.
pub struct Kept(#[allow(dead_code)] Box<dyn Send + Sync>);

impl Kept {
    pub fn new(held: impl Send + Sync + 'static) -> Kept {
        Kept(Box::new(held))
    }
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kept")
    }
}

/// A backend that can keep serving a file by id once its last name is
/// gone, as a local file system keeps an unlinked file that a process
/// holds open. The server uses it for NFSv4.1 opens of files removed
/// while open (OPEN4_RESULT_PRESERVE_UNLINKED, RFC 8881 section 18.16.4),
/// so that a client need not hide such files under another name.
pub trait KeepUnlinked {
    /// Holds file `id` (not yet removed): READ, WRITE, GETATTR and SETATTR
    /// by its id keep working after its last name is removed, until the
    /// returned value is dropped.
    fn keep_unlinked(&self, id: FileId) -> VfsResult<Kept>;
}

/// Answers a backend can give without waiting, or without copying: the
/// server asks them first and goes the ordinary way (a worker thread,
/// [`Vfs::read`]) where the backend has none or says `None`.
pub trait FastPaths: Send + Sync {
    /// Whether `getattr(id)` (and a lookup in `id`, for a directory whose
    /// entries the host caches) can be answered without waiting on a disk
    /// or the network. The server runs such requests on the connection's
    /// own thread instead of handing them to a worker.
    fn resident(&self, id: FileId) -> bool;

    /// [`Vfs::read`], but only if it can be answered without waiting on a
    /// disk (the data is in the page cache): `None` otherwise, and the
    /// caller reads on a thread that may block.
    fn read_cached(&self, id: FileId, offset: u64, count: u32) -> VfsResult<Option<ReadResult>>;

    /// What [`Vfs::read`] would return, as a region of an open file rather
    /// than bytes in memory, for a transport that sends it from the page
    /// cache; with the same `eof`. `None` when the backend has no such
    /// file or nothing is to be read (the caller then uses `read`).
    fn read_region(&self, id: FileId, offset: u64, count: u32) -> VfsResult<Option<(FileRegion, bool)>>;

    /// [`FastPaths::read_region`], but only when the region holds no hole:
    /// what [`DataOps42::read_sparse`] would return as a single data
    /// segment (READ_PLUS then answers with it from the page cache).
    /// `None` when a hole lies in it, or as for `read_region`.
    fn read_data_region(&self, id: FileId, offset: u64, count: u32) -> VfsResult<Option<(FileRegion, bool)>>;
}

pub mod localfs;
pub mod memfs;
pub use localfs::{CreateDirFlush, LocalFs, LocalFsSettings};
pub use memfs::{MemFs, MemFsSettings};

use bytes::Bytes;

/// One exported file-system tree.
///
/// Every method that takes a name takes exactly one path component: the
/// server rejects `/` and NUL before calling, and backends reject them
/// again (`Invalid`) so that no name can walk out of the tree. `.` and `..`
/// are only meaningful to [`Vfs::lookup`]; `..` of the root is the root.
pub trait Vfs: Send + Sync + 'static {
    /// The id of the exported root directory.
    fn root(&self) -> FileId;

    /// A number that identifies this file system (NFSv3 `fsid`).
    fn fsid(&self) -> u64;

    fn getattr(&self, id: FileId) -> VfsResult<Attrs>;

    /// Applies `set` in one step as far as the platform allows; with
    /// `guard_ctime` the change is refused (`NotSync`) unless the object's
    /// ctime still equals it (NFSv3 SETATTR guard).
    fn setattr(&self, id: FileId, set: &SetAttrs, guard_ctime: Option<Timespec>) -> VfsResult<Attrs>;

    fn lookup(&self, dir: FileId, name: &[u8]) -> VfsResult<(FileId, Attrs)>;

    fn readlink(&self, id: FileId) -> VfsResult<Bytes>;

    /// Reads up to `count` bytes; `eof` is true when the read reached the end
    /// of the file.
    fn read(&self, id: FileId, offset: u64, count: u32) -> VfsResult<ReadResult>;

    /// Writes `data` at `offset` with at least the requested stability and
    /// reports the stability actually reached.
    fn write(&self, id: FileId, offset: u64, data: &[u8], stable: Stability) -> VfsResult<WriteResult>;

    /// Makes everything written to `id` in `[offset, offset+count)` stable
    /// (`count == 0`: to the end of the file). Returns any error deferred
    /// from earlier unstable writes.
    fn commit(&self, id: FileId, offset: u64, count: u32) -> VfsResult<()>;

    fn create(&self, dir: FileId, name: &[u8], how: &CreateHow, owner: Owner) -> VfsResult<(FileId, Attrs)>;
    fn mkdir(&self, dir: FileId, name: &[u8], attrs: &SetAttrs, owner: Owner) -> VfsResult<(FileId, Attrs)>;
    fn symlink(
        &self,
        dir: FileId,
        name: &[u8],
        target: &[u8],
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)>;
    fn mknod(
        &self,
        dir: FileId,
        name: &[u8],
        kind: NodeKind,
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)>;

    /// Removes a non-directory.
    fn remove(&self, dir: FileId, name: &[u8]) -> VfsResult<()>;
    /// Removes an empty directory.
    fn rmdir(&self, dir: FileId, name: &[u8]) -> VfsResult<()>;
    fn rename(&self, from_dir: FileId, from: &[u8], to_dir: FileId, to: &[u8]) -> VfsResult<()>;
    fn link(&self, id: FileId, dir: FileId, name: &[u8]) -> VfsResult<()>;

    /// Entries after `cookie` (0 = from the start), at most `max_entries`.
    /// Cookies are stable across calls and not reused while the directory
    /// lives, so a client paging through a changing directory sees no
    /// entry twice and misses none that stayed. `.` and `..` are not listed.
    fn readdir(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDir>;

    /// [`Vfs::readdir`] with every entry's object as [`Vfs::lookup`] finds
    /// it, for READDIRPLUS and NFSv4 READDIR. A backend that cannot read
    /// attributes while it lists looks each name up
    /// ([`readdir_plus_by_lookup`]).
    fn readdir_plus(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDirPlus>;

    fn fsstat(&self, id: FileId) -> VfsResult<FsStat>;

    /// The backend's [`FastPaths`], if it has answers that need no wait.
    fn fast_paths(&self) -> Option<&dyn FastPaths> {
        None
    }

    /// The backend's [`Xattrs`]: `Some` where it stores extended
    /// attributes (RFC 8276).
    fn xattrs(&self) -> Option<&dyn Xattrs> {
        None
    }

    /// The backend's NFSv4.2 data operations ([`DataOps42`]), if it has
    /// them.
    fn data_ops(&self) -> Option<&dyn DataOps42> {
        None
    }

    /// The backend's [`SharedStore`]: `Some` where other servers may change
    /// this file system behind this one (several heads over one distributed
    /// store). The server then grants no NFSv4 delegations on it but those
    /// the store backs: it would not hear of the conflicting access another
    /// head serves, so it could not recall them.
    fn shared_store(&self) -> Option<&dyn SharedStore> {
        None
    }

    /// The backend's [`KeepUnlinked`], if it can keep unlinked files.
    fn keeps_unlinked(&self) -> Option<&dyn KeepUnlinked> {
        None
    }

    /// The backend's [`DirEvents`]: `Some` where it reports every change of
    /// a directory, whoever makes it (directory delegations need that).
    fn dir_events(&self) -> Option<&dyn DirEvents> {
        None
    }

    /// Whether [`Attrs::change`] is the object's ctime (NFSv4.2
    /// `change_attr_type` TIME_METADATA) rather than a counter.
    fn change_is_ctime(&self) -> bool;

    /// The backend's own counters (caches, flushes), for metrics.
    fn counters(&self) -> Vec<Counter>;
}

/// [`Vfs::readdir_plus`] for a backend that learns an entry's object only
/// by looking its name up.
pub fn readdir_plus_by_lookup(fs: &dyn Vfs, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDirPlus> {
    let rd = fs.readdir(dir, cookie, max_entries)?;
    let entries = rd
        .entries
        .into_iter()
        .map(|entry| {
            let obj = fs.lookup(dir, &entry.name);
            DirEntryPlus { entry, obj }
        })
        .collect();
    Ok(ReadDirPlus { entries, eof: rd.eof })
}

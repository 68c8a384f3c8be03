use bytes::Bytes;

use crate::error::{VfsError, VfsResult};

/// Identifies an object within one exported tree for as long as it exists.
/// (LocalFs: the inode number; MemFs: an allocation counter.)
pub type FileId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    Regular,
    Directory,
    BlockDevice,
    CharDevice,
    Symlink,
    Socket,
    Fifo,
}

/// Seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timespec {
    pub seconds: i64,
    pub nanos: u32,
}

impl Timespec {
    pub fn now() -> Timespec {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Timespec { seconds: d.as_secs() as i64, nanos: d.subsec_nanos() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attrs {
    pub ftype: FileType,
    /// Permission bits including setuid/setgid/sticky (no file-type bits).
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// Bytes of storage actually used.
    pub used: u64,
    /// Major and minor device numbers for device files.
    pub rdev: (u32, u32),
    pub fsid: u64,
    pub fileid: FileId,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
    /// Distinguishes this object from a later one that reuses its
    /// [`FileId`]; part of every file handle, so an old handle to a reused
    /// id is stale rather than pointing at the wrong file.
    pub generation: u64,
    /// Moves forward on every change of data or metadata (NFSv4 `change`).
    pub change: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SetTime {
    #[default]
    DontChange,
    ServerNow,
    Client(Timespec),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetAttrs {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: SetTime,
    pub mtime: SetTime,
}

/// Who a newly created object belongs to (the caller after squashing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateHow {
    /// Create or truncate per `attrs.size`; an existing file is kept.
    Unchecked(SetAttrs),
    /// Fail with `Exists` if the name exists.
    Guarded(SetAttrs),
    /// Exclusive create: a retransmission carrying the same verifier
    /// succeeds on the file it created; another verifier gets `Exists`.
    /// The backend stores the verifier with the file (e.g. in its times)
    /// until the client's follow-up SETATTR replaces it.
    Exclusive([u8; 8]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    BlockDevice(u32, u32),
    CharDevice(u32, u32),
    Socket,
    Fifo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stability {
    Unstable,
    DataSync,
    FileSync,
}

/// A backend's own counter or gauge, for the server's metrics endpoint
/// (exposed as `nfsx_backend_<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    pub name: &'static str,
    pub help: &'static str,
    pub value: u64,
    /// A level that goes up and down rather than a running total.
    pub gauge: bool,
}

impl Counter {
    pub fn total(name: &'static str, help: &'static str, value: u64) -> Counter {
        Counter { name, help, value, gauge: false }
    }

    pub fn gauge(name: &'static str, help: &'static str, value: u64) -> Counter {
        Counter { name, help, value, gauge: true }
    }
}

/// Bytes of an open file, handed to a transport that sends them straight
/// from the page cache (`sendfile`) instead of reading them into memory
/// first; see [`crate::FastPaths::read_region`].
#[derive(Clone)]
pub struct FileRegion {
    pub fd: std::sync::Arc<dyn std::os::fd::AsFd + Send + Sync>,
    pub offset: u64,
    pub len: u32,
}

impl std::fmt::Debug for FileRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRegion").field("offset", &self.offset).field("len", &self.len).finish()
    }
}

#[derive(Debug, Clone)]
pub struct ReadResult {
    pub data: Bytes,
    pub eof: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteResult {
    pub count: u32,
    pub committed: Stability,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub fileid: FileId,
    pub name: Bytes,
    /// Pass back to `readdir` to continue after this entry. Never 0.
    pub cookie: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadDir {
    pub entries: Vec<DirEntry>,
    pub eof: bool,
}

/// A directory entry with the object behind its name, as
/// [`Vfs::lookup`](crate::Vfs::lookup) would find it; an entry whose
/// lookup fails (removed meanwhile, a mount point) carries the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryPlus {
    pub entry: DirEntry,
    pub obj: VfsResult<(FileId, Attrs)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadDirPlus {
    pub entries: Vec<DirEntryPlus>,
    pub eof: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FsStat {
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub avail_bytes: u64,
    pub total_files: u64,
    pub free_files: u64,
    pub avail_files: u64,
}

/// Exclusive-create verifier as the two time stamps it is stored in, like
/// Linux knfsd: seconds of atime and mtime, nanoseconds zero.
pub fn verifier_times(v: &[u8; 8]) -> (Timespec, Timespec) {
    let a = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
    let m = u32::from_be_bytes([v[4], v[5], v[6], v[7]]);
    (Timespec { seconds: i64::from(a), nanos: 0 }, Timespec { seconds: i64::from(m), nanos: 0 })
}

/// Refuses attribute changes no backend may apply to an object of type
/// `ftype`: a size on a non-file or past `max_size`, nanoseconds out of
/// range, the reserved owner id -1.
pub fn check_setattrs(ftype: FileType, set: &SetAttrs, max_size: u64) -> VfsResult<()> {
    if let Some(size) = set.size {
        match ftype {
            FileType::Regular if size > max_size => return Err(VfsError::FBig),
            FileType::Regular => {}
            FileType::Directory => return Err(VfsError::IsDir),
            _ => return Err(VfsError::Invalid),
        }
    }
    for t in [set.atime, set.mtime] {
        if matches!(t, SetTime::Client(ts) if ts.nanos >= 1_000_000_000) {
            return Err(VfsError::Invalid);
        }
    }
    if set.uid == Some(u32::MAX) || set.gid == Some(u32::MAX) {
        return Err(VfsError::Invalid);
    }
    Ok(())
}

/// Share reservation bits of [`crate::SharedStore::share_reserve`], for access and
/// deny alike: the values of NFSv4's OPEN4_SHARE_ACCESS_* and
/// OPEN4_SHARE_DENY_*.
pub const SHARE_READ: u32 = 1;
pub const SHARE_WRITE: u32 = 2;

/// A POSIX byte-range lock as a backend shared with other servers takes it
/// ([`crate::SharedStore::range_lock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeLock {
    Read,
    Write,
    Unlock,
}

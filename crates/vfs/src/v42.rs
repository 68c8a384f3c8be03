//! Types of the NFSv4.2 operations (RFC 7862) and of extended attributes
//! (RFC 8276) as the backend sees them: sparse files, server-side copy and
//! clone, and the host's `user.` attribute namespace.

use crate::{Attrs, FileId, Stability, Vfs, VfsError, VfsResult};

/// The data operations of NFSv4.2 (RFC 7862): sparse files, space
/// reservation, server-side copy and clone, and access hints, for a
/// backend that offers them ([`crate::Vfs::data_ops`]). Without it the
/// server answers them as the protocol does for a server that has none.
pub trait DataOps42: Send + Sync {
    /// The next data or hole at or after `offset` of a regular file;
    /// `NxIo` when `offset` is past the end of the file.
    fn seek(&self, id: FileId, offset: u64, what: SeekWhat) -> VfsResult<SeekResult>;

    /// Reads up to `count` bytes as data and hole segments, with `eof` as
    /// [`crate::Vfs::read`] says it. A backend that cannot tell holes
    /// returns one data segment ([`read_unsparse`]).
    fn read_sparse(&self, id: FileId, offset: u64, count: u32) -> VfsResult<(Vec<Segment>, bool)>;

    /// Reserves space for `[offset, offset+length)`, growing the file if
    /// that range ends past it (`fallocate` mode 0, ALLOCATE).
    fn allocate(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs>;

    /// Punches a hole in `[offset, offset+length)`, keeping the size;
    /// reads of it return zeros (DEALLOCATE).
    fn deallocate(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs>;

    /// Copies `count` bytes (0: to the source's end of file) from `src` at
    /// `src_offset` to `dst` at `dst_offset` inside the backend, reaching
    /// at least `stable`. Ranges of one file must not overlap (`Invalid`).
    fn copy_range(
        &self,
        src: FileId,
        src_offset: u64,
        dst: FileId,
        dst_offset: u64,
        count: u64,
        stable: Stability,
    ) -> VfsResult<CopyResult>;

    /// Makes `[dst_offset, dst_offset+count)` of `dst` share the source's
    /// blocks (a reflink; `count` 0: to the source's end of file).
    /// `NotSupported` where the file system cannot.
    fn clone_range(&self, src: FileId, src_offset: u64, dst: FileId, dst_offset: u64, count: u64) -> VfsResult<()>;

    /// The block size clones must be aligned to, if the backend clones.
    fn clone_blksize(&self) -> Option<u32>;

    /// Passes an access-pattern hint for `[offset, offset+len)` (`len` 0:
    /// to the end) to the host; `Ok(false)` when the backend ignores it.
    fn advise(&self, id: FileId, offset: u64, len: u64, advice: Advice) -> VfsResult<bool>;
}

/// Extended attributes (RFC 8276) in the host's `user.` namespace
/// ([`XATTR_USER_PREFIX`]); names come without the prefix.
pub trait Xattrs: Send + Sync {
    /// The value of extended attribute `name`; `NoXattr` when it is not
    /// set.
    fn getxattr(&self, id: FileId, name: &[u8]) -> VfsResult<bytes::Bytes>;

    fn setxattr(&self, id: FileId, name: &[u8], value: &[u8], how: XattrSet) -> VfsResult<Attrs>;

    /// Names of the extended attributes set, sorted.
    fn listxattrs(&self, id: FileId) -> VfsResult<Vec<bytes::Bytes>>;

    fn removexattr(&self, id: FileId, name: &[u8]) -> VfsResult<Attrs>;
}

/// A sparse read of a backend that cannot tell holes: what
/// [`Vfs::read`] returns, as one data segment.
pub fn read_unsparse(fs: &dyn Vfs, id: FileId, offset: u64, count: u32) -> VfsResult<(Vec<Segment>, bool)> {
    let r = fs.read(id, offset, count)?;
    let segs = if r.data.is_empty() { Vec::new() } else { vec![Segment::Data { offset, data: r.data }] };
    Ok((segs, r.eof))
}

/// What [`DataOps42::seek`] looks for (SEEK's `data_content4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekWhat {
    Data,
    Hole,
}

/// Where the data or hole asked for starts. Every file ends in a virtual
/// hole at its size (RFC 7862 section 15.11.3): asking for a hole in data
/// that runs to the end gives `offset == size` and `eof`; asking for data
/// where only a hole remains gives `offset == size` and `eof` too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeekResult {
    pub offset: u64,
    /// The content found reaches the end of the file, or none was found.
    pub eof: bool,
}

/// One part of a sparse read (READ_PLUS's `read_plus_content`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Data { offset: u64, data: bytes::Bytes },
    Hole { offset: u64, length: u64 },
}

/// What [`DataOps42::copy_range`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyResult {
    /// Bytes copied; fewer than asked only at the source's end of file.
    pub count: u64,
    /// Stability the copied data reached in the destination.
    pub committed: Stability,
}

/// An access-pattern hint (IO_ADVISE, as posix_fadvise(2) takes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    Normal,
    Sequential,
    Random,
    WillNeed,
    DontNeed,
    NoReuse,
}

/// SETXATTR's `setxattr_option4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XattrSet {
    /// Create or replace.
    Either,
    /// Fail with `Exists` if the attribute is there.
    Create,
    /// Fail with `NoXattr` if the attribute is not there.
    Replace,
}

/// Longest extended attribute name a client may use. The host stores it
/// as `user.<name>` and Linux limits the whole to 255 bytes
/// (`XATTR_NAME_MAX`).
pub const XATTR_NAME_MAX: usize = 255 - XATTR_USER_PREFIX.len();
/// Largest value (Linux `XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: usize = 65536;
/// The host namespace the protocol's attributes live in: RFC 8276 section
/// 5 leaves namespaces to the server, and knfsd maps them to `user.` too,
/// so files exported by either show the same attributes.
pub const XATTR_USER_PREFIX: &[u8] = b"user.";

/// Checks an extended attribute name before it reaches a backend: empty,
/// NUL-bearing or over-long names are refused.
pub fn check_xattr_name(name: &[u8]) -> Result<(), VfsError> {
    if name.is_empty() || name.contains(&0) {
        return Err(VfsError::Invalid);
    }
    if name.len() > XATTR_NAME_MAX {
        return Err(VfsError::NameTooLong);
    }
    Ok(())
}

//! The NFSv4.2 data operations of [`LocalFs`] (RFC 7862): SEEK, READ_PLUS,
//! ALLOCATE, DEALLOCATE, COPY and CLONE, each called in one line from the
//! `impl DataOps42` in ops.rs. Extended attributes are in [`super::xattr`].
//!
//! Every one of them acts on the id's cached open file
//! ([`LocalFs::file`]), so they get the type checks (a directory is
//! `IsDir`, anything else but a regular file `Invalid`), the fd and the
//! flush groups of READ, WRITE and COMMIT. Changes to data are marked
//! dirty before they are made, as an UNSTABLE write is: an eviction of the
//! file then flushes it and keeps a write-back error for the next COMMIT.

use std::os::fd::{AsFd, AsRawFd};
use std::sync::OnceLock;

use rustix::fs::{FallocateFlags, Mode, OFlags};
use rustix::io::{Errno, ReadWriteFlags};

use super::cache::OpenFile;
use super::copy::{copy_sparse, extent_at, file_size, seek_at, Extent};
use super::ops::MAX_OFFSET;
use super::sys::{self, errno};
use super::LocalFs;
use crate::{
    Attrs, CopyResult, FastPaths, FileId, FileRegion, SeekResult, SeekWhat, Segment, Stability, VfsError, VfsResult,
};

/// Largest block written by the reflink probe.
const PROBE_BLOCK_MAX: usize = 64 << 10;

/// What LocalFs learns about the export's file system on first use.
#[derive(Default)]
pub(super) struct Probes {
    /// The clone block size, if the file system can reflink.
    pub(super) clone_blksize: OnceLock<Option<u32>>,
    /// Whether the file system stores `user.` extended attributes.
    pub(super) xattrs: OnceLock<bool>,
}

/// Refuses an empty range or one reaching past what an off_t can address.
fn check_range(offset: u64, length: u64) -> VfsResult<()> {
    if length == 0 {
        return Err(VfsError::Invalid);
    }
    match offset.checked_add(length) {
        Some(end) if end <= MAX_OFFSET => Ok(()),
        _ => Err(VfsError::FBig),
    }
}

/// Checks a copy or clone of `len` bytes: the destination must stay
/// addressable, and ranges of one file must not overlap (RFC 7862
/// sections 15.2.3 and 15.13.3).
fn check_copy(same_file: bool, src_offset: u64, dst_offset: u64, len: u64) -> VfsResult<()> {
    match dst_offset.checked_add(len) {
        Some(end) if end <= MAX_OFFSET => {}
        _ => return Err(VfsError::FBig),
    }
    if same_file && len > 0 && src_offset < dst_offset + len && dst_offset < src_offset + len {
        return Err(VfsError::Invalid);
    }
    Ok(())
}

impl LocalFs {
    fn attrs_of_file(&self, f: &OpenFile) -> VfsResult<Attrs> {
        Ok(self.attrs_of(&sys::statx_fd(f.fd.as_fd())?))
    }

    /// The files of a copy or clone: the destination writable, the source
    /// readable (the same open file when both are one).
    fn file_pair(&self, src: FileId, dst: FileId) -> VfsResult<(std::sync::Arc<OpenFile>, std::sync::Arc<OpenFile>)> {
        let d = self.file(dst, true)?;
        let s = if src == dst { d.clone() } else { self.file(src, false)? };
        Ok((s, d))
    }

    /// IO_ADVISE: the hint goes to the page cache of the file's open fd
    /// (posix_fadvise), which is what the server reads and writes through.
    pub(super) fn advise_impl(&self, id: FileId, offset: u64, len: u64, advice: crate::Advice) -> VfsResult<bool> {
        use rustix::fs::Advice as Fadv;
        let f = self.file(id, false)?;
        let how = match advice {
            crate::Advice::Normal => Fadv::Normal,
            crate::Advice::Sequential => Fadv::Sequential,
            crate::Advice::Random => Fadv::Random,
            crate::Advice::WillNeed => Fadv::WillNeed,
            crate::Advice::DontNeed => Fadv::DontNeed,
            crate::Advice::NoReuse => Fadv::NoReuse,
        };
        // len 0 means "to the end" for both IO_ADVISE and fadvise.
        rustix::fs::fadvise(f.fd.as_fd(), offset, len, how).map_err(errno)?;
        Ok(true)
    }

    pub(super) fn seek_impl(&self, id: FileId, offset: u64, what: SeekWhat) -> VfsResult<SeekResult> {
        let f = self.file(id, false)?;
        let size = file_size(f.fd.as_fd())?;
        if offset > size {
            return Err(VfsError::NxIo);
        }
        let at_end = SeekResult { offset: size, eof: true };
        match seek_at(f.fd.as_fd(), offset, what) {
            Ok(found) => Ok(SeekResult { offset: found, eof: found >= size }),
            // No data left but the virtual hole at the end (RFC 7862
            // section 15.11.3): found nothing, eof. Linux says the same for
            // a hole asked for at the size itself.
            Err(Errno::NXIO) => Ok(at_end),
            Err(Errno::INVAL | Errno::OPNOTSUPP) => Ok(match what {
                SeekWhat::Data if offset < size => SeekResult { offset, eof: false },
                _ => at_end,
            }),
            Err(e) => Err(errno(e)),
        }
    }

    /// Holes are reported, not read, and count toward `count` as READ_PLUS
    /// does: a client reading a sparse file gets its zeros for free.
    pub(super) fn read_sparse_impl(&self, id: FileId, offset: u64, count: u32) -> VfsResult<(Vec<Segment>, bool)> {
        let f = self.file(id, false)?;
        let size = file_size(f.fd.as_fd())?;
        if offset >= size {
            return Ok((Vec::new(), true));
        }
        let end = size.min(offset + u64::from(count.min(self.settings.max_read)));
        let mut segs = Vec::new();
        let mut pos = offset;
        while pos < end {
            match extent_at(f.fd.as_fd(), pos)? {
                Extent::Hole(until) => {
                    let stop = until.min(end);
                    segs.push(Segment::Hole { offset: pos, length: stop - pos });
                    pos = stop;
                }
                Extent::Data(until) => {
                    // `until.min(end) - pos` is at most max_read.
                    let want = (until.min(end) - pos) as usize;
                    let data = sys::pread_full(f.fd.as_fd(), pos, want)?;
                    let got = data.len();
                    if got > 0 {
                        segs.push(Segment::Data { offset: pos, data: bytes::Bytes::from(data) });
                    }
                    pos += got as u64;
                    if got < want {
                        // The file shrank meanwhile: its end is here.
                        break;
                    }
                }
            }
        }
        let eof = pos >= file_size(f.fd.as_fd())?;
        Ok((segs, eof))
    }

    /// A region for READ_PLUS when data runs unbroken from `offset` to
    /// its end: one `lseek(SEEK_DATA)` and one `lseek(SEEK_HOLE)` on top
    /// of `read_region`. A hole punched after the check is sent as the
    /// zeros it reads as, which READ_PLUS allows (a hole may always be
    /// returned as data).
    pub(super) fn read_data_region_impl(
        &self,
        id: FileId,
        offset: u64,
        count: u32,
    ) -> VfsResult<Option<(FileRegion, bool)>> {
        let Some((region, eof)) = self.read_region(id, offset, count)? else {
            return Ok(None);
        };
        match extent_at(region.fd.as_fd(), offset)? {
            Extent::Data(until) if until >= offset + u64::from(region.len) => Ok(Some((region, eof))),
            _ => Ok(None),
        }
    }

    fn fallocate(&self, id: FileId, offset: u64, length: u64, mode: FallocateFlags) -> VfsResult<Attrs> {
        check_range(offset, length)?;
        let f = self.file(id, true)?;
        f.mark_dirty();
        rustix::fs::fallocate(&f.fd, mode, offset, length).map_err(errno)?;
        self.attrs_of_file(&f)
    }

    pub(super) fn allocate_impl(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        self.fallocate(id, offset, length, FallocateFlags::empty())
    }

    pub(super) fn deallocate_impl(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        self.fallocate(id, offset, length, FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE)
    }

    pub(super) fn copy_range_impl(
        &self,
        src: FileId,
        src_offset: u64,
        dst: FileId,
        dst_offset: u64,
        count: u64,
        stable: Stability,
    ) -> VfsResult<CopyResult> {
        let (sf, df) = self.file_pair(src, dst)?;
        // What the source holds now from `src_offset` on bounds the copy
        // (count 0: all of it); a source growing meanwhile is not chased.
        let avail = file_size(sf.fd.as_fd())?.saturating_sub(src_offset);
        let len = if count == 0 { avail } else { count.min(avail) };
        check_copy(src == dst, src_offset, dst_offset, len)?;
        if len == 0 {
            return Ok(CopyResult { count: 0, committed: stable });
        }
        // As in write: the ticket is taken, or the file marked, before the
        // data changes.
        let since = match stable {
            Stability::Unstable => {
                df.mark_dirty();
                0
            }
            Stability::DataSync => df.fdatasyncs.ticket(),
            Stability::FileSync => df.fsyncs.ticket(),
        };
        let copied = copy_sparse(sf.fd.as_fd(), src_offset, df.fd.as_fd(), dst_offset, len)?;
        // Stable copies share the flushes of stable writes to the file.
        let (fd, counts) = (df.fd.as_fd(), &self.flush_counts);
        match stable {
            Stability::Unstable => {}
            Stability::DataSync => {
                df.fdatasyncs.sync_since(since, fd, false, counts, self.gather_max()).map_err(errno)?
            }
            Stability::FileSync => df.fsyncs.sync_since(since, fd, true, counts, self.gather_max()).map_err(errno)?,
        }
        Ok(CopyResult { count: copied, committed: stable })
    }

    pub(super) fn clone_range_impl(
        &self,
        src: FileId,
        src_offset: u64,
        dst: FileId,
        dst_offset: u64,
        count: u64,
    ) -> VfsResult<()> {
        let (sf, df) = self.file_pair(src, dst)?;
        let size = file_size(sf.fd.as_fd())?;
        // RFC 7862 section 15.13.3: the source range lies within the file.
        let len = match src_offset.checked_add(count) {
            _ if src_offset > size => return Err(VfsError::Invalid),
            _ if count == 0 => size - src_offset,
            Some(end) if end <= size => count,
            _ => return Err(VfsError::Invalid),
        };
        check_copy(src == dst, src_offset, dst_offset, len)?;
        let arg = libc::file_clone_range {
            src_fd: i64::from(sf.fd.as_raw_fd()),
            src_offset,
            // 0 means to the end of the file to the kernel too.
            src_length: count,
            dest_offset: dst_offset,
        };
        df.mark_dirty();
        // SAFETY: FICLONERANGE reads one file_clone_range through the
        // pointer, which is valid for the call; both fds stay open.
        let r = unsafe { libc::ioctl(df.fd.as_raw_fd(), libc::FICLONERANGE, &arg as *const libc::file_clone_range) };
        if r == 0 {
            return Ok(());
        }
        match std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) {
            libc::EOPNOTSUPP | libc::EXDEV | libc::ENOSYS | libc::ENOTTY => Err(VfsError::NotSupported),
            // A file system that reflinks refuses misaligned ranges so;
            // some that do not reflink say EINVAL too.
            libc::EINVAL if self.clone_blksize_impl().is_some() => Err(VfsError::Invalid),
            libc::EINVAL => Err(VfsError::NotSupported),
            e => Err(VfsError::from_errno(e)),
        }
    }

    pub(super) fn clone_blksize_impl(&self) -> Option<u32> {
        *self.probes.clone_blksize.get_or_init(|| {
            let found = self.probe_reflink();
            tracing::debug!(clone_blksize = ?found, "reflink probe of the export");
            found
        })
    }

    /// Clones a block between two unnamed files (O_TMPFILE) made in the
    /// export's root: they are never visible to a client and vanish when
    /// closed, so the probe leaves nothing behind even if we crash.
    fn probe_reflink(&self) -> Option<u32> {
        let root = self.root_fd.as_fd();
        let open = || {
            rustix::fs::openat(root, ".", OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC, Mode::from_raw_mode(0o600))
        };
        let (a, b) = (open().ok()?, open().ok()?);
        let blksize = sys::statx_fd(root).ok()?.stx_blksize;
        let block = vec![0x5a_u8; (blksize as usize).clamp(1, PROBE_BLOCK_MAX)];
        sys::pwrite_all(a.as_fd(), 0, &block, ReadWriteFlags::empty()).ok()?;
        rustix::fs::ioctl_ficlone(&b, &a).ok()?;
        Some(blksize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_ranges_are_checked() {
        assert_eq!(check_copy(true, 0, 10, 20), Err(VfsError::Invalid));
        assert_eq!(check_copy(true, 10, 0, 20), Err(VfsError::Invalid));
        assert_eq!(check_copy(true, 0, 20, 20), Ok(()));
        assert_eq!(check_copy(false, 0, 10, 20), Ok(()));
        assert_eq!(check_copy(false, 0, MAX_OFFSET, 1), Err(VfsError::FBig));
        assert_eq!(check_range(0, 0), Err(VfsError::Invalid));
        assert_eq!(check_range(u64::MAX, 2), Err(VfsError::FBig));
    }
}

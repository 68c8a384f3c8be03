//! Finding data and holes in an open file, and copying between two open
//! files with the holes kept, for READ_PLUS and COPY ([`super::v42`]).
//!
//! `copy_file_range` alone would fill holes: on a file system that cannot
//! share blocks it copies through the page cache, and a hole reads as
//! zeros, so a 64 MiB file with two blocks of data would arrive taking 64
//! MiB. The copy therefore walks the source with SEEK_DATA/SEEK_HOLE,
//! copies only data and leaves (or punches) holes in the destination, as
//! `cp --sparse=auto` does.

use std::os::fd::BorrowedFd;

use rustix::fs::{FallocateFlags, SeekFrom};
use rustix::io::{Errno, ReadWriteFlags};

use super::sys::{self, errno};
use crate::{SeekWhat, VfsResult};

/// Buffer of the read-and-write copy used where `copy_file_range` cannot
/// copy between the two files (and of zeros written where a hole cannot
/// be punched); bounds the memory one COPY takes.
const COPY_BUFFER: usize = 1 << 20;

/// One stretch of a file from a position on, as SEEK_DATA/SEEK_HOLE tell it.
pub(super) enum Extent {
    /// Data up to (not including) this offset.
    Data(u64),
    /// A hole up to this offset (`u64::MAX`: no data follows).
    Hole(u64),
}

pub(super) fn file_size(fd: BorrowedFd<'_>) -> VfsResult<u64> {
    Ok(rustix::fs::fstat(fd).map_err(errno)?.st_size as u64)
}

/// `lseek(SEEK_DATA/SEEK_HOLE)`. It moves the fd's file position, which
/// nothing else reads: all I/O here is positional, sendfile included.
pub(super) fn seek_at(fd: BorrowedFd<'_>, pos: u64, what: SeekWhat) -> Result<u64, Errno> {
    // Callers pass offsets within the file: at most an off_t.
    let pos = i64::try_from(pos).map_err(|_| Errno::NXIO)?;
    rustix::fs::seek(fd, if what == SeekWhat::Data { SeekFrom::Data(pos) } else { SeekFrom::Hole(pos) })
}

/// The stretch starting at `pos` (which is below the file's size).
pub(super) fn extent_at(fd: BorrowedFd<'_>, pos: u64) -> VfsResult<Extent> {
    match seek_at(fd, pos, SeekWhat::Data) {
        Ok(d) if d > pos => Ok(Extent::Hole(d)),
        // Data here; it runs to the next hole (at the latest the end of
        // the file). A hole found at `pos` itself (a race with a punch)
        // still lets the caller make progress.
        Ok(_) => match seek_at(fd, pos, SeekWhat::Hole) {
            Ok(h) => Ok(Extent::Data(h.max(pos + 1))),
            Err(Errno::NXIO) => Ok(Extent::Data(u64::MAX)),
            Err(e) => Err(errno(e)),
        },
        // Only the hole at the end is left.
        Err(Errno::NXIO) => Ok(Extent::Hole(u64::MAX)),
        // A file system without SEEK_DATA: all of it counts as data.
        Err(Errno::INVAL | Errno::OPNOTSUPP) => Ok(Extent::Data(u64::MAX)),
        Err(e) => Err(errno(e)),
    }
}

/// Copies up to `len` bytes, data as data and holes as holes, and grows
/// the destination to the end of what was copied (a copy ending in a
/// hole). Stops short at the source's end of file.
pub(super) fn copy_sparse(
    src: BorrowedFd<'_>,
    src_offset: u64,
    dst: BorrowedFd<'_>,
    dst_offset: u64,
    len: u64,
) -> VfsResult<u64> {
    let end = src_offset + len;
    let mut pos = src_offset;
    while pos < end {
        let to = dst_offset + (pos - src_offset);
        match extent_at(src, pos)? {
            Extent::Data(until) => {
                let want = until.min(end) - pos;
                let n = copy_bytes(src, pos, dst, to, want)?;
                pos += n;
                if n < want {
                    break;
                }
            }
            Extent::Hole(until) => {
                // Holes count only up to the source's end as it is now.
                let stop = until.min(end).min(file_size(src)?);
                if stop <= pos {
                    break;
                }
                zero_range(dst, to, stop - pos)?;
                pos = stop;
            }
        }
    }
    let copied = pos - src_offset;
    let dst_end = dst_offset + copied;
    if copied > 0 && file_size(dst)? < dst_end {
        rustix::fs::ftruncate(dst, dst_end).map_err(errno)?;
    }
    Ok(copied)
}

/// Makes `[offset, offset + len)` of `fd` read as zeros where it lies
/// within the file (beyond, it will once the file grows): punched where
/// the file system can, written with zeros where it cannot.
fn zero_range(fd: BorrowedFd<'_>, offset: u64, len: u64) -> VfsResult<()> {
    let end = (offset + len).min(file_size(fd)?);
    if end <= offset {
        return Ok(());
    }
    let mode = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
    match rustix::fs::fallocate(fd, mode, offset, end - offset) {
        Ok(()) => return Ok(()),
        Err(Errno::OPNOTSUPP | Errno::NOSYS) => {}
        Err(e) => return Err(errno(e)),
    }
    let zeros = vec![0u8; COPY_BUFFER.min(usize::try_from(end - offset).unwrap_or(COPY_BUFFER))];
    let mut at = offset;
    while at < end {
        let n = zeros.len().min(usize::try_from(end - at).unwrap_or(usize::MAX));
        sys::pwrite_all(fd, at, &zeros[..n], ReadWriteFlags::empty())?;
        at += n as u64;
    }
    Ok(())
}

/// Copies up to `len` bytes inside the kernel (`copy_file_range`, which
/// may share blocks, or copy on the server of a network file system),
/// falling back to [`copy_buffered`] where it cannot copy between these
/// files. Stops short at the source's end of file.
fn copy_bytes(src: BorrowedFd<'_>, src_offset: u64, dst: BorrowedFd<'_>, dst_offset: u64, len: u64) -> VfsResult<u64> {
    let mut done = 0;
    while done < len {
        let (mut from, mut to) = (src_offset + done, dst_offset + done);
        let want = usize::try_from(len - done).unwrap_or(usize::MAX);
        match rustix::fs::copy_file_range(src, Some(&mut from), dst, Some(&mut to), want) {
            Ok(0) => break,
            Ok(n) => done += n as u64,
            Err(Errno::INTR) => {}
            // Different file system types, or one without the call. Ranges
            // were checked, so EINVAL too means the file system refuses.
            Err(Errno::XDEV | Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => {
                let (from, to) = (src_offset + done, dst_offset + done);
                return Ok(done + copy_buffered(src, from, dst, to, len - done)?);
            }
            Err(e) => return Err(errno(e)),
        }
    }
    Ok(done)
}

/// Copies up to `len` bytes through a bounded buffer; stops short at the
/// source's end of file.
fn copy_buffered(
    src: BorrowedFd<'_>,
    src_offset: u64,
    dst: BorrowedFd<'_>,
    dst_offset: u64,
    len: u64,
) -> VfsResult<u64> {
    let mut done = 0;
    while done < len {
        let want = usize::try_from(len - done).unwrap_or(usize::MAX).min(COPY_BUFFER);
        let buf = sys::pread_full(src, src_offset + done, want)?;
        if buf.is_empty() {
            break;
        }
        sys::pwrite_all(dst, dst_offset + done, &buf, ReadWriteFlags::empty())?;
        done += buf.len() as u64;
        if buf.len() < want {
            break;
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileExt;

    fn temp(tag: &str) -> std::fs::File {
        let p = std::env::temp_dir().join(format!("nfsx-copy-{tag}-{}", std::process::id()));
        let f = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        f
    }

    /// The fallback copy: several buffers' worth, short at the source's
    /// end, and nothing past it.
    #[test]
    fn buffered_copy_stops_at_source_eof() {
        let (src, dst) = (temp("src"), temp("dst"));
        let data: Vec<u8> = (0..(2 * COPY_BUFFER + 100)).map(|i| (i % 251) as u8).collect();
        src.write_all_at(&data, 0).unwrap();
        let n = copy_buffered(src.as_fd(), 10, dst.as_fd(), 5, u64::MAX).unwrap();
        assert_eq!(n, data.len() as u64 - 10);
        let mut back = vec![0u8; data.len() - 10];
        dst.read_exact_at(&mut back, 5).unwrap();
        assert_eq!(back, data[10..]);
        assert_eq!(copy_buffered(src.as_fd(), data.len() as u64 + 1, dst.as_fd(), 0, 10).unwrap(), 0);
    }

    /// A source hole over destination data zeroes it; a copy ending in a
    /// hole still grows the destination to its end.
    #[test]
    fn sparse_copy_zeroes_and_extends() {
        let (src, dst) = (temp("ssrc"), temp("sdst"));
        src.write_all_at(b"head", 0).unwrap();
        src.set_len(1 << 20).unwrap();
        dst.write_all_at(&[7u8; 8192], 0).unwrap();
        let n = copy_sparse(src.as_fd(), 0, dst.as_fd(), 0, 1 << 20).unwrap();
        assert_eq!(n, 1 << 20);
        assert_eq!(dst.metadata().unwrap().len(), 1 << 20);
        let mut back = vec![1u8; 8192];
        dst.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(&back[..4], b"head");
        assert!(back[4..].iter().all(|&b| b == 0));
    }
}

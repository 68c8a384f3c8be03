//! Thin wrappers over the system calls LocalFs is built from.
//!
//! Every path handed to the kernel here is either one checked component
//! resolved against a directory fd, or a chain of components resolved with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
//! RESOLVE_NO_XDEV)` against an fd inside the export. The kernel enforces
//! those flags atomically for the whole walk, so a symlink or `..` planted
//! in the tree, or a rename racing with the walk, cannot lead outside.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags, Statx, StatxFlags, CWD};
use rustix::io::Errno;

use crate::{Attrs, FileId, FileType, Timespec, VfsError, VfsResult};

/// The resolve flags of every walk: stay beneath the starting directory,
/// follow no symlink of any kind, never cross into another mount.
pub(crate) const BENEATH: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS)
    .union(ResolveFlags::NO_XDEV);

/// Longest path handed to one `openat2` call; deeper chains are opened in
/// pieces (the kernel limit is PATH_MAX, 4096, including the NUL).
const MAX_WALK_BYTES: usize = 3072;

/// How often a walk is retried when the kernel reports that a rename or
/// mount raced with a RESOLVE_BENEATH walk (EAGAIN).
const WALK_RETRIES: usize = 4;

pub(crate) fn errno(e: Errno) -> VfsError {
    VfsError::from(e)
}

/// The error of a failed flush of file data that may have carried
/// unstable writes (see [`VfsError::write_back`]).
pub(crate) fn write_back(e: Errno) -> VfsError {
    VfsError::write_back(e.raw_os_error())
}

/// Opens `path` (components joined by `/`) beneath `base` without
/// following any symlink; the final component may itself be a symlink
/// when `flags` has O_PATH (the kernel then returns the link itself).
pub(crate) fn open_beneath(base: BorrowedFd<'_>, path: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(base, path, flags, Mode::empty(), BENEATH) {
            Err(Errno::AGAIN) if tries < WALK_RETRIES => tries += 1,
            r => return r,
        }
    }
}

/// Opens a chain of components beneath `base` as O_PATH, in as few
/// `openat2` calls as the path length allows.
pub(crate) fn open_chain(base: BorrowedFd<'_>, comps: &[&[u8]]) -> Result<OwnedFd, Errno> {
    if comps.is_empty() {
        return open_beneath(base, b".", OFlags::PATH | OFlags::DIRECTORY);
    }
    let mut cur: Option<OwnedFd> = None;
    let mut buf = Vec::with_capacity(256);
    let mut i = 0;
    while i < comps.len() {
        buf.clear();
        // At least one component per step; a single component is at most
        // NAME_MAX, far below the limit.
        while i < comps.len() && (buf.is_empty() || buf.len() + 1 + comps[i].len() <= MAX_WALK_BYTES) {
            if !buf.is_empty() {
                buf.push(b'/');
            }
            buf.extend_from_slice(comps[i]);
            i += 1;
        }
        let from = match &cur {
            Some(fd) => fd.as_fd(),
            None => base,
        };
        let next = open_beneath(from, &buf, OFlags::PATH)?;
        cur = Some(next);
    }
    cur.ok_or(Errno::INVAL)
}

/// statx of an fd, with its mount id (to compare entries with).
pub(crate) fn statx_fd(fd: BorrowedFd<'_>) -> VfsResult<Statx> {
    let mask = StatxFlags::BASIC_STATS | StatxFlags::BTIME | StatxFlags::MNT_ID;
    rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW, mask).map_err(errno)
}

pub(crate) fn statx_at(dir: BorrowedFd<'_>, name: &[u8]) -> VfsResult<Statx> {
    rustix::fs::statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::BASIC_STATS | StatxFlags::BTIME).map_err(errno)
}

/// statx of the entry `name` of `dir` (not following a symlink) with its
/// mount id. The kernel steps into a file system mounted on the last
/// component too, so a caller compares the mount with the directory's
/// ([`same_mount`]) before trusting the result as an entry of `dir`.
pub(crate) fn statx_entry(dir: BorrowedFd<'_>, name: &[u8]) -> VfsResult<Statx> {
    let mask = StatxFlags::BASIC_STATS | StatxFlags::BTIME | StatxFlags::MNT_ID;
    rustix::fs::statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, mask).map_err(errno)
}

/// Whether two statx results (of [`statx_entry`]/[`statx_fd`]) are on
/// one mount: the same device and, where the kernel reports it, the same
/// mount id (a bind mount of the same device differs only there).
pub(crate) fn same_mount(a: &Statx, b: &Statx) -> bool {
    let mnt = StatxFlags::MNT_ID.bits();
    (a.stx_dev_major, a.stx_dev_minor) == (b.stx_dev_major, b.stx_dev_minor)
        && (a.stx_mask & b.stx_mask & mnt == 0 || a.stx_mnt_id == b.stx_mnt_id)
}

pub(crate) fn file_type(stx: &Statx) -> FileType {
    match u32::from(stx.stx_mode) & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFBLK => FileType::BlockDevice,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFIFO => FileType::Fifo,
        libc::S_IFSOCK => FileType::Socket,
        _ => FileType::Regular,
    }
}

fn ts(t: &rustix::fs::StatxTimestamp) -> Timespec {
    Timespec { seconds: t.tv_sec, nanos: t.tv_nsec }
}

fn nanos(t: &rustix::fs::StatxTimestamp) -> u64 {
    (t.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(u64::from(t.tv_nsec))
}

/// The birth time in nanoseconds, which tells a reused inode number from
/// the object that had it before; 0 when the file system has none.
pub(crate) fn birth_generation(stx: &Statx) -> u64 {
    if stx.stx_mask & libc::STATX_BTIME != 0 {
        nanos(&stx.stx_btime).max(1)
    } else {
        0
    }
}

pub(crate) fn attrs(stx: &Statx, fsid: u64, generation: u64) -> Attrs {
    Attrs {
        ftype: file_type(stx),
        mode: u32::from(stx.stx_mode) & 0o7777,
        nlink: stx.stx_nlink,
        uid: stx.stx_uid,
        gid: stx.stx_gid,
        size: stx.stx_size,
        used: stx.stx_blocks.saturating_mul(512),
        rdev: (stx.stx_rdev_major, stx.stx_rdev_minor),
        fsid,
        fileid: stx.stx_ino as FileId,
        atime: ts(&stx.stx_atime),
        mtime: ts(&stx.stx_mtime),
        ctime: ts(&stx.stx_ctime),
        generation,
        change: nanos(&stx.stx_ctime),
    }
}

pub(crate) fn ctime(stx: &Statx) -> Timespec {
    ts(&stx.stx_ctime)
}

/// `/proc/self/fd/N`: reopening through this magic link gives a new open
/// file description of exactly the inode `fd` refers to, with new flags,
/// without any path lookup an attacker could race.
pub(crate) fn proc_path(fd: BorrowedFd<'_>) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

/// Reopens an O_PATH fd of a regular file for I/O.
pub(crate) fn reopen(fd: BorrowedFd<'_>, flags: OFlags) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(CWD, proc_path(fd).as_str(), flags | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty())
}

/// Opens a directory (given as O_PATH fd) for reading entries or fsync.
pub(crate) fn open_dir(fd: BorrowedFd<'_>) -> VfsResult<OwnedFd> {
    rustix::fs::openat(fd, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(errno)
}

/// chmod of the inode behind an O_PATH fd. `fchmodat2(AT_EMPTY_PATH)`
/// (Linux 6.6) acts on the fd itself; older kernels go through the magic
/// link, which also cannot be redirected. Symlinks have no mode on Linux.
pub(crate) fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> VfsResult<()> {
    // SAFETY: fchmodat2 takes an fd, a NUL-terminated path, a mode and
    // flags by value; the path is a static empty C string and the fd is
    // borrowed for the duration of the call.
    let r =
        unsafe { libc::syscall(libc::SYS_fchmodat2, fd.as_raw_fd(), c"".as_ptr(), mode & 0o7777, libc::AT_EMPTY_PATH) };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
    match e {
        libc::ENOSYS | libc::EINVAL => {
            rustix::fs::chmodat(CWD, proc_path(fd).as_str(), Mode::from_raw_mode(mode & 0o7777), AtFlags::empty())
                .map_err(errno)
        }
        libc::EOPNOTSUPP => Err(VfsError::NotSupported),
        e => Err(VfsError::from_errno(e)),
    }
}

/// chown of the inode behind an O_PATH fd (a symlink itself, not its target).
pub(crate) fn chown_fd(fd: BorrowedFd<'_>, uid: Option<u32>, gid: Option<u32>) -> VfsResult<()> {
    // -1 means "leave unchanged" to the kernel; as a requested owner it
    // would silently do nothing, so it is refused.
    if uid == Some(u32::MAX) || gid == Some(u32::MAX) {
        return Err(VfsError::Invalid);
    }
    // SAFETY: from_raw is unsafe only because -1 is special, excluded above.
    let (u, g) =
        unsafe { (uid.map(|u| rustix::process::Uid::from_raw(u)), gid.map(|g| rustix::process::Gid::from_raw(g))) };
    rustix::fs::chownat(fd, "", u, g, AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW).map_err(errno)
}

pub(crate) fn set_times(fd: BorrowedFd<'_>, atime: crate::SetTime, mtime: crate::SetTime) -> VfsResult<()> {
    use crate::SetTime;
    fn conv(t: SetTime) -> VfsResult<rustix::fs::Timespec> {
        Ok(match t {
            SetTime::DontChange => rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_OMIT },
            SetTime::ServerNow => rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW },
            SetTime::Client(t) if t.nanos >= 1_000_000_000 => return Err(VfsError::Invalid),
            SetTime::Client(t) => rustix::fs::Timespec { tv_sec: t.seconds, tv_nsec: i64::from(t.nanos) as _ },
        })
    }
    let times = rustix::fs::Timestamps { last_access: conv(atime)?, last_modification: conv(mtime)? };
    rustix::fs::utimensat(fd, "", &times, AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW).map_err(errno)
}

/// Writes all of `data` at `offset` with the given per-write sync flags,
/// falling back to pwrite + (f)datasync where pwritev2 is unavailable.
pub(crate) fn pwrite_all(
    fd: BorrowedFd<'_>,
    mut offset: u64,
    mut data: &[u8],
    flags: rustix::io::ReadWriteFlags,
) -> VfsResult<()> {
    use rustix::io::ReadWriteFlags as F;
    while !data.is_empty() {
        let n = if flags.is_empty() {
            rustix::io::pwrite(fd, data, offset)
        } else {
            match rustix::io::pwritev2(fd, &[std::io::IoSlice::new(data)], offset, flags) {
                Err(Errno::NOSYS) | Err(Errno::OPNOTSUPP) => {
                    let n = rustix::io::pwrite(fd, data, offset).map_err(errno)?;
                    if flags.contains(F::SYNC) {
                        rustix::fs::fsync(fd).map_err(errno)?;
                    } else {
                        rustix::fs::fdatasync(fd).map_err(errno)?;
                    }
                    Ok(n)
                }
                r => r,
            }
        };
        match n {
            Ok(0) => return Err(VfsError::NoSpace),
            Ok(n) => {
                offset += n as u64;
                data = &data[n.min(data.len())..];
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(errno(e)),
        }
    }
    Ok(())
}

/// Reads up to `count` bytes at `offset`, stopping early only at EOF.
pub(crate) fn pread_full(fd: BorrowedFd<'_>, offset: u64, count: usize) -> VfsResult<Vec<u8>> {
    // Not zero-filled first: that was the largest single cost of a READ
    // (29% of server CPU in a profile).
    crate::uninit::pread_up_to(fd, offset, count).map_err(errno)
}

pub(crate) fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// Entry of a directory scan: name, inode number, cookie after it.
pub(crate) struct Scanned {
    pub(crate) name: Vec<u8>,
    pub(crate) ino: u64,
    pub(crate) next_cookie: u64,
    /// From the entry's d_type; None where the file system does not say.
    pub(crate) ftype: Option<FileType>,
}

/// Reads directory entries (without `.` and `..`) from `fd`'s current
/// position, handing each to `f` until it returns false; returns true if
/// the directory was read to its end.
pub(crate) fn scan_dir(fd: BorrowedFd<'_>, buf_size: usize, f: impl FnMut(Scanned) -> bool) -> VfsResult<bool> {
    type Buf = Vec<std::mem::MaybeUninit<u8>>;
    thread_local! {
        /// The getdents buffer of this thread's last scan: a READDIR of a
        /// few entries otherwise spends more in malloc and free of
        /// `readdir_buffer` bytes than in the call itself.
        static SCAN_BUF: std::cell::RefCell<Buf> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let size = buf_size.max(1024);
    SCAN_BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            // Never kept larger than the setting asks.
            if buf.len() != size {
                *buf = vec![std::mem::MaybeUninit::uninit(); size];
            }
            scan_with(fd, &mut buf, f)
        }
        // A scan within a scan (`f` scanning another directory).
        Err(_) => scan_with(fd, &mut vec![std::mem::MaybeUninit::uninit(); size], f),
    })
}

fn scan_with(
    fd: BorrowedFd<'_>,
    buf: &mut [std::mem::MaybeUninit<u8>],
    mut f: impl FnMut(Scanned) -> bool,
) -> VfsResult<bool> {
    let mut dir = rustix::fs::RawDir::new(fd, buf);
    while let Some(entry) = dir.next() {
        let entry = entry.map_err(errno)?;
        let name = entry.file_name().to_bytes();
        if is_dot(name) {
            continue;
        }
        let ftype = match entry.file_type() {
            rustix::fs::FileType::Directory => Some(FileType::Directory),
            rustix::fs::FileType::Unknown => None,
            _ => Some(FileType::Regular),
        };
        let s = Scanned { name: name.to_vec(), ino: entry.ino(), next_cookie: entry.next_entry_cookie(), ftype };
        if !f(s) {
            return Ok(false);
        }
    }
    Ok(true)
}

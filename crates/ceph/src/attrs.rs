//! Ceph's `statx` as the neutral attributes, and SETATTR as Ceph's mask.

use vfs::{Attrs, FileType, SetAttrs, SetTime, Timespec};

use crate::ffi::*;

fn time(t: &libc::timespec) -> Timespec {
    Timespec { seconds: t.tv_sec, nanos: t.tv_nsec as u32 }
}

fn file_type(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFBLK => FileType::BlockDevice,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFIFO => FileType::Fifo,
        _ => FileType::Regular,
    }
}

/// The handle generation of an inode: its birth time in nanoseconds. An
/// inode number given out again belongs to an object born later.
pub(crate) fn generation(stx: &ceph_statx) -> u64 {
    (stx.stx_btime.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(stx.stx_btime.tv_nsec as u64)
}

pub(crate) fn to_attrs(stx: &ceph_statx, fsid: u64) -> Attrs {
    let mode = u32::from(stx.stx_mode);
    Attrs {
        ftype: file_type(mode),
        mode: mode & 0o7777,
        nlink: stx.stx_nlink,
        uid: stx.stx_uid,
        gid: stx.stx_gid,
        size: stx.stx_size,
        used: stx.stx_blocks.saturating_mul(512),
        rdev: (libc::major(stx.stx_rdev), libc::minor(stx.stx_rdev)),
        fsid,
        fileid: stx.stx_ino,
        atime: time(&stx.stx_atime),
        mtime: time(&stx.stx_mtime),
        ctime: time(&stx.stx_ctime),
        generation: generation(stx),
        // CephFS's change attribute: moves on every change of the inode.
        change: stx.stx_version,
    }
}

fn timespec(t: Timespec) -> libc::timespec {
    libc::timespec { tv_sec: t.seconds, tv_nsec: i64::from(t.nanos) }
}

/// `set` as the `statx` and mask `ceph_ll_setattr` takes; mask 0 when
/// nothing is to change.
pub(crate) fn setattr_mask(set: &SetAttrs) -> (ceph_statx, i32) {
    let mut stx = ceph_statx::default();
    let mut mask = 0;
    if let Some(mode) = set.mode {
        stx.stx_mode = (mode & 0o7777) as u16;
        mask |= CEPH_SETATTR_MODE;
    }
    if let Some(uid) = set.uid {
        stx.stx_uid = uid;
        mask |= CEPH_SETATTR_UID;
    }
    if let Some(gid) = set.gid {
        stx.stx_gid = gid;
        mask |= CEPH_SETATTR_GID;
    }
    if let Some(size) = set.size {
        stx.stx_size = size;
        mask |= CEPH_SETATTR_SIZE;
    }
    match set.atime {
        SetTime::DontChange => {}
        // The head's clock, as the client's `_NOW` flags would use; given
        // explicitly because libcephfs 16.2 ignores those flags here.
        SetTime::ServerNow => {
            stx.stx_atime = timespec(Timespec::now());
            mask |= CEPH_SETATTR_ATIME;
        }
        SetTime::Client(t) => {
            stx.stx_atime = timespec(t);
            mask |= CEPH_SETATTR_ATIME;
        }
    }
    match set.mtime {
        SetTime::DontChange => {}
        SetTime::ServerNow => {
            stx.stx_mtime = timespec(Timespec::now());
            mask |= CEPH_SETATTR_MTIME;
        }
        SetTime::Client(t) => {
            stx.stx_mtime = timespec(t);
            mask |= CEPH_SETATTR_MTIME;
        }
    }
    (stx, mask)
}

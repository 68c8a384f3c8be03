//! NFSv3 attributes and errors in the kernel's terms.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo, TimeOrNow};
use proto::nfs3::{fattr3, ftype3, nfsstat3, nfstime3, sattr3, set_atime, set_mtime, time_how};

/// Unit of `st_blocks`.
const BLOCK: u64 = 512;
/// Preferred I/O size reported to programs (`st_blksize`).
pub const BLKSIZE: u32 = 128 * 1024;

pub fn kind(t: ftype3) -> FileType {
    match t {
        ftype3::NF3DIR => FileType::Directory,
        ftype3::NF3LNK => FileType::Symlink,
        ftype3::NF3BLK => FileType::BlockDevice,
        ftype3::NF3CHR => FileType::CharDevice,
        ftype3::NF3SOCK => FileType::Socket,
        ftype3::NF3FIFO => FileType::NamedPipe,
        ftype3::NF3REG => FileType::RegularFile,
    }
}

fn time(t: &nfstime3) -> SystemTime {
    UNIX_EPOCH + Duration::new(u64::from(t.seconds), t.nseconds.min(999_999_999))
}

/// A time the program set, as NFSv3 says it: unsigned 32-bit seconds
/// since 1970, so a time before 1970 is EINVAL and one past 2106
/// EOVERFLOW, rather than silently another time.
fn nfs_time(t: SystemTime) -> Result<nfstime3, Errno> {
    let d = t.duration_since(UNIX_EPOCH).map_err(|_| Errno::EINVAL)?;
    let seconds = u32::try_from(d.as_secs()).map_err(|_| Errno::EOVERFLOW)?;
    Ok(nfstime3 { seconds, nseconds: d.subsec_nanos() })
}

/// The kernel's view of `a` as node `ino`.
pub fn file_attr(ino: u64, a: &fattr3) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: a.size,
        blocks: a.used.div_ceil(BLOCK),
        atime: time(&a.atime),
        mtime: time(&a.mtime),
        ctime: time(&a.ctime),
        crtime: time(&a.ctime),
        kind: kind(a.r#type),
        perm: (a.mode & 0o7777) as u16,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: libc::makedev(a.rdev.specdata1, a.rdev.specdata2) as u32,
        blksize: BLKSIZE,
        flags: 0,
    }
}

/// SETATTR arguments from what the kernel asks to change.
pub fn sattr(
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
) -> Result<sattr3, Errno> {
    let at = match atime {
        None => set_atime::default(time_how::DONT_CHANGE),
        Some(TimeOrNow::Now) => set_atime::default(time_how::SET_TO_SERVER_TIME),
        Some(TimeOrNow::SpecificTime(t)) => set_atime::SET_TO_CLIENT_TIME(nfs_time(t)?),
    };
    let mt = match mtime {
        None => set_mtime::default(time_how::DONT_CHANGE),
        Some(TimeOrNow::Now) => set_mtime::default(time_how::SET_TO_SERVER_TIME),
        Some(TimeOrNow::SpecificTime(t)) => set_mtime::SET_TO_CLIENT_TIME(nfs_time(t)?),
    };
    Ok(sattr3 { mode: mode.map(|m| m & 0o7777), uid, gid, size, atime: at, mtime: mt })
}

/// The errno a failed call gives the program that made it.
pub fn errno(e: &client::Error) -> Errno {
    // NLM has two answers NFS has not.
    if let client::Error::Nlm { status, .. } = e {
        use proto::nlm::nlm4_stats;
        match status {
            nlm4_stats::nlm4_deadlck => return Errno::from_i32(libc::EDEADLK),
            nlm4_stats::nlm4_denied_nolocks => return Errno::from_i32(libc::ENOLCK),
            _ => {}
        }
    }
    // NFSv4.2 errors NFSv3 has no number for (the client's v3 mapping
    // makes them EIO).
    if let client::Error::Nfs4 { status, .. } = e {
        use proto::nfs4::nfsstat4;
        match status {
            nfsstat4::NFS4ERR_NOXATTR => return Errno::ENODATA,
            nfsstat4::NFS4ERR_XATTR2BIG => return Errno::E2BIG,
            // A server refusing this COPY: EOPNOTSUPP makes the kernel
            // copy through read and write instead.
            nfsstat4::NFS4ERR_OFFLOAD_DENIED => return Errno::EOPNOTSUPP,
            _ => {}
        }
    }
    let Some(status) = e.status() else {
        // No answer, or one that made no sense: the server is the problem.
        return Errno::EIO;
    };
    let code = match status {
        nfsstat3::NFS3_OK => libc::EIO,
        nfsstat3::NFS3ERR_PERM => libc::EPERM,
        nfsstat3::NFS3ERR_NOENT => libc::ENOENT,
        nfsstat3::NFS3ERR_IO => libc::EIO,
        nfsstat3::NFS3ERR_NXIO => libc::ENXIO,
        nfsstat3::NFS3ERR_ACCES => libc::EACCES,
        nfsstat3::NFS3ERR_EXIST => libc::EEXIST,
        nfsstat3::NFS3ERR_XDEV => libc::EXDEV,
        nfsstat3::NFS3ERR_NODEV => libc::ENODEV,
        nfsstat3::NFS3ERR_NOTDIR => libc::ENOTDIR,
        nfsstat3::NFS3ERR_ISDIR => libc::EISDIR,
        nfsstat3::NFS3ERR_INVAL => libc::EINVAL,
        nfsstat3::NFS3ERR_FBIG => libc::EFBIG,
        nfsstat3::NFS3ERR_NOSPC => libc::ENOSPC,
        nfsstat3::NFS3ERR_ROFS => libc::EROFS,
        nfsstat3::NFS3ERR_MLINK => libc::EMLINK,
        nfsstat3::NFS3ERR_NAMETOOLONG => libc::ENAMETOOLONG,
        nfsstat3::NFS3ERR_NOTEMPTY => libc::ENOTEMPTY,
        nfsstat3::NFS3ERR_DQUOT => libc::EDQUOT,
        nfsstat3::NFS3ERR_STALE | nfsstat3::NFS3ERR_BADHANDLE => libc::ESTALE,
        nfsstat3::NFS3ERR_REMOTE => libc::EREMOTE,
        nfsstat3::NFS3ERR_NOTSUPP => libc::EOPNOTSUPP,
        nfsstat3::NFS3ERR_BADTYPE => libc::EINVAL,
        nfsstat3::NFS3ERR_JUKEBOX => libc::EAGAIN,
        nfsstat3::NFS3ERR_NOT_SYNC
        | nfsstat3::NFS3ERR_BAD_COOKIE
        | nfsstat3::NFS3ERR_TOOSMALL
        | nfsstat3::NFS3ERR_SERVERFAULT => libc::EIO,
    };
    Errno::from_i32(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_and_errors_translate() {
        let a = fattr3 {
            r#type: ftype3::NF3REG,
            mode: 0o100644,
            nlink: 2,
            uid: 7,
            gid: 8,
            size: 1000,
            used: 4096,
            mtime: nfstime3 { seconds: 10, nseconds: 5 },
            ..Default::default()
        };
        let f = file_attr(42, &a);
        assert_eq!((f.ino, f.perm, f.nlink, f.blocks, f.kind), (INodeNo(42), 0o644, 2, 8, FileType::RegularFile));
        assert_eq!(f.mtime, UNIX_EPOCH + Duration::new(10, 5));
        let e = client::Error::Nfs { proc: "LOOKUP", status: nfsstat3::NFS3ERR_NOENT };
        assert_eq!(errno(&e), Errno::ENOENT);
        assert_eq!(errno(&client::Error::Invalid("x".into())), Errno::EIO);
        use proto::nfs4::nfsstat4;
        let v4 = |status| errno(&client::Error::Nfs4 { op: "GETXATTR", status });
        assert_eq!(v4(nfsstat4::NFS4ERR_NOXATTR), Errno::ENODATA);
        assert_eq!(v4(nfsstat4::NFS4ERR_XATTR2BIG), Errno::E2BIG);
        assert_eq!(v4(nfsstat4::NFS4ERR_EXIST), Errno::EEXIST);
        assert_eq!(v4(nfsstat4::NFS4ERR_NOTSUPP), Errno::EOPNOTSUPP);
        assert_eq!(v4(nfsstat4::NFS4ERR_NXIO), Errno::ENXIO);
        let s = sattr(Some(0o104755), None, None, Some(3), Some(TimeOrNow::Now), None).unwrap();
        assert_eq!((s.mode, s.size), (Some(0o4755), Some(3)));
        assert_eq!(s.atime, set_atime::default(time_how::SET_TO_SERVER_TIME));
        // NFSv3's seconds are unsigned 32-bit: refused, never clamped.
        let at = |secs: i64| {
            let t = if secs < 0 { UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) } else { UNIX_EPOCH + Duration::from_secs(secs as u64) };
            sattr(None, None, None, None, Some(TimeOrNow::SpecificTime(t)), None).map(|s| s.atime)
        };
        assert_eq!(at(1 << 32).unwrap_err(), Errno::EOVERFLOW);
        assert_eq!(at(-1).unwrap_err(), Errno::EINVAL);
        assert_eq!(at(u32::MAX as i64).unwrap(), set_atime::SET_TO_CLIENT_TIME(nfstime3 { seconds: u32::MAX, nseconds: 0 }));
    }
}

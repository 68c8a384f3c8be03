//! The client's attributes and errors in the kernel's terms.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use client::{Fattr, Sattr, SetTime, Time, TimeRangeError};
use fuser::{Errno, FileAttr, FileType, INodeNo, TimeOrNow};
use proto::nfs3::{ftype3, nfsstat3};

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

/// A time from the server as the kernel takes it, before 1970 too.
fn time(t: &Time) -> SystemTime {
    let whole = Duration::from_secs(t.seconds.unsigned_abs());
    let secs = if t.seconds < 0 { UNIX_EPOCH.checked_sub(whole) } else { UNIX_EPOCH.checked_add(whole) };
    let nanos = Duration::from_nanos(u64::from(t.nseconds.min(999_999_999)));
    // Linux's clock holds every i64 of seconds; one that could not hold
    // the server's time shows 1970 rather than failing the stat.
    secs.and_then(|s| s.checked_add(nanos)).unwrap_or(UNIX_EPOCH)
}

/// A time the program set, in `nfstime4`'s terms: signed seconds since
/// 1970 and the nanoseconds after them (1.5 s before 1970 is -2 s and
/// 500,000,000 ns). Whether the protocol in use can carry it is the
/// client's to say (NFSv3 cannot carry a time before 1970 or past 2106).
fn nfs_time(t: SystemTime) -> Result<Time, Errno> {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => {
            let seconds = i64::try_from(d.as_secs()).map_err(|_| Errno::EOVERFLOW)?;
            Ok(Time { seconds, nseconds: d.subsec_nanos() })
        }
        Err(before) => {
            let d = before.duration();
            let whole = i64::try_from(d.as_secs()).map_err(|_| Errno::EOVERFLOW)?;
            Ok(match d.subsec_nanos() {
                0 => Time { seconds: -whole, nseconds: 0 },
                n => Time { seconds: (-whole).checked_sub(1).ok_or(Errno::EOVERFLOW)?, nseconds: 1_000_000_000 - n },
            })
        }
    }
}

fn set_time(t: Option<TimeOrNow>) -> Result<SetTime, Errno> {
    Ok(match t {
        None => SetTime::DontChange,
        Some(TimeOrNow::Now) => SetTime::ServerTime,
        Some(TimeOrNow::SpecificTime(t)) => SetTime::ClientTime(nfs_time(t)?),
    })
}

/// The kernel's view of `a` as node `ino`.
pub fn file_attr(ino: u64, a: &Fattr) -> FileAttr {
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
) -> Result<Sattr, Errno> {
    let (atime, mtime) = (set_time(atime)?, set_time(mtime)?);
    Ok(Sattr { mode: mode.map(|m| m & 0o7777), uid, gid, size, atime, mtime })
}

/// The errno a failed call gives the program that made it.
pub fn errno(e: &client::Error) -> Errno {
    // A time the protocol cannot carry (NFSv3): as utimensat(2) on a file
    // system with 32-bit times.
    match e {
        client::Error::TimeRange(TimeRangeError::BeforeEpoch(_)) => return Errno::EINVAL,
        client::Error::TimeRange(TimeRangeError::TooLate(_)) => return Errno::EOVERFLOW,
        _ => {}
    }
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

    fn at(t: SystemTime) -> Result<SetTime, Errno> {
        sattr(None, None, None, None, Some(TimeOrNow::SpecificTime(t)), None).map(|s| s.atime)
    }

    #[test]
    fn attributes_and_errors_translate() {
        let a = Fattr {
            r#type: ftype3::NF3REG,
            mode: 0o100644,
            nlink: 2,
            uid: 7,
            gid: 8,
            size: 1000,
            used: 4096,
            mtime: Time::new(10, 5),
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
        assert_eq!((s.atime, s.mtime), (SetTime::ServerTime, SetTime::DontChange));
    }

    /// Times the server sends, before 1970 and past 2106, reach the
    /// kernel as they are.
    #[test]
    fn times_past_2106_and_before_1970_are_shown() {
        let shown = |seconds, nseconds| {
            file_attr(1, &Fattr { mtime: Time::new(seconds, nseconds), ..Default::default() }).mtime
        };
        assert_eq!(shown(1 << 32, 0), UNIX_EPOCH + Duration::from_secs(1 << 32));
        assert_eq!(shown(-315_619_200, 0), UNIX_EPOCH - Duration::from_secs(315_619_200));
        // -2 s + 0.5 s is 1.5 s before 1970.
        assert_eq!(shown(-2, 500_000_000), UNIX_EPOCH - Duration::from_millis(1500));
        assert_eq!(shown(i64::MIN, 0), UNIX_EPOCH - Duration::from_secs(1 << 63));
        assert_eq!(shown(i64::MAX, 999_999_999), UNIX_EPOCH + Duration::new(i64::MAX as u64, 999_999_999));
        // Nanoseconds past a second's end are the second's last.
        assert_eq!(shown(0, u32::MAX), UNIX_EPOCH + Duration::new(0, 999_999_999));
    }

    /// A time the program sets goes to the client whole, before 1970 too;
    /// whether the protocol can carry it is the client's to say.
    #[test]
    fn set_times_keep_their_whole_range() {
        let secs = |s: u64| Duration::from_secs(s);
        assert_eq!(at(UNIX_EPOCH + secs(1 << 32)), Ok(SetTime::ClientTime(Time::new(1 << 32, 0))));
        assert_eq!(at(UNIX_EPOCH - secs(315_619_200)), Ok(SetTime::ClientTime(Time::new(-315_619_200, 0))));
        assert_eq!(at(UNIX_EPOCH - Duration::from_millis(1500)), Ok(SetTime::ClientTime(Time::new(-2, 500_000_000))));
        assert_eq!(at(UNIX_EPOCH + Duration::new(3, 7)), Ok(SetTime::ClientTime(Time::new(3, 7))));
        // Round trip: what is set is what is shown.
        for t in [UNIX_EPOCH - Duration::new(86_400 * 365 * 300, 1), UNIX_EPOCH + Duration::new(1 << 40, 2)] {
            let Ok(SetTime::ClientTime(set)) = at(t) else { panic!("{t:?} refused") };
            assert_eq!(time(&set), t);
        }
    }

    /// NFSv3's seconds are unsigned 32-bit: a time outside them is refused
    /// by the client, and the program sees EOVERFLOW past 2106, EINVAL
    /// before 1970, never another time.
    #[test]
    fn nfsv3_refusals_are_eoverflow_and_einval() {
        let v3 = |t: SystemTime| {
            let s = sattr(None, None, None, None, None, Some(TimeOrNow::SpecificTime(t))).unwrap();
            proto::nfs3::sattr3::try_from(&s).map_err(|e| errno(&client::Error::from(e)))
        };
        assert_eq!(v3(UNIX_EPOCH + Duration::from_secs(1 << 32)).unwrap_err(), Errno::EOVERFLOW);
        assert_eq!(v3(UNIX_EPOCH - Duration::from_secs(1)).unwrap_err(), Errno::EINVAL);
        assert_eq!(v3(UNIX_EPOCH - Duration::from_nanos(1)).unwrap_err(), Errno::EINVAL);
        let ok = v3(UNIX_EPOCH + Duration::from_secs(u32::MAX.into())).unwrap();
        let max = proto::nfs3::nfstime3 { seconds: u32::MAX, nseconds: 0 };
        assert_eq!(ok.mtime, proto::nfs3::set_mtime::SET_TO_CLIENT_TIME(max));
    }
}

/// The new object's owner: the calling process's. Under Kerberos the
/// server gives it to the mount's principal, and naming another owner
/// would be refused.
pub(crate) fn owned(req: &fuser::Request, kerberos: bool, mode: Option<u32>) -> Sattr {
    let (uid, gid) = if kerberos { (None, None) } else { (Some(req.uid()), Some(req.gid())) };
    Sattr { mode, uid, gid, ..Default::default() }
}

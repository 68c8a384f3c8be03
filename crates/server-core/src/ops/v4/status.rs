//! The one mapping from backend errors to NFSv4 status.

use proto::nfs4::nfsstat4;
use vfs::VfsError;

pub(crate) fn stat4(e: VfsError) -> nfsstat4 {
    use nfsstat4::*;
    match e {
        VfsError::Perm => NFS4ERR_PERM,
        VfsError::NotFound => NFS4ERR_NOENT,
        VfsError::Io(errno) => {
            tracing::error!("backend I/O error: {errno}");
            NFS4ERR_IO
        }
        // Reported as what its errno means; the data it may have lost is
        // COMMIT's concern (ops::commit).
        e @ VfsError::WriteBack(_) => {
            tracing::error!("backend {e}");
            match e.without_write_back() {
                VfsError::Io(_) => NFS4ERR_IO,
                e => stat4(e),
            }
        }
        VfsError::NxIo => NFS4ERR_NXIO,
        VfsError::Access => NFS4ERR_ACCESS,
        VfsError::Exists => NFS4ERR_EXIST,
        VfsError::XDev => NFS4ERR_XDEV,
        VfsError::NotDir => NFS4ERR_NOTDIR,
        VfsError::IsDir => NFS4ERR_ISDIR,
        VfsError::Invalid => NFS4ERR_INVAL,
        VfsError::FBig => NFS4ERR_FBIG,
        VfsError::NoSpace => NFS4ERR_NOSPC,
        VfsError::ReadOnly => NFS4ERR_ROFS,
        VfsError::MLink => NFS4ERR_MLINK,
        VfsError::NameTooLong => NFS4ERR_NAMETOOLONG,
        VfsError::NotEmpty => NFS4ERR_NOTEMPTY,
        VfsError::Quota => NFS4ERR_DQUOT,
        VfsError::Stale => NFS4ERR_STALE,
        VfsError::BadCookie => NFS4ERR_BAD_COOKIE,
        VfsError::NotSync => NFS4ERR_NOT_SAME,
        VfsError::NotSupported => NFS4ERR_NOTSUPP,
        VfsError::Delay => NFS4ERR_DELAY,
        VfsError::BadType => NFS4ERR_BADTYPE,
        VfsError::NoXattr => NFS4ERR_NOXATTR,
        VfsError::XattrTooBig => NFS4ERR_XATTR2BIG,
    }
}

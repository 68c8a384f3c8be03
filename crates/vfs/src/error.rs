//! The neutral error every backend call returns.
//!
//! Errors the protocols have a status for get a variant of their own. The
//! rest keep their errno ([`VfsError::Io`]), so a log says what the OS
//! said. A failed flush of file data is told apart
//! ([`VfsError::WriteBack`]): data acknowledged as UNSTABLE may be gone
//! with it, and COMMIT must then change the write verifier.

use std::fmt;

pub type VfsResult<T> = Result<T, VfsError>;

/// An OS error number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(i32);

impl Errno {
    pub const EIO: Errno = Errno(libc::EIO);

    pub const fn from_raw(errno: i32) -> Errno {
        Errno(errno)
    }

    pub const fn raw(self) -> i32 {
        self.0
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The C library's text with the number, e.g. "Input/output error
        // (os error 5)".
        fmt::Display::fmt(&std::io::Error::from_raw_os_error(self.0), f)
    }
}

impl From<rustix::io::Errno> for Errno {
    fn from(e: rustix::io::Errno) -> Self {
        Errno(e.raw_os_error())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VfsError {
    #[error("operation not permitted")]
    Perm,
    #[error("no such file or directory")]
    NotFound,
    /// An OS error with no variant of its own (EIO, mostly).
    #[error("I/O error: {0}")]
    Io(Errno),
    /// Flushing file data to stable storage failed. Data written UNSTABLE
    /// before the flush may be lost: Linux marks the pages that failed
    /// clean and tells only the flush that met the error, so a later flush
    /// succeeds without them.
    #[error("write-back failed: {0}")]
    WriteBack(Errno),
    #[error("no such device or address")]
    NxIo,
    #[error("permission denied")]
    Access,
    #[error("file exists")]
    Exists,
    #[error("cross-device link")]
    XDev,
    #[error("not a directory")]
    NotDir,
    #[error("is a directory")]
    IsDir,
    #[error("invalid argument")]
    Invalid,
    #[error("file too large")]
    FBig,
    #[error("no space left on device")]
    NoSpace,
    #[error("read-only file system")]
    ReadOnly,
    #[error("too many links")]
    MLink,
    #[error("name too long")]
    NameTooLong,
    #[error("directory not empty")]
    NotEmpty,
    #[error("disk quota exceeded")]
    Quota,
    /// The object behind a still-valid id no longer exists.
    #[error("stale file handle")]
    Stale,
    /// A readdir cookie that was never handed out for this directory.
    #[error("bad readdir cookie")]
    BadCookie,
    /// The SETATTR guard did not match.
    #[error("object changed since the guard was taken")]
    NotSync,
    #[error("operation not supported by this backend")]
    NotSupported,
    /// Try again later (resource busy, e.g. a delegation being recalled).
    #[error("resource temporarily unavailable")]
    Delay,
    /// A type mismatch the protocol reports specially (e.g. readlink on a file).
    #[error("wrong object type")]
    BadType,
    /// The extended attribute asked for is not set.
    #[error("no such extended attribute")]
    NoXattr,
    /// An extended attribute value larger than the backend stores.
    #[error("extended attribute value too large")]
    XattrTooBig,
}

impl VfsError {
    /// Maps an OS error to the neutral error.
    pub fn from_errno(errno: i32) -> VfsError {
        match errno {
            libc::EPERM => VfsError::Perm,
            libc::ENOENT => VfsError::NotFound,
            libc::ENXIO | libc::ENODEV => VfsError::NxIo,
            libc::EACCES => VfsError::Access,
            libc::EEXIST => VfsError::Exists,
            libc::EXDEV => VfsError::XDev,
            libc::ENOTDIR => VfsError::NotDir,
            libc::EISDIR => VfsError::IsDir,
            libc::EINVAL => VfsError::Invalid,
            libc::EFBIG => VfsError::FBig,
            libc::ENOSPC => VfsError::NoSpace,
            libc::EROFS => VfsError::ReadOnly,
            libc::EMLINK => VfsError::MLink,
            libc::ENAMETOOLONG => VfsError::NameTooLong,
            libc::ENOTEMPTY => VfsError::NotEmpty,
            libc::EDQUOT => VfsError::Quota,
            libc::ESTALE => VfsError::Stale,
            libc::ELOOP => VfsError::Invalid,
            libc::EOPNOTSUPP => VfsError::NotSupported,
            libc::EAGAIN | libc::EBUSY => VfsError::Delay,
            // getxattr/removexattr of an attribute that is not set.
            libc::ENODATA => VfsError::NoXattr,
            libc::E2BIG => VfsError::XattrTooBig,
            e => VfsError::Io(Errno(e)),
        }
    }

    /// Maps the error of a failed flush of file data (`fsync`,
    /// `fdatasync`, or a backend's equivalent) that may have carried data
    /// written UNSTABLE. EIO, ENOSPC and EDQUOT (fsync(2)), and whatever
    /// else a file system reports there, mean the write-back failed; EBADF,
    /// EINVAL and EROFS mean the file cannot be flushed at all, so nothing
    /// was lost by trying.
    pub fn write_back(errno: i32) -> VfsError {
        match errno {
            libc::EBADF | libc::EINVAL | libc::EROFS => VfsError::from_errno(errno),
            e => VfsError::WriteBack(Errno(e)),
        }
    }

    /// What a write-back error means apart from the loss (the error its
    /// errno maps to, e.g. `NoSpace`); any other error as it is. The
    /// protocols report this status for it.
    pub fn without_write_back(self) -> VfsError {
        match self {
            VfsError::WriteBack(e) => VfsError::from_errno(e.raw()),
            other => other,
        }
    }
}

impl From<std::io::Error> for VfsError {
    fn from(e: std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(n) => VfsError::from_errno(n),
            None => {
                // The detail has no errno to travel in.
                tracing::error!(error = %e, "I/O error without an errno, reported as EIO");
                VfsError::Io(Errno::EIO)
            }
        }
    }
}

impl From<rustix::io::Errno> for VfsError {
    fn from(e: rustix::io::Errno) -> Self {
        VfsError::from_errno(e.raw_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmapped_errno_is_kept_and_readable() {
        let e = VfsError::from_errno(libc::EIO);
        assert_eq!(e, VfsError::Io(Errno::EIO));
        let text = e.to_string();
        assert!(text.starts_with("I/O error: "), "{text}");
        assert!(text.contains("os error 5"), "{text}");
        assert_eq!(VfsError::from(std::io::Error::other("no errno here")), VfsError::Io(Errno::EIO));
    }

    #[test]
    fn flush_errors_that_lose_data_are_write_back_errors() {
        for errno in [libc::EIO, libc::ENOSPC, libc::EDQUOT, libc::ESTALE] {
            assert_eq!(VfsError::write_back(errno), VfsError::WriteBack(Errno::from_raw(errno)));
        }
        assert_eq!(VfsError::write_back(libc::EINVAL), VfsError::Invalid);
        assert_eq!(VfsError::write_back(libc::EROFS), VfsError::ReadOnly);
        assert_eq!(VfsError::write_back(libc::ENOSPC).without_write_back(), VfsError::NoSpace);
        assert_eq!(VfsError::write_back(libc::EIO).without_write_back(), VfsError::Io(Errno::EIO));
        assert_eq!(VfsError::Stale.without_write_back(), VfsError::Stale);
    }
}

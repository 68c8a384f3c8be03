//! Extended attributes of [`LocalFs`] (RFC 8276), kept in the host's
//! `user.` namespace as knfsd keeps them, so a tree exported by either
//! server shows the same attributes.
//!
//! The object is the one its id resolves to, reached through its O_PATH fd
//! as `/proc/self/fd/N`: the `f*xattr` calls refuse O_PATH fds (EBADF),
//! and the magic link names exactly the inode resolved, with no lookup by
//! name that could be raced (see [`super::sys::reopen`]). Only regular
//! files and directories are handed to the kernel: Linux keeps `user.`
//! attributes off every other type (reading one says ENODATA, changing one
//! EPERM, `xattr_permission`), and this gives the same answers without
//! ever following a symbolic link's magic link.

use std::os::fd::AsFd;

use bytes::Bytes;
use rustix::fs::XattrFlags;
use rustix::io::Errno;

use super::resolve::Obj;
use super::sys::{self, errno};
use super::LocalFs;
use crate::{check_xattr_name, Attrs, FileId, FileType, VfsError, VfsResult, XattrSet};
use crate::{XATTR_SIZE_MAX, XATTR_USER_PREFIX};

/// Longest list of names Linux returns (`XATTR_LIST_MAX`); a buffer this
/// big never gets ERANGE.
const XATTR_LIST_MAX: usize = 65536;

/// Looked up once to tell a file system without `user.` attributes.
const PROBE_NAME: &str = "user.nfsx.probe";

/// The host's name of a protocol attribute: `user.<name>`.
fn host_name(name: &[u8]) -> VfsResult<Vec<u8>> {
    check_xattr_name(name)?;
    let mut host = Vec::with_capacity(XATTR_USER_PREFIX.len() + name.len());
    host.extend_from_slice(XATTR_USER_PREFIX);
    host.extend_from_slice(name);
    Ok(host)
}

/// Whether Linux lets the object have `user.` attributes.
fn has_user_xattrs(o: &Obj) -> bool {
    matches!(o.ftype(), FileType::Regular | FileType::Directory)
}

fn path_of(o: &Obj) -> String {
    sys::proc_path(o.fd.as_fd())
}

impl LocalFs {
    /// Fresh attributes after a change (the ctime moved).
    fn attrs_after(&self, o: &Obj) -> VfsResult<Attrs> {
        Ok(self.attrs_of(&sys::statx_fd(o.fd.as_fd())?))
    }

    pub(super) fn xattr_support_impl(&self) -> bool {
        *self.probes.xattrs.get_or_init(|| {
            let root = sys::proc_path(self.root_fd.as_fd());
            // Absent (ENODATA) or present both say the namespace exists.
            let supported = !matches!(rustix::fs::getxattr(root.as_str(), PROBE_NAME, &mut []), Err(Errno::OPNOTSUPP));
            tracing::debug!(supported, "user xattr probe of the export");
            supported
        })
    }

    pub(super) fn getxattr_impl(&self, id: FileId, name: &[u8]) -> VfsResult<Bytes> {
        let host = host_name(name)?;
        let o = self.resolve(id)?;
        if !has_user_xattrs(&o) {
            return Err(VfsError::NoXattr);
        }
        // No value is larger, so one call does (no size query to race with).
        let mut buf = vec![0u8; XATTR_SIZE_MAX];
        let n = rustix::fs::getxattr(path_of(&o).as_str(), host.as_slice(), &mut buf).map_err(errno)?;
        buf.truncate(n);
        Ok(Bytes::from(buf))
    }

    pub(super) fn setxattr_impl(&self, id: FileId, name: &[u8], value: &[u8], how: XattrSet) -> VfsResult<Attrs> {
        let host = host_name(name)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(VfsError::XattrTooBig);
        }
        let o = self.resolve(id)?;
        if !has_user_xattrs(&o) {
            return Err(VfsError::Perm);
        }
        let flags = match how {
            XattrSet::Either => XattrFlags::empty(),
            XattrSet::Create => XattrFlags::CREATE,
            XattrSet::Replace => XattrFlags::REPLACE,
        };
        // EEXIST and ENODATA map to Exists and NoXattr.
        rustix::fs::setxattr(path_of(&o).as_str(), host.as_slice(), value, flags).map_err(errno)?;
        self.attrs_after(&o)
    }

    pub(super) fn listxattrs_impl(&self, id: FileId) -> VfsResult<Vec<Bytes>> {
        let o = self.resolve(id)?;
        if !has_user_xattrs(&o) {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; XATTR_LIST_MAX];
        let n = rustix::fs::listxattr(path_of(&o).as_str(), &mut buf).map_err(errno)?;
        let mut names: Vec<Bytes> = buf[..n]
            .split(|&b| b == 0)
            .filter_map(|n| n.strip_prefix(XATTR_USER_PREFIX))
            .filter(|n| !n.is_empty())
            .map(Bytes::copy_from_slice)
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    pub(super) fn removexattr_impl(&self, id: FileId, name: &[u8]) -> VfsResult<Attrs> {
        let host = host_name(name)?;
        let o = self.resolve(id)?;
        if !has_user_xattrs(&o) {
            return Err(VfsError::Perm);
        }
        rustix::fs::removexattr(path_of(&o).as_str(), host.as_slice()).map_err(errno)?;
        self.attrs_after(&o)
    }
}

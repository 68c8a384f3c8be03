//! Extended attributes (RFC 8276) in CephFS's `user.` namespace.

use bytes::Bytes;
use vfs::{
    check_xattr_name, Attrs, FileId, FileType, VfsError, VfsResult, XattrSet, XATTR_SIZE_MAX, XATTR_USER_PREFIX,
};

use crate::fs::CephFs;
use crate::mount::{check, cstr};
use crate::nodes::Node;

/// The host name of attribute `name`.
fn host_name(name: &[u8]) -> VfsResult<std::ffi::CString> {
    check_xattr_name(name)?;
    cstr(&[XATTR_USER_PREFIX, name].concat())
}

impl CephFs {
    /// Linux keeps `user.` attributes off symbolic links (and devices):
    /// the same answers here, so a client sees one behaviour on any backend.
    fn holds_xattrs(&self, n: &Node) -> VfsResult<bool> {
        Ok(matches!(self.ftype(n)?, FileType::Regular | FileType::Directory))
    }

    pub(crate) fn do_getxattr(&self, id: FileId, name: &[u8]) -> VfsResult<Bytes> {
        let n = self.node(id)?;
        let c = host_name(name)?;
        if !self.holds_xattrs(&n)? {
            return Err(VfsError::NoXattr);
        }
        let mut buf = vec![0u8; XATTR_SIZE_MAX];
        // SAFETY: a referenced inode; the buffer's length is passed.
        let len = check(unsafe {
            (self.m.api.ceph_ll_getxattr)(
                self.m.cm,
                n.inode,
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                self.m.perms,
            )
        })?;
        buf.truncate(len as usize);
        Ok(Bytes::from(buf))
    }

    pub(crate) fn do_setxattr(&self, id: FileId, name: &[u8], value: &[u8], how: XattrSet) -> VfsResult<Attrs> {
        if value.len() > XATTR_SIZE_MAX {
            return Err(VfsError::XattrTooBig);
        }
        self.recall_own(&[id])?;
        let n = self.node(id)?;
        let c = host_name(name)?;
        if !self.holds_xattrs(&n)? {
            return Err(VfsError::Perm);
        }
        let flags = match how {
            XattrSet::Either => 0,
            XattrSet::Create => libc::XATTR_CREATE,
            XattrSet::Replace => libc::XATTR_REPLACE,
        };
        // SAFETY: a referenced inode; `value` is readable for its length.
        check(unsafe {
            (self.m.api.ceph_ll_setxattr)(
                self.m.cm,
                n.inode,
                c.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                flags,
                self.m.perms,
            )
        })?;
        self.attrs(&n)
    }

    pub(crate) fn do_listxattrs(&self, id: FileId) -> VfsResult<Vec<Bytes>> {
        let n = self.node(id)?;
        if !self.holds_xattrs(&n)? {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; XATTR_SIZE_MAX];
        let mut len = 0usize;
        // SAFETY: a referenced inode; the buffer's length is passed and `len` is written.
        check(unsafe {
            (self.m.api.ceph_ll_listxattr)(
                self.m.cm,
                n.inode,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut len,
                self.m.perms,
            )
        })?;
        let mut names: Vec<Bytes> = buf[..len.min(buf.len())]
            .split(|&b| b == 0)
            .filter_map(|full| full.strip_prefix(XATTR_USER_PREFIX))
            .filter(|n| !n.is_empty())
            .map(Bytes::copy_from_slice)
            .collect();
        names.sort();
        Ok(names)
    }

    pub(crate) fn do_removexattr(&self, id: FileId, name: &[u8]) -> VfsResult<Attrs> {
        self.recall_own(&[id])?;
        let n = self.node(id)?;
        let c = host_name(name)?;
        if !self.holds_xattrs(&n)? {
            return Err(VfsError::NoXattr);
        }
        // SAFETY: a referenced inode and a C string.
        check(unsafe { (self.m.api.ceph_ll_removexattr)(self.m.cm, n.inode, c.as_ptr(), self.m.perms) })?;
        self.attrs(&n)
    }
}

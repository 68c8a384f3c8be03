//! Extended attributes of [`MemFs`] (RFC 8276), with the limits and
//! answers of Linux's `user.` namespace, so a client sees the same
//! behaviour as from LocalFs: values up to `XATTR_SIZE_MAX`, names as
//! [`check_xattr_name`] allows, and attributes only on regular files and
//! directories (reading one elsewhere says `NoXattr`, changing one `Perm`).
//!
//! Attribute bytes are charged to the budget file data is charged to, so
//! attributes cannot take more memory than the MemFs was given.

use bytes::Bytes;

use super::node::{Body, Node};
use super::MemFs;
use crate::{check_xattr_name, Attrs, FileId, VfsError, VfsResult, XattrSet, XATTR_SIZE_MAX, XATTR_USER_PREFIX};

/// Most bytes the names of one object's attributes may take as Linux
/// lists them (`user.<name>` and a NUL each; `XATTR_LIST_MAX`), so every
/// list fits one LISTXATTRS as it would from the host.
const XATTR_LIST_MAX: usize = 65536;

/// Whether Linux lets the object have `user.` attributes.
fn has_user_xattrs(n: &Node) -> bool {
    matches!(n.body, Body::File(_) | Body::Dir(_))
}

fn listed_len(name: &[u8]) -> usize {
    XATTR_USER_PREFIX.len() + name.len() + 1
}

impl MemFs {
    pub(super) fn getxattr_impl(&self, id: FileId, name: &[u8]) -> VfsResult<Bytes> {
        check_xattr_name(name)?;
        let n = self.node(id)?;
        let g = n.state.read();
        g.live()?;
        g.meta.xattrs.get(name).cloned().ok_or(VfsError::NoXattr)
    }

    pub(super) fn setxattr_impl(&self, id: FileId, name: &[u8], value: &[u8], how: XattrSet) -> VfsResult<Attrs> {
        check_xattr_name(name)?;
        if value.len() > XATTR_SIZE_MAX {
            return Err(VfsError::XattrTooBig);
        }
        let n = self.node(id)?;
        let mut g = n.state.write();
        g.live()?;
        if !has_user_xattrs(&g) {
            return Err(VfsError::Perm);
        }
        let old = g.meta.xattrs.get(name).map(|v| v.len());
        match (how, old) {
            (XattrSet::Create, Some(_)) => return Err(VfsError::Exists),
            (XattrSet::Replace, None) => return Err(VfsError::NoXattr),
            _ => {}
        }
        let listed: usize = g.meta.xattrs.keys().map(|k| listed_len(k)).sum();
        if old.is_none() && listed + listed_len(name) > XATTR_LIST_MAX {
            return Err(VfsError::NoSpace);
        }
        // Charge the new value before anything changes; give back the old.
        let new_bytes = (value.len() + if old.is_none() { name.len() } else { 0 }) as u64;
        self.budget.reserve(new_bytes)?;
        self.budget.release(old.unwrap_or(0) as u64);
        g.meta.xattrs.insert(Bytes::copy_from_slice(name), Bytes::copy_from_slice(value));
        g.meta.touch_ctime();
        Ok(self.attrs(id, &g))
    }

    pub(super) fn listxattrs_impl(&self, id: FileId) -> VfsResult<Vec<Bytes>> {
        let n = self.node(id)?;
        let g = n.state.read();
        g.live()?;
        // A BTreeMap of byte strings lists them sorted.
        Ok(g.meta.xattrs.keys().cloned().collect())
    }

    pub(super) fn removexattr_impl(&self, id: FileId, name: &[u8]) -> VfsResult<Attrs> {
        check_xattr_name(name)?;
        let n = self.node(id)?;
        let mut g = n.state.write();
        g.live()?;
        if !has_user_xattrs(&g) {
            return Err(VfsError::Perm);
        }
        let (k, v) = g.meta.xattrs.remove_entry(name).ok_or(VfsError::NoXattr)?;
        self.budget.release((k.len() + v.len()) as u64);
        g.meta.touch_ctime();
        Ok(self.attrs(id, &g))
    }
}

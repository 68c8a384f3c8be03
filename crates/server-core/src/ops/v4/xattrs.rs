//! What the extended attribute operations of RFC 8276 share: the object
//! (any type of an export whose backend stores them; none in the pseudo
//! file system) and the checks on a name. The protocol's names live in
//! the host's `user.` namespace (see vfs::XATTR_USER_PREFIX).

use bytes::Bytes;
use proto::nfs4::*;

use super::status::stat4;
use super::{Compound, Obj};

/// The current object, if extended attributes can be kept on it, and
/// where they are.
pub(super) fn object<'a>(cx: &Compound<'a>) -> Result<(Obj<'a>, &'a dyn vfs::Xattrs), nfsstat4> {
    let obj = cx.cobj(nfsstat4::NFS4ERR_NOTSUPP)?;
    let store = obj.fs().xattrs().ok_or(nfsstat4::NFS4ERR_NOTSUPP)?;
    Ok((obj, store))
}

/// A name as RFC 8276 section 8.1 allows it: UTF-8 (a component4), not
/// empty, not longer than the host stores (NAMETOOLONG).
pub(super) fn name(key: &Bytes) -> Result<&[u8], nfsstat4> {
    if std::str::from_utf8(key).is_err() {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    vfs::check_xattr_name(key).map_err(stat4)?;
    Ok(key)
}

/// change_info4 of the object an attribute was set on or removed from.
pub(super) fn cinfo(before: &Obj, after: &vfs::Attrs) -> change_info4 {
    change_info4 { atomic: false, before: before.attrs.change, after: after.change }
}

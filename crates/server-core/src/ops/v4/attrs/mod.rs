//! NFSv4 attributes (RFC 8881 section 5): fattr4 encoding for GETATTR and
//! READDIR, decoding for SETATTR/OPEN/CREATE, comparison for VERIFY.

use proto::nfs4::*;
use vfs::SetAttrs;

use super::Compound;

/// Decodes the settable attributes in `fattr` (SETATTR, OPEN and CREATE
/// `createattrs`) and returns them with the bitmap of those that were
/// given (`attrsset`). Unsupported or read-only attributes get
/// NFS4ERR_ATTRNOTSUPP / NFS4ERR_INVAL, malformed values NFS4ERR_BADXDR,
/// unknown owners NFS4ERR_BADOWNER.
pub(crate) fn decode_set(cx: &Compound, fattr: &fattr4) -> Result<(SetAttrs, bitmap4), nfsstat4> {
    let _ = (cx, fattr);
    Err(nfsstat4::NFS4ERR_ATTRNOTSUPP)
}

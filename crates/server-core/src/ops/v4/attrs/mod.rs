//! NFSv4 attributes (RFC 8881 section 5): fattr4 encoding for GETATTR and
//! READDIR, decoding for SETATTR/OPEN/CREATE, comparison for VERIFY.
//!
//! Bitmaps are handled as given: words beyond the attributes we know are
//! read (and ignored where they are zero), never assumed absent.

mod decode;
mod encode;
pub(crate) mod idmap;
pub(crate) mod notify;

use proto::nfs4::*;
use vfs::SetAttrs;

use super::Compound;

pub(crate) use encode::{encode, rdattr_error_only, supported_mask, Subject};

/// Attributes a client may only set (RFC 8881 section 5.7): asking for
/// them in GETATTR, READDIR, VERIFY or NVERIFY is NFS4ERR_INVAL.
pub(crate) const WRITE_ONLY: [u32; 2] = [FATTR4_TIME_ACCESS_SET, FATTR4_TIME_MODIFY_SET];

pub(crate) use proto::bitmap4::{add, bits, has};

/// Decodes the settable attributes in `fattr` (SETATTR, OPEN and CREATE
/// `createattrs`) and returns them with the bitmap of those that were
/// given (`attrsset`). Unsupported or read-only attributes get
/// NFS4ERR_ATTRNOTSUPP / NFS4ERR_INVAL, malformed values NFS4ERR_BADXDR,
/// unknown owners NFS4ERR_BADOWNER.
pub(crate) fn decode_set(cx: &Compound, fattr: &fattr4) -> Result<(SetAttrs, bitmap4), nfsstat4> {
    decode::decode_set(cx, fattr)
}

/// VERIFY and NVERIFY: whether the attributes in `fattr` equal the
/// current object's, compared in their encoded form (RFC 8881 sections
/// 18.15 and 18.31). rdattr_error and write-only attributes are
/// NFS4ERR_INVAL, attributes we do not support NFS4ERR_ATTRNOTSUPP.
pub(crate) fn same_as_current(cx: &Compound, fattr: &fattr4) -> Result<bool, nfsstat4> {
    let mask = &fattr.attrmask;
    if has(mask, FATTR4_RDATTR_ERROR) || WRITE_ONLY.iter().any(|n| has(mask, *n)) {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let supported = supported_mask(cx.minor, super::pnfs::data_servers(cx).is_some());
    if bits(mask).any(|n| !has(supported, n)) {
        return Err(nfsstat4::NFS4ERR_ATTRNOTSUPP);
    }
    let subject = Subject::current(cx)?;
    let ours = encode(cx, &subject, mask)?;
    Ok(ours.attr_vals == fattr.attr_vals)
}

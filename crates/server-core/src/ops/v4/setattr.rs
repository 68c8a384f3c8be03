//! SETATTR (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: SETATTR4args) -> SETATTR4res {
    let _ = (cx, args);
    SETATTR4res { status: nfsstat4::NFS4ERR_NOTSUPP, attrsset: Vec::new() }
}

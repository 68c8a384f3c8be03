//! SETCLIENTID (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: SETCLIENTID4args) -> SETCLIENTID4res {
    let _ = (cx, args);
    SETCLIENTID4res::default(nfsstat4::NFS4ERR_NOTSUPP)
}

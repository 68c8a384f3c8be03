//! LOCKT (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: LOCKT4args) -> LOCKT4res {
    let _ = (cx, args);
    LOCKT4res::default(nfsstat4::NFS4ERR_NOTSUPP)
}

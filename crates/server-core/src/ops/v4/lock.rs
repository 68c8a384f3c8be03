//! LOCK (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: LOCK4args) -> LOCK4res {
    let _ = (cx, args);
    LOCK4res::default(nfsstat4::NFS4ERR_NOTSUPP)
}

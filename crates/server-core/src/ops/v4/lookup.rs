//! LOOKUP (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: LOOKUP4args) -> Result<(), nfsstat4> {
    let _ = (cx, args);
    Err(nfsstat4::NFS4ERR_NOTSUPP)
}

//! SET_SSV (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: SET_SSV4args) -> Result<SET_SSV4resok, nfsstat4> {
    let _ = (cx, args);
    Err(nfsstat4::NFS4ERR_NOTSUPP)
}

//! RENAME (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: RENAME4args) -> Result<RENAME4resok, nfsstat4> {
    let _ = (cx, args);
    Err(nfsstat4::NFS4ERR_NOTSUPP)
}

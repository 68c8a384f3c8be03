//! TEST_STATEID (RFC 8881 section 18).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: TEST_STATEID4args) -> Result<TEST_STATEID4resok, nfsstat4> {
    let _ = (cx, args);
    Err(nfsstat4::NFS4ERR_NOTSUPP)
}

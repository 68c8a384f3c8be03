//! VERIFY (RFC 8881 section 18.31): NFS4ERR_NOT_SAME unless every given
//! attribute equals the current object's.

use proto::nfs4::*;

use super::attrs;
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: VERIFY4args) -> Result<(), nfsstat4> {
    if attrs::same_as_current(cx, &args.obj_attributes)? {
        Ok(())
    } else {
        Err(nfsstat4::NFS4ERR_NOT_SAME)
    }
}

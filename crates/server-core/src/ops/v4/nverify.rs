//! NVERIFY (RFC 8881 section 18.15): NFS4ERR_SAME when every given
//! attribute equals the current object's.

use proto::nfs4::*;

use super::attrs;
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: NVERIFY4args) -> Result<(), nfsstat4> {
    if attrs::same_as_current(cx, &args.obj_attributes)? {
        Err(nfsstat4::NFS4ERR_SAME)
    } else {
        Ok(())
    }
}

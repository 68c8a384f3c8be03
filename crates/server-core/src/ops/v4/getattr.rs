//! GETATTR (RFC 8881 section 18.7): the supported attributes among those
//! asked for; write-only attributes are NFS4ERR_INVAL (they have no value
//! to return).

use proto::nfs4::*;

use super::attrs::{self, Subject};
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: GETATTR4args) -> Result<GETATTR4resok, nfsstat4> {
    let subject = Subject::current(cx)?;
    if attrs::WRITE_ONLY.iter().any(|n| attrs::has(&args.attr_request, *n)) {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let obj_attributes = attrs::encode(cx, &subject, &args.attr_request)?;
    Ok(GETATTR4resok { obj_attributes })
}

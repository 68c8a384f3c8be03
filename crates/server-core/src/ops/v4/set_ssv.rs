//! SET_SSV (RFC 8881 section 18.47): only for SP4_SSV state protection,
//! which EXCHANGE_ID never grants.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: SET_SSV4args) -> Result<SET_SSV4resok, nfsstat4> {
    let _ = (cx, args);
    Err(nfsstat4::NFS4ERR_INVAL)
}

//! OFFLOAD_CANCEL (RFC 7862 section 15.8): stops an asynchronous COPY
//! before its next chunk. What it copied stays copied; no CB_OFFLOAD
//! follows. An unknown copy stateid is NFS4ERR_BAD_STATEID.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: OFFLOAD_CANCEL4args) -> Result<(), nfsstat4> {
    cx.cobj(nfsstat4::NFS4ERR_WRONG_TYPE)?;
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
    if cx.state().offload_cancel(client, &args.oca_stateid) {
        Ok(())
    } else {
        Err(nfsstat4::NFS4ERR_BAD_STATEID)
    }
}

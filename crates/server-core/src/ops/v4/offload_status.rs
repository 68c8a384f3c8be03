//! OFFLOAD_STATUS (RFC 7862 section 15.9): progress of an asynchronous
//! COPY named by its copy stateid: the bytes copied so far, and its
//! status once it ended. A stateid that names no copy of this client
//! (never started, cancelled, forgotten a lease after it ended, or lost
//! with a server restart) is NFS4ERR_BAD_STATEID.

use std::sync::atomic::Ordering;

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: OFFLOAD_STATUS4args) -> Result<OFFLOAD_STATUS4resok, nfsstat4> {
    cx.cobj(nfsstat4::NFS4ERR_WRONG_TYPE)?;
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
    let job = cx.state().offload_status(client, &args.osa_stateid).ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
    Ok(OFFLOAD_STATUS4resok {
        osr_count: job.copied.load(Ordering::Acquire),
        osr_complete: job.finished().into_iter().collect(),
    })
}

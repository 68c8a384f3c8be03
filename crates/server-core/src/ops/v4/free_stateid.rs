//! FREE_STATEID (RFC 8881 section 18.38): frees a lock stateid without
//! locks or a revoked delegation; anything still holding locks (opens,
//! lock stateids with locks, live delegations) is NFS4ERR_LOCKS_HELD.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: FREE_STATEID4args) -> Result<(), nfsstat4> {
    let st = cx.state();
    let sid = cx.resolve_stateid(&args.fsa_stateid)?;
    if sid.other == [0; 12] || sid.other == [0xff; 12] {
        return Err(nfsstat4::NFS4ERR_BAD_STATEID);
    }
    st.free_stateid(cx.minor, cx.session_client(), &sid)
}

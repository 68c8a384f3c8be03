//! TEST_STATEID (RFC 8881 section 18.48): the status each stateid would
//! get if used, for the session's client; special stateids are bad. It
//! does not renew the lease.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: TEST_STATEID4args) -> Result<TEST_STATEID4resok, nfsstat4> {
    let st = cx.state();
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
    Ok(TEST_STATEID4resok { tsr_status_codes: st.test_stateids(client, &args.ts_stateids) })
}

//! BIND_CONN_TO_SESSION (RFC 8881 section 18.34): associates the
//! connection the request came on with a session's fore and/or back
//! channel.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: BIND_CONN_TO_SESSION4args) -> Result<BIND_CONN_TO_SESSION4resok, nfsstat4> {
    let sid = args.bctsa_sessid;
    let dir = cx.state().bind_conn_to_session(&sid, cx.conn(), args.bctsa_dir)?;
    Ok(BIND_CONN_TO_SESSION4resok { bctsr_sessid: sid, bctsr_dir: dir, bctsr_use_conn_in_rdma_mode: false })
}

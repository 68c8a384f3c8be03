//! BACKCHANNEL_CTL (RFC 8881 section 18.33): a new callback program
//! number and security for the session's back channel.

use proto::nfs4::*;

use super::Compound;
use crate::state::callback;

pub(super) fn run(cx: &mut Compound, args: BACKCHANNEL_CTL4args) -> Result<(), nfsstat4> {
    let Some(seq) = cx.seq.clone() else { return Err(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION) };
    if callback::usable_sec(&args.bca_sec_parms).is_none() {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let st = cx.state();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    let cell = st.sessions.get(&seq.sessionid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
    let mut s = cell.lock();
    s.cb_program = args.bca_cb_program;
    s.cb_sec = args.bca_sec_parms;
    let bound = s.backchannel.as_ref().map(|b| b.conn);
    drop(s);
    if let Some(conn) = bound {
        callback::bind(st, t, &seq.sessionid, conn);
    }
    Ok(())
}

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
    cx.state().backchannel_ctl(&seq.sessionid, args.bca_cb_program, args.bca_sec_parms)
}

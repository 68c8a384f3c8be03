//! BACKCHANNEL_CTL (RFC 8881 section 18.33): a new callback program
//! number and security for the session's back channel.

use proto::nfs4::*;

use super::Compound;
use crate::rpc::Auth;
use crate::state::cb_sec::CbOffer;

pub(super) fn run(cx: &mut Compound, args: BACKCHANNEL_CTL4args) -> Result<(), nfsstat4> {
    let Some(seq) = cx.seq.clone() else { return Err(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION) };
    let offers = offers(cx, &args.bca_sec_parms)?;
    if offers.is_empty() {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    cx.state().backchannel_ctl(&seq.sessionid, args.bca_cb_program, offers)
}

/// The flavors a client offers for callbacks (`csa_sec_parms`,
/// `bca_sec_parms`), each RPCSEC_GSS one resolved to the context it
/// lends: NFS4ERR_NOENT when its `gcbp_handle_from_server` names no
/// context of the caller's (sections 18.33.3 and 18.36.4).
pub(super) fn offers(cx: &Compound, parms: &[callback_sec_parms4]) -> Result<Vec<CbOffer>, nfsstat4> {
    let caller = match &cx.call.auth {
        Auth::Gss(c) => Some(c),
        _ => None,
    };
    let now = cx.state().now();
    parms
        .iter()
        .map(|p| match p {
            callback_sec_parms4::RPCSEC_GSS(h) => cx.core.gss.lend(h, caller, now).map(CbOffer::Gss),
            plain => Ok(CbOffer::Plain(plain.clone())),
        })
        .collect()
}

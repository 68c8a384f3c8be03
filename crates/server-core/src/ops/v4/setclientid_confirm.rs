//! SETCLIENTID_CONFIRM (RFC 7530 section 16.34).

use proto::nfs4::*;

use super::Compound;
use crate::state::clients::Principal;

pub(super) fn run(cx: &mut Compound, args: SETCLIENTID_CONFIRM4args) -> Result<(), nfsstat4> {
    let principal = Principal::of(&cx.call.auth);
    cx.state().setclientid_confirm(args.clientid, args.setclientid_confirm, principal)
}

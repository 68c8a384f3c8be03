//! SETCLIENTID (RFC 7530 section 16.33): the 4.0 way to establish a
//! client id, sharing the client table and leases with EXCHANGE_ID.

use proto::nfs4::*;

use super::Compound;
use crate::state::clients::Principal;

pub(super) fn run(cx: &mut Compound, args: SETCLIENTID4args) -> SETCLIENTID4res {
    let principal = Principal::of(&cx.call.auth);
    let set = cx.state().setclientid(args.client.id, args.client.verifier, principal, args.callback.cb_location);
    match set {
        Ok(ok) => SETCLIENTID4res::NFS4_OK(ok),
        Err(Some(addr)) => SETCLIENTID4res::NFS4ERR_CLID_INUSE(addr),
        Err(None) => SETCLIENTID4res::default(nfsstat4::NFS4ERR_RESOURCE),
    }
}

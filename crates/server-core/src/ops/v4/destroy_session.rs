//! DESTROY_SESSION (RFC 8881 section 18.37).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: DESTROY_SESSION4args) -> Result<(), nfsstat4> {
    let sid = args.dsa_sessionid;
    // The compound destroying the session may itself run in it.
    let own_slot = cx.seq.as_ref().filter(|q| q.sessionid == sid).map(|q| q.slotid as usize);
    cx.state().destroy_session(&sid, own_slot)
}

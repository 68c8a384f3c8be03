//! DESTROY_CLIENTID (RFC 8881 section 18.50).

use proto::nfs4::*;

use super::Compound;
use crate::state::clients;

pub(super) fn run(cx: &mut Compound, args: DESTROY_CLIENTID4args) -> Result<(), nfsstat4> {
    let st = cx.state();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    let id = args.dca_clientid;
    let Some(c) = t.clients.get(id) else { return Err(nfsstat4::NFS4ERR_STALE_CLIENTID) };
    if c.minor == 0 {
        return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
    }
    if !c.expired && (!c.sessions.is_empty() || t.stateids.has_state(id)) {
        return Err(nfsstat4::NFS4ERR_CLIENTID_BUSY);
    }
    let owner = c.owner.clone();
    let known = c.reclaimable && !c.reclaim_complete;
    clients::destroy(st, t, id);
    if known {
        t.grace.forget(&owner);
    }
    Ok(())
}

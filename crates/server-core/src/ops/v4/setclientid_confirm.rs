//! SETCLIENTID_CONFIRM (RFC 7530 section 16.34).

use proto::nfs4::*;

use super::Compound;
use crate::state::clients::{self, Principal};

pub(super) fn run(cx: &mut Compound, args: SETCLIENTID_CONFIRM4args) -> Result<(), nfsstat4> {
    let principal = Principal::of(&cx.call.auth);
    let st = cx.state();
    let now = st.now();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    let id = args.clientid;
    let c = match t.clients.get(id) {
        Some(c) if !c.expired && c.minor == 0 => c,
        Some(c) if c.expired => return Err(nfsstat4::NFS4ERR_EXPIRED),
        _ => return Err(nfsstat4::NFS4ERR_STALE_CLIENTID),
    };
    if c.v40.as_ref().is_none_or(|v| v.confirm != args.setclientid_confirm) {
        return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
    }
    if c.principal != principal {
        return Err(nfsstat4::NFS4ERR_CLID_INUSE);
    }
    if c.confirmed {
        // A callback update or a retry.
        let _ = t.clients.renew(id, now);
        return Ok(());
    }
    // The new incarnation replaces a confirmed old one (client reboot):
    // the old one's state goes.
    let owner = c.owner.clone();
    let (old, _) = t.clients.by_owner(&owner, true);
    let mut recorded = false;
    if let Some(old) = old.filter(|o| *o != id) {
        if let Some(o) = t.clients.get_mut(old) {
            recorded = o.recorded;
            o.recorded = false;
        }
        clients::destroy(st, t, old);
    }
    let known = t.grace.is_known(&owner);
    let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
    c.confirmed = true;
    c.reclaimable = known;
    c.recorded = recorded;
    c.lease.renew(now);
    clients::record(st, t, id);
    Ok(())
}

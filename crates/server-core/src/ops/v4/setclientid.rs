//! SETCLIENTID (RFC 7530 section 16.33): the 4.0 way to establish a
//! client id, sharing the client table and leases with EXCHANGE_ID.

use proto::nfs4::*;

use super::Compound;
use crate::state::clients::{self, Principal, V40};

pub(super) fn run(cx: &mut Compound, args: SETCLIENTID4args) -> SETCLIENTID4res {
    match set(cx, args) {
        Ok(ok) => SETCLIENTID4res::NFS4_OK(ok),
        Err(Some(addr)) => SETCLIENTID4res::NFS4ERR_CLID_INUSE(addr),
        Err(None) => SETCLIENTID4res::default(nfsstat4::NFS4ERR_RESOURCE),
    }
}

/// `Err(Some(addr))`: CLID_INUSE; `Err(None)`: out of client records.
fn set(cx: &mut Compound, args: SETCLIENTID4args) -> Result<SETCLIENTID4resok, Option<clientaddr4>> {
    let owner = args.client.id;
    let verifier = args.client.verifier;
    let principal = Principal::of(&cx.call.auth);
    let st = cx.state();
    let now = st.now();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    let (conf, unconf) = t.clients.by_owner(&owner, true);
    let confirm = |id: u64| -> [u8; 8] {
        let n = now.as_nanos() as u64;
        (n ^ id.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15).to_be_bytes()
    };
    if let Some(id) = conf {
        let c = t.clients.get(id).ok_or(None)?;
        if c.principal != principal {
            // Only a record with state under a live lease is in use (RFC 7530
            // 9.1.2): otherwise the new principal takes the id over.
            let busy = !t.clients.lease_expired(id, now, st.lease()) && t.stateids.has_state(id);
            if busy {
                let addr = c
                    .v40
                    .as_ref()
                    .map(|v| v.callback.clone())
                    .unwrap_or(netaddr4 { na_r_netid: Default::default(), na_r_addr: Default::default() });
                return Err(Some(addr));
            }
            clients::destroy(st, t, id);
        } else if c.verifier == verifier {
            // Callback update: the same client id, a new confirm verifier
            // (any unconfirmed record goes).
            if let Some(u) = unconf {
                t.clients.remove(u);
            }
            let k = confirm(id);
            let c = t.clients.get_mut(id).ok_or(None)?;
            c.v40 = Some(V40 { confirm: k, callback: args.callback.cb_location });
            c.lease.renew(now);
            return Ok(SETCLIENTID4resok { clientid: id, setclientid_confirm: k });
        }
        // Otherwise a client reboot: a new record, confirmed later.
    }
    if let Some(u) = unconf {
        t.clients.remove(u);
    }
    t.clients.drop_tombstones_of(&owner);
    if !clients::make_room(st, t) {
        return Err(None);
    }
    let id = t.clients.insert(st.boot, owner, verifier, principal, 0, now);
    let k = confirm(id);
    t.clients.get_mut(id).ok_or(None)?.v40 = Some(V40 { confirm: k, callback: args.callback.cb_location });
    Ok(SETCLIENTID4resok { clientid: id, setclientid_confirm: k })
}

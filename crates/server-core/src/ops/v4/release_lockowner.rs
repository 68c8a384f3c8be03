//! RELEASE_LOCKOWNER (RFC 7530 section 16.37; minor version 0 only):
//! forgets a lock-owner and its lock stateids, unless it still holds
//! locks (NFS4ERR_LOCKS_HELD).

use proto::nfs4::*;

use super::Compound;
use crate::state::stateids::{v4_lock_owner, OwnerKey};

pub(super) fn run(cx: &mut Compound, args: RELEASE_LOCKOWNER4args) -> Result<(), nfsstat4> {
    let st = cx.state();
    let client = args.lock_owner.clientid;
    let mut t = st.lock_tables();
    t.clients.renew(client, st.now())?;
    if t.locks.holds_any(&v4_lock_owner(client, &args.lock_owner.owner)) {
        return Err(nfsstat4::NFS4ERR_LOCKS_HELD);
    }
    let key = OwnerKey { client, owner: args.lock_owner.owner.clone() };
    let mine: Vec<[u8; 12]> = t.stateids.locks_by.iter().filter(|((k, _), _)| *k == key).map(|(_, o)| *o).collect();
    for o in mine {
        t.stateids.remove(&o);
    }
    t.stateids.lock_owners.remove(&key);
    Ok(())
}

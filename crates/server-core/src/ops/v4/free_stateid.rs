//! FREE_STATEID (RFC 8881 section 18.38): frees a lock stateid without
//! locks or a revoked delegation; anything still holding locks (opens,
//! lock stateids with locks, live delegations) is NFS4ERR_LOCKS_HELD.

use proto::nfs4::*;

use super::Compound;
use crate::state::stateids::{Entry, Kind};

pub(super) fn run(cx: &mut Compound, args: FREE_STATEID4args) -> Result<(), nfsstat4> {
    let st = cx.state();
    let sid = cx.resolve_stateid(&args.fsa_stateid)?;
    if sid.other == [0; 12] || sid.other == [0xff; 12] {
        return Err(nfsstat4::NFS4ERR_BAD_STATEID);
    }
    let client = cx.session_client();
    let mut t = st.lock_tables();
    match t.stateids.find(st.boot, cx.minor, client, &sid) {
        Ok(_) | Err(nfsstat4::NFS4ERR_DELEG_REVOKED) => {}
        Err(e) => return Err(e),
    }
    let revoked_deleg = |e: &Entry| matches!(&e.kind, Kind::Deleg(d) if d.revoked);
    let freed_revoked = t.stateids.ids.get(&sid.other).filter(|e| revoked_deleg(e)).map(|e| e.client);
    let crate::state::Tables { stateids, locks, clients, .. } = &mut *t;
    stateids.free(&sid.other, locks)?;
    // SEQ4_STATUS_RECALLABLE_STATE_REVOKED stays up until the client has
    // freed every revoked delegation (RFC 8881 18.46.3).
    if let Some(c) = freed_revoked {
        if !stateids.ids.values().any(|e| e.client == c && revoked_deleg(e)) {
            clients.clear_status_flags(c, SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
        }
    }
    Ok(())
}

//! DESTROY_SESSION (RFC 8881 section 18.37).

use proto::nfs4::*;

use super::Compound;
use crate::state::clients;

pub(super) fn run(cx: &mut Compound, args: DESTROY_SESSION4args) -> Result<(), nfsstat4> {
    let st = cx.state();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    let sid = args.dsa_sessionid;
    let cell = st.sessions.get(&sid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
    let client = {
        let s = cell.lock();
        // Another compound still running in the session (other than the
        // one destroying it) must finish first.
        let own_slot = cx.seq.as_ref().filter(|q| q.sessionid == sid).map(|q| q.slotid as usize);
        if s.slots.iter().enumerate().any(|(i, x)| x.busy && Some(i) != own_slot) {
            return Err(nfsstat4::NFS4ERR_DELAY);
        }
        s.client
    };
    st.forget_session(t, &sid);
    if let Some(c) = t.clients.get_mut(client) {
        c.sessions.retain(|x| *x != sid);
        c.lease.renew(st.now());
    }
    Ok(())
}

//! BIND_CONN_TO_SESSION (RFC 8881 section 18.34): associates the
//! connection the request came on with a session's fore and/or back
//! channel.

use proto::nfs4::*;

use super::Compound;
use crate::state::sessions::ConnBinding;
use crate::state::{callback, clients};

pub(super) fn run(cx: &mut Compound, args: BIND_CONN_TO_SESSION4args) -> Result<BIND_CONN_TO_SESSION4resok, nfsstat4> {
    let st = cx.state();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    let sid = args.bctsa_sessid;
    let cell = st.sessions.get(&sid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
    let client = cell.lock().client;
    if t.clients.confirmed(client).is_none() {
        st.forget_session(t, &sid);
        return Err(nfsstat4::NFS4ERR_BADSESSION);
    }
    use channel_dir_from_client4 as C;
    let (fore, mut back) = match args.bctsa_dir {
        C::CDFC4_FORE => (true, false),
        C::CDFC4_BACK => (false, true),
        C::CDFC4_FORE_OR_BOTH | C::CDFC4_BACK_OR_BOTH => (true, true),
    };
    let conn = cx.conn();
    if back && !callback::bind(st, t, &sid, conn) {
        // No callback security we can use: only the fore channel.
        if args.bctsa_dir == C::CDFC4_BACK {
            return Err(nfsstat4::NFS4ERR_INVAL);
        }
        back = false;
    }
    let mut s = cell.lock();
    s.conns.retain(|b| b.conn != conn);
    s.conns.push(ConnBinding { conn, fore, back });
    drop(s);
    let _ = t.clients.renew(client, st.now());
    let dir = match (fore, back) {
        (true, true) => channel_dir_from_server4::CDFS4_BOTH,
        (false, true) => channel_dir_from_server4::CDFS4_BACK,
        _ => channel_dir_from_server4::CDFS4_FORE,
    };
    Ok(BIND_CONN_TO_SESSION4resok { bctsr_sessid: sid, bctsr_dir: dir, bctsr_use_conn_in_rdma_mode: false })
}

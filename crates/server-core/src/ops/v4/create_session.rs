//! CREATE_SESSION (RFC 8881 section 18.36): confirms a client record and
//! creates a session, with its own one-slot replay cache per client.

use proto::nfs4::*;

use super::Compound;
use crate::state::callback;
use crate::state::clients::{self, Principal};
use crate::state::sessions::{ConnBinding, Session};

/// Smallest request and reply sizes a session can work with (a SEQUENCE
/// and a little more).
const MIN_MSG: u32 = 256;

pub(super) fn run(cx: &mut Compound, args: CREATE_SESSION4args) -> Result<CREATE_SESSION4resok, nfsstat4> {
    const KNOWN_FLAGS: u32 =
        CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN | CREATE_SESSION4_FLAG_CONN_RDMA;
    if args.csa_flags & !KNOWN_FLAGS != 0 {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let st = cx.state();
    let set = &st.settings;
    let now = st.now();
    let principal = Principal::of(&cx.call.auth);
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    let id = args.csa_clientid;
    let c = match t.clients.get(id) {
        Some(c) if !c.expired => c,
        _ => return Err(nfsstat4::NFS4ERR_STALE_CLIENTID),
    };
    // Sequence id processing first: a retry gets the cached reply.
    if args.csa_sequence == c.cs_seq {
        return c.cs_reply.clone().ok_or(nfsstat4::NFS4ERR_SEQ_MISORDERED);
    }
    if args.csa_sequence != c.cs_seq.wrapping_add(1) {
        return Err(nfsstat4::NFS4ERR_SEQ_MISORDERED);
    }
    if c.principal != principal {
        return Err(nfsstat4::NFS4ERR_CLID_INUSE);
    }
    if c.minor == 0 {
        // A 4.0 client id cannot have sessions.
        return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
    }
    if c.sessions.len() >= set.max_sessions_per_client {
        return Err(nfsstat4::NFS4ERR_NOSPC);
    }
    let fa = &args.csa_fore_chan_attrs;
    let ba = &args.csa_back_chan_attrs;
    // Either channel too small to carry a single request or reply is of
    // no use (RFC 8881 18.36.3), the back channel included: it may be
    // bound later (BIND_CONN_TO_SESSION) and must fit a CB_COMPOUND.
    let too_small = |a: &channel_attrs4| a.ca_maxrequestsize < MIN_MSG || a.ca_maxresponsesize < MIN_MSG;
    if too_small(fa) || fa.ca_maxoperations < 1 || too_small(ba) {
        return Err(nfsstat4::NFS4ERR_TOOSMALL);
    }
    let resp = fa.ca_maxresponsesize.min(set.max_response_size);
    let fore = channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: fa.ca_maxrequestsize.min(set.max_request_size),
        ca_maxresponsesize: resp,
        ca_maxresponsesize_cached: fa.ca_maxresponsesize_cached.min(set.max_cached_response).min(resp),
        ca_maxoperations: fa.ca_maxoperations.min(set.max_ops),
        ca_maxrequests: fa.ca_maxrequests.clamp(1, set.max_slots),
        ca_rdma_ird: vec![],
    };
    let ba = &args.csa_back_chan_attrs;
    let back = channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: ba.ca_maxrequestsize,
        ca_maxresponsesize: ba.ca_maxresponsesize,
        ca_maxresponsesize_cached: ba.ca_maxresponsesize_cached,
        ca_maxoperations: ba.ca_maxoperations,
        ca_maxrequests: ba.ca_maxrequests.clamp(1, set.max_cb_slots),
        ca_rdma_ird: vec![],
    };

    // Client id confirmation: the new incarnation replaces the old one.
    if !c.confirmed {
        let owner = c.owner.clone();
        let (old, _) = t.clients.by_owner(&owner, false);
        let old_recorded = match old {
            Some(old) if old != id => {
                let recorded = t.clients.get(old).is_some_and(|o| o.recorded);
                if let Some(o) = t.clients.get_mut(old) {
                    // Keep the stable record: it passes to the new incarnation.
                    o.recorded = false;
                }
                clients::destroy(st, t, old);
                recorded
            }
            _ => false,
        };
        let known = t.grace.is_known(&owner);
        let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
        c.confirmed = true;
        c.reclaimable = known;
        c.recorded = old_recorded;
        clients::record(st, t, id);
    }

    let sid = st.sessions.new_id(st.boot, id);
    let lease = t.clients.get(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?.lease.clone();
    let mut session = Session::new(sid, id, lease, fore.clone(), back.clone(), set.initial_target_slots, now);
    session.cb_program = args.csa_cb_program;
    session.cb_sec = args.csa_sec_parms.clone();
    let want_back = args.csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0;
    session.conns.push(ConnBinding { conn: cx.conn(), fore: true, back: false });
    let cell = st.sessions.insert(session);
    let mut flags = 0;
    if want_back && callback::bind(st, t, &sid, cx.conn()) {
        flags |= CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
        cell.lock().conns[0].back = true;
    }
    cell.lock().flags = flags;
    let res = CREATE_SESSION4resok {
        csr_sessionid: sid,
        csr_sequence: args.csa_sequence,
        csr_flags: flags,
        csr_fore_chan_attrs: fore,
        csr_back_chan_attrs: back,
    };
    let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
    c.sessions.push(sid);
    c.cs_seq = args.csa_sequence;
    c.cs_reply = Some(res.clone());
    c.lease.renew(now);
    Ok(res)
}

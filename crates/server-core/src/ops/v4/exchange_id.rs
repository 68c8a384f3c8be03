//! EXCHANGE_ID (RFC 8881 section 18.35): establishes or finds the client
//! record for a client owner, following the cases of 18.35.4.

use bytes::Bytes;
use proto::nfs4::*;

use super::Compound;
use crate::state::clients::{self, Principal};

/// Flags a client may send.
const CLIENT_FLAGS: u32 = EXCHGID4_FLAG_SUPP_MOVED_REFER
    | EXCHGID4_FLAG_SUPP_MOVED_MIGR
    | EXCHGID4_FLAG_BIND_PRINC_STATEID
    | EXCHGID4_FLAG_MASK_PNFS
    | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;

/// Longest `co_ownerid` (the XDR limit is NFS4_OPAQUE_LIMIT).
const MAX_OWNER: usize = 1024;

pub(super) fn run(cx: &mut Compound, args: EXCHANGE_ID4args) -> Result<EXCHANGE_ID4resok, nfsstat4> {
    let owner = args.eia_clientowner.co_ownerid;
    let verifier = args.eia_clientowner.co_verifier;
    if args.eia_flags & !CLIENT_FLAGS != 0 || owner.is_empty() || owner.len() > MAX_OWNER {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    match args.eia_state_protect {
        state_protect4_a::SP4_NONE => {}
        // Machine-credential protection needs RPCSEC_GSS with integrity,
        // which this server does not offer.
        state_protect4_a::SP4_MACH_CRED(_) => return Err(nfsstat4::NFS4ERR_INVAL),
        state_protect4_a::SP4_SSV(_) => return Err(nfsstat4::NFS4ERR_ENCR_ALG_UNSUPP),
    }
    let update = args.eia_flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A != 0;
    let principal = Principal::of(&cx.call.auth);
    let st = cx.state();
    let now = st.now();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    let (conf, unconf) = t.clients.by_owner(&owner, false);
    let reply = |id: u64, seq: u32, confirmed: bool| {
        let mut flags = EXCHGID4_FLAG_USE_NON_PNFS;
        // Also a pNFS metadata server when data servers are configured.
        if super::pnfs::data_servers(cx).is_some() {
            flags |= EXCHGID4_FLAG_USE_PNFS_MDS;
        }
        if confirmed {
            flags |= EXCHGID4_FLAG_CONFIRMED_R;
        }
        let major = server_major(cx);
        EXCHANGE_ID4resok {
            eir_clientid: id,
            eir_sequenceid: seq,
            eir_flags: flags,
            eir_state_protect: state_protect4_r::SP4_NONE,
            eir_server_owner: server_owner4 { so_minor_id: 0, so_major_id: major.clone() },
            eir_server_scope: major,
            eir_server_impl_id: vec![],
        }
    };
    if update {
        // Cases 6-9.
        let Some(id) = conf else { return Err(nfsstat4::NFS4ERR_NOENT) };
        let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
        if c.verifier != verifier {
            return Err(nfsstat4::NFS4ERR_NOT_SAME);
        }
        if c.principal != principal {
            return Err(nfsstat4::NFS4ERR_PERM);
        }
        c.lease.renew(now);
        return Ok(reply(id, c.cs_seq.wrapping_add(1), true));
    }
    if let Some(id) = conf {
        let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
        if c.principal == principal {
            if c.verifier == verifier {
                // Case 2: a retry, or trunking discovery.
                c.lease.renew(now);
                return Ok(reply(id, c.cs_seq.wrapping_add(1), true));
            }
            // Case 5: client restart; the old record goes once the new
            // one is confirmed by CREATE_SESSION.
        } else {
            // Case 3: collision with another principal.
            let lease_ok = !t.clients.lease_expired(id, now, st.lease());
            if lease_ok && (t.stateids.has_state(id) || t.clients.get(id).is_some_and(|c| !c.sessions.is_empty())) {
                return Err(nfsstat4::NFS4ERR_CLID_INUSE);
            }
            clients::destroy(st, t, id);
        }
    }
    // Cases 1, 4 and 5: a new unconfirmed record replaces any unconfirmed one.
    if let Some(old) = unconf {
        t.clients.remove(old);
    }
    t.clients.drop_tombstones_of(&owner);
    if !clients::make_room(st, t) {
        return Err(nfsstat4::NFS4ERR_DELAY);
    }
    let id = t.clients.insert(st.boot, owner, verifier, principal, cx.minor, now);
    // CREATE_SESSION must come with eir_sequenceid: the slot starts one
    // below it with a contrived SEQ_MISORDERED reply.
    Ok(reply(id, 1, false))
}

/// `so_major_id` and `eir_server_scope`: the address the client reached,
/// which stays the same across restarts (clients only reclaim from a
/// server with the same scope) and differs between hosts (clients must not
/// trunk sessions of different servers). Different addresses of one host
/// look like different servers, which is safe.
fn server_major(cx: &Compound) -> Bytes {
    Bytes::from(format!("nfsx@{}", cx.call.peer.local.ip()).into_bytes())
}

//! EXCHANGE_ID (RFC 8881 section 18.35): establishes or finds the client
//! record for a client owner, following the cases of 18.35.4.

use bytes::Bytes;
use proto::nfs4::*;

use super::Compound;
use crate::state::clients::Principal;

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
    let id = cx.state().exchange_id(owner, verifier, principal, cx.minor, update)?;
    let mut flags = EXCHGID4_FLAG_USE_NON_PNFS;
    // Also a pNFS metadata server when data servers are configured.
    if super::pnfs::data_servers(cx).is_some() {
        flags |= EXCHGID4_FLAG_USE_PNFS_MDS;
    }
    if id.confirmed {
        flags |= EXCHGID4_FLAG_CONFIRMED_R;
    }
    let major = server_major(cx);
    Ok(EXCHANGE_ID4resok {
        eir_clientid: id.clientid,
        eir_sequenceid: id.sequenceid,
        eir_flags: flags,
        eir_state_protect: state_protect4_r::SP4_NONE,
        eir_server_owner: server_owner4 { so_minor_id: 0, so_major_id: major.clone() },
        eir_server_scope: major,
        eir_server_impl_id: vec![],
    })
}

/// `so_major_id` and `eir_server_scope`: the address the client reached,
/// which stays the same across restarts (clients only reclaim from a
/// server with the same scope) and differs between hosts (clients must not
/// trunk sessions of different servers). Different addresses of one host
/// look like different servers, which is safe.
fn server_major(cx: &Compound) -> Bytes {
    Bytes::from(format!("nfsx@{}", cx.call.peer.local.ip()).into_bytes())
}

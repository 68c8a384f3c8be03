//! RECLAIM_COMPLETE (RFC 8881 section 18.51): the client finished
//! reclaiming; grace ends early once every known client has.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: RECLAIM_COMPLETE4args) -> Result<(), nfsstat4> {
    let Some(client) = cx.session_client() else { return Err(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION) };
    if args.rca_one_fs {
        // Per-file-system reclaim only matters for migration, which this
        // server does not do: ignored (18.51.4).
        return Ok(());
    }
    cx.state().reclaim_complete(client)
}

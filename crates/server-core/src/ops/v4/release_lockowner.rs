//! RELEASE_LOCKOWNER (RFC 7530 section 16.37; minor version 0 only):
//! forgets a lock-owner and its lock stateids, unless it still holds
//! locks (NFS4ERR_LOCKS_HELD).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: RELEASE_LOCKOWNER4args) -> Result<(), nfsstat4> {
    cx.state().release_lockowner(args.lock_owner.clientid, &args.lock_owner.owner)
}

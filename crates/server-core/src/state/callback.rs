//! The callback program over the back channel: CB_NULL, CB_SEQUENCE,
//! CB_RECALL.

use proto::nfs4::{nfs_fh4, stateid4};
use xdr::Decoder;

use super::{State4, Tables};
use crate::Core;

/// A reply record that arrived on connection `conn` (a client answering
/// one of our callbacks); `body` starts after the xid and message type.
/// Returns whether it matched an outstanding callback.
pub(crate) fn on_reply(core: &Core, conn: u64, xid: u32, body: Decoder) -> bool {
    let _ = (core, conn, xid, body);
    false
}

/// Sends CB_RECALL for delegation `stateid` on `fh` to `client` over one
/// of its sessions' back channels. False when the client has no usable
/// back channel (the caller then treats the delegation as unrecallable
/// and revokes it once the lease passes).
pub(crate) fn recall(st: &State4, t: &mut Tables, client: u64, stateid: &stateid4, fh: &nfs_fh4) -> bool {
    let _ = (st, t, client, stateid, fh);
    false
}

/// Whether `client` has a back channel that answered (CB_PATH_DOWN
/// otherwise); delegations are only granted to such clients.
pub(crate) fn has_backchannel(t: &Tables, client: u64) -> bool {
    let _ = (t, client);
    false
}

//! The callback program over the back channel: CB_NULL, CB_SEQUENCE,
//! CB_RECALL.

use xdr::Decoder;

use crate::Core;

/// A reply record that arrived on connection `conn` (a client answering
/// one of our callbacks); `body` starts after the xid and message type.
/// Returns whether it matched an outstanding callback.
pub(crate) fn on_reply(core: &Core, conn: u64, xid: u32, body: Decoder) -> bool {
    let _ = (core, conn, xid, body);
    false
}

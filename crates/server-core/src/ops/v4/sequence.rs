//! SEQUENCE (RFC 8881 section 18.46): claims a session slot for the
//! compound, replays cached replies, and caches the new one.

use bytes::Bytes;
use proto::nfs4::*;

use super::Compound;

/// What SEQUENCE at the head of a compound decided.
pub(super) enum Begin {
    /// Run the rest of the compound; `cx.seq` is set.
    Run(SEQUENCE4resok),
    /// A retransmission: send this cached reply body again.
    Replay(Vec<Bytes>),
    Fail(nfsstat4),
}

/// `raw` is the whole COMPOUND argument as received, for telling a
/// retransmission from a different request on the same slot.
pub(super) fn begin(cx: &mut Compound, args: &SEQUENCE4args, raw: &Bytes) -> Begin {
    let _ = (cx, args, raw);
    Begin::Fail(nfsstat4::NFS4ERR_BADSESSION)
}

/// Stores the reply body in the slot and releases it.
pub(super) fn finish(cx: &Compound, body: &[Bytes]) {
    let _ = (cx, body);
}

/// SEQUENCE anywhere but first (the dispatcher answers that before
/// decoding; this is the table's entry for completeness).
pub(super) fn run(cx: &mut Compound, args: SEQUENCE4args) -> Result<SEQUENCE4resok, nfsstat4> {
    let _ = (cx, args);
    Err(nfsstat4::NFS4ERR_SEQUENCE_POS)
}

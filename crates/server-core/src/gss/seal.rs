//! The replies of calls under a context (RFC 2203 section 5.3.3.2): the
//! verifier is the checksum of the call's sequence number, and the
//! results of a successful call are sealed as its arguments were.
//!
//! The procedures write their replies as for any flavor (an AUTH_NONE
//! verifier, then the results); the reply is rewritten here, after the
//! duplicate request cache has kept the plain form, so that a
//! retransmission (which carries a new sequence number) is answered
//! under its own.

use std::sync::Arc;

use bytes::Bytes;
use proto::rpc::{auth_flavor, opaque_auth, reply_data};
use rpcsec::{seal_segments, Service};
use xdr::Encoder;

use super::{Context, GssCaller};
use crate::rpc::accepted_with;
use crate::{Core, Outcome};

/// Bytes of an accepted reply's header up to its verifier's body:
/// xid, message type, reply status, verifier flavor, verifier length.
const HEAD: usize = 20;
const ACCEPTED: u32 = 0;
const SUCCESS: u32 = 0;

fn word(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The first `n` bytes of `segments` (fewer when they are shorter).
fn prefix(segments: &[Bytes], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    for s in segments {
        let take = (n - out.len()).min(s.len());
        out.extend_from_slice(s.get(..take).unwrap_or_default());
        if out.len() == n {
            break;
        }
    }
    out
}

/// `segments` without their first `n` bytes, sharing what is left;
/// `None` when they are shorter.
fn skip(segments: Vec<Bytes>, mut n: usize) -> Option<Vec<Bytes>> {
    let mut out = Vec::with_capacity(segments.len());
    for s in segments {
        if n >= s.len() {
            n -= s.len();
        } else {
            out.push(s.slice(n..));
            n = 0;
        }
    }
    (n == 0).then_some(out)
}

impl Core {
    /// Rewrites `out`'s reply for `caller`'s call.
    pub(crate) fn gss_seal_for(&self, caller: &GssCaller, out: &mut Outcome) {
        self.gss_seal(&caller.ctx, caller.seq, caller.service, out);
    }

    pub(super) fn gss_seal(&self, ctx: &Arc<Context>, seq: u32, service: Service, out: &mut Outcome) {
        let Some(segments) = out.reply.take() else { return };
        // A READ's data may follow as a file region only where the results
        // are not sealed (`Auth::seals_results`): with the header only
        // protected, the rewritten header goes before it as before.
        if out.tail.is_some() && service != Service::None {
            tracing::error!(principal = %ctx.principal, seq, "a sealed reply came with a file region; not sent");
            out.tail = None;
            out.ok = false;
            return;
        }
        match self.sealed(ctx, seq, service, segments) {
            Some(reply) => out.reply = Some(reply),
            None => {
                // RFC 2203 section 5.3.3.4.4: no reply at all.
                tracing::error!(principal = %ctx.principal, seq, "RPCSEC_GSS reply could not be sealed; not sent");
                out.ok = false;
            }
        }
    }

    /// The reply in `segments` rewritten: its header read from the first
    /// bytes, the results after it sealed without first gathering the
    /// whole reply into one buffer.
    fn sealed(&self, ctx: &Context, seq: u32, service: Service, segments: Vec<Bytes>) -> Option<Vec<Bytes>> {
        let head = prefix(&segments, HEAD);
        let (Some(xid), Some(stat)) = (word(&head, 0), word(&head, 8)) else { return None };
        if stat != ACCEPTED {
            // A denied reply has no verifier.
            return Some(segments);
        }
        let verf_len = word(&head, HEAD - 4)? as usize;
        let at = HEAD + verf_len.next_multiple_of(4);
        let accept = word(&prefix(&segments, at + 4), at)?;
        let rest = skip(segments, at + 4)?;
        let verf =
            opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from(ctx.mic(&seq.to_be_bytes()).ok()?) };
        let mut e = Encoder::with_capacity(64);
        crate::rpc::encode_accepted_head(xid, verf, accept, &mut e);
        if accept == SUCCESS {
            let mut inner = ctx.inner.lock();
            e.append_segments(seal_segments(&mut *inner.mech, service, seq, &rest).ok()?);
        } else {
            e.append_segments(rest);
        }
        Some(e.into_segments())
    }

    /// An accepted reply other than SUCCESS to a data call, with its
    /// verifier (GARBAGE_ARGS for arguments that do not open).
    pub(super) fn gss_accepted(&self, ctx: &Context, xid: u32, seq: u32, data: reply_data) -> Option<Vec<Bytes>> {
        let verf =
            opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from(ctx.mic(&seq.to_be_bytes()).ok()?) };
        Some(accepted_with(xid, verf, data, &()))
    }
}

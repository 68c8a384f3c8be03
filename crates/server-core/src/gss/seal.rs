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
use rpcsec::{seal_body, Service};
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
        let plain = segments.concat();
        match self.sealed(ctx, seq, service, &plain) {
            Some(reply) => out.reply = Some(reply),
            None => {
                // RFC 2203 section 5.3.3.4.4: no reply at all.
                tracing::error!(principal = %ctx.principal, seq, "RPCSEC_GSS reply could not be sealed; not sent");
                out.ok = false;
            }
        }
    }

    fn sealed(&self, ctx: &Context, seq: u32, service: Service, plain: &[u8]) -> Option<Vec<Bytes>> {
        let (Some(xid), Some(stat)) = (word(plain, 0), word(plain, 8)) else { return None };
        if stat != ACCEPTED {
            // A denied reply has no verifier.
            return Some(vec![Bytes::copy_from_slice(plain)]);
        }
        let verf_len = word(plain, HEAD - 4)? as usize;
        let at = HEAD + verf_len.next_multiple_of(4);
        let accept = word(plain, at)?;
        let rest = plain.get(at + 4..)?;
        let verf =
            opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from(ctx.mic(&seq.to_be_bytes()).ok()?) };
        let mut e = Encoder::with_capacity(64);
        crate::rpc::encode_accepted_head(xid, verf, accept, &mut e);
        if accept == SUCCESS {
            let mut inner = ctx.inner.lock();
            e.append_segments(seal_body(&mut *inner.mech, service, seq, rest).ok()?);
        } else {
            e.append_segments(vec![Bytes::copy_from_slice(rest)]);
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

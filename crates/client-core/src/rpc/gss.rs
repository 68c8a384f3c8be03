//! Calls under an RPCSEC_GSS context (RFC 2203).
//!
//! A call's record is sealed anew for each transmission: every
//! transmission needs a sequence number of its own (section 5.3.3.1: a
//! server drops one it has seen), and the reply is checked against each
//! number the call went out with, as a server may answer any of them.
//! Every failure to seal (numbers used up, the mechanism refusing) still
//! sends the call, with a verifier the server refuses: its
//! RPCSEC_GSS_CREDPROBLEM or CTXPROBLEM then tells the caller to set up
//! a new context, the one way back for all of them.

use bytes::Bytes;
use proto::rpc::{accepted_reply, opaque_auth, reply_data};
use proto::rpcsec_gss::MAXSEQ;
use rpcsec::{GssClient, Service};
use xdr::{Decoder, Encode, Encoder};

use super::{reply_result, RpcCore, RpcError};
use crate::rpc::Nanos;

/// Transmissions of one call whose sequence numbers are remembered to
/// check its reply; a call sent more often than this (its retransmission
/// count is far lower) is checked against its latest.
const SEQS_KEPT: usize = 8;

/// The context calls are made under, and their service.
pub(super) struct Context {
    client: GssClient,
    service: Service,
}

/// A call under the context: what it asks, unsealed.
pub(super) struct Sealed {
    prog: u32,
    vers: u32,
    proc_: u32,
    args: Vec<Bytes>,
    /// The sequence numbers of its transmissions, oldest first.
    seqs: Vec<u32>,
}

impl Sealed {
    pub(super) fn new(prog: u32, vers: u32, proc_: u32, args: Vec<Bytes>) -> Sealed {
        Sealed { prog, vers, proc_, args, seqs: Vec::new() }
    }

    /// The call's record body for one more transmission (without the
    /// record mark).
    pub(super) fn seal(&mut self, ctx: &mut Context, xid: u32) -> Vec<Bytes> {
        // Past the last number the server refuses the call with
        // CTXPROBLEM, which is what sets up a new context.
        let seq = ctx.client.next_seq().unwrap_or(MAXSEQ);
        if self.seqs.len() == SEQS_KEPT {
            self.seqs.remove(0);
        }
        self.seqs.push(seq);
        let args = self.args.concat();
        let sealed = ctx.client.call(xid, self.prog, self.vers, self.proc_, ctx.service, seq, &args, false);
        sealed.unwrap_or_else(|e| {
            tracing::debug!(xid, "could not seal a call under the security context ({e}); sent unsealed");
            // A verifier that verifies nothing: the server answers
            // CREDPROBLEM.
            unverified(xid, self.prog, self.vers, self.proc_, ctx.client.handle(), seq, &args)
        })
    }

    /// The results of an accepted reply to the call, its verifier checked
    /// against the transmissions' numbers and its body opened.
    pub(super) fn open(&self, ctx: &mut Context, a: accepted_reply, rest: Bytes) -> Result<Bytes, RpcError> {
        let Some(&seq) = self.seqs.iter().rev().find(|&&s| ctx.client.check_verifier(s, &a.verf).is_ok()) else {
            return Err(RpcError::BadReply("the reply's RPCSEC_GSS verifier does not verify".into()));
        };
        match a.reply_data {
            reply_data::SUCCESS => ctx
                .client
                .reply(ctx.service, seq, &a.verf, rest)
                .map_err(|e| RpcError::BadReply(format!("RPCSEC_GSS results: {e}"))),
            other => {
                let mut d = Decoder::new(rest);
                reply_result(proto::rpc::reply_body::MSG_ACCEPTED(accepted_reply { reply_data: other, ..a }), &mut d)
            }
        }
    }
}

/// A data call whose verifier is empty.
fn unverified(xid: u32, prog: u32, vers: u32, proc_: u32, handle: &Bytes, seq: u32, args: &[u8]) -> Vec<Bytes> {
    let mut bogus = GssClient::new(handle.clone(), Box::new(NoMic), 1);
    bogus.call(xid, prog, vers, proc_, Service::None, seq, args, false).unwrap_or_default()
}

/// A mechanism that checksums with nothing.
struct NoMic;

impl rpcsec::SecContext for NoMic {
    fn get_mic(&mut self, _: &[u8]) -> Result<Vec<u8>, rpcsec::GssError> {
        Ok(Vec::new())
    }
    fn verify_mic(&mut self, _: &[u8], _: &[u8]) -> Result<(), rpcsec::GssError> {
        Err(rpcsec::GssError::new(rpcsec::major::GSS_S_BAD_SIG, 0, "no context"))
    }
    fn wrap(&mut self, m: &[u8]) -> Result<Vec<u8>, rpcsec::GssError> {
        Ok(m.to_vec())
    }
    fn unwrap(&mut self, _: &[u8]) -> Result<Vec<u8>, rpcsec::GssError> {
        Err(rpcsec::GssError::new(rpcsec::major::GSS_S_BAD_SIG, 0, "no context"))
    }
}

/// The result of a context-creation call: its reply's verifier, then
/// the `rpc_gss_init_res`, for the caller to check with the context it
/// completes.
pub(super) fn init_result(a: accepted_reply, rest: Bytes) -> Result<Bytes, RpcError> {
    let verf = a.verf.clone();
    let mut d = Decoder::new(rest);
    let results = reply_result(proto::rpc::reply_body::MSG_ACCEPTED(a), &mut d)?;
    let mut e = Encoder::with_capacity(64 + results.len());
    verf.encode(&mut e);
    e.append_segments(vec![results]);
    Ok(e.into_bytes())
}

/// Splits [`init_result`]'s bytes.
pub fn split_init_result(b: Bytes) -> Result<(opaque_auth, proto::rpcsec_gss::rpc_gss_init_res), RpcError> {
    let mut d = Decoder::new(b);
    let bad = |what: &str| RpcError::BadReply(format!("context creation reply: {what}"));
    let verf = <opaque_auth as xdr::Decode>::decode(&mut d).map_err(|_| bad("verifier"))?;
    let res = xdr::Decode::decode(&mut d).map_err(|_| bad("results do not decode"))?;
    Ok((verf, res))
}

impl RpcCore {
    /// Makes calls from now on (and retransmissions of those made
    /// before) under the RPCSEC_GSS context `client` with `service`.
    pub fn set_gss(&mut self, client: GssClient, service: Service) {
        self.gss = Some(Context { client, service });
    }

    /// Whether calls go under an RPCSEC_GSS context.
    pub fn has_gss(&self) -> bool {
        self.gss.is_some()
    }

    /// Queues a context-creation call (RFC 2203 section 5.2.2): `handle`
    /// empty for the first, the server's for a continuation. Its result is
    /// read with [`split_init_result`].
    pub fn call_gss_init(&mut self, prog: u32, vers: u32, handle: &Bytes, token: &[u8], now: Nanos) -> u32 {
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        let record = super::framed(rpcsec::call::init_call(xid, prog, vers, handle, token));
        self.push(xid, "RPCSEC_GSS_INIT", record, None, true, now);
        xid
    }
}

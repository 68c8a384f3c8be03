//! The caller's side of RPCSEC_GSS: the records of context creation
//! (RFC 2203 section 5.2.2), of data and destruction calls under an
//! established context (5.3.1, 5.4), and the checks of their replies.
//! Used by the nfsx client, and by the server's tests as a real peer.

use bytes::Bytes;
use proto::rpc::{auth_flavor, opaque_auth};
use proto::rpcsec_gss::{rpc_gss_cred_t, rpc_gss_cred_vers_1_t, rpc_gss_init_res, rpc_gss_proc_t, MAXSEQ};
use xdr::{Encode, Encoder};

use crate::{open_body, seal_segments, BodyError, GssError, SecContext, Service};

/// Why a reply under a context is not to be believed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("the reply's verifier is not RPCSEC_GSS")]
    VerifierFlavor,
    #[error("the reply's verifier does not verify: {0}")]
    Verifier(GssError),
    #[error("the reply's results: {0}")]
    Body(#[from] BodyError),
}

/// The start of a call record up to the credential's end: what the
/// verifier checksums.
fn header(xid: u32, prog: u32, vers: u32, proc_: u32, cred: &rpc_gss_cred_vers_1_t) -> Encoder {
    let mut e = Encoder::with_capacity(96);
    for w in [xid, 0, 2, prog, vers, proc_, auth_flavor::RPCSEC_GSS as u32] {
        e.u32(w);
    }
    let body = xdr::to_bytes(&rpc_gss_cred_t::RPCSEC_GSS_VERS_1(cred.clone()));
    e.opaque_bytes(&body);
    e
}

/// A context-creation call (NULLPROC): the first with `handle` empty,
/// later ones (CONTINUE_INIT) with the handle the server gave.
pub fn init_call(xid: u32, prog: u32, vers: u32, handle: &Bytes, token: &[u8]) -> Vec<Bytes> {
    let gss_proc =
        if handle.is_empty() { rpc_gss_proc_t::RPCSEC_GSS_INIT } else { rpc_gss_proc_t::RPCSEC_GSS_CONTINUE_INIT };
    let cred = rpc_gss_cred_vers_1_t {
        gss_proc: gss_proc as u32,
        seq_num: 0,
        service: Service::None.to_wire() as u32,
        handle: handle.clone(),
    };
    let mut e = header(xid, prog, vers, 0, &cred);
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }.encode(&mut e);
    e.opaque_var(token);
    e.into_segments()
}

/// Whether a completed creation reply's verifier is the checksum of its
/// window (RFC 2203 section 5.2.3.1), under the new context.
pub fn check_init_verifier(
    ctx: &mut dyn SecContext,
    res: &rpc_gss_init_res,
    verf: &opaque_auth,
) -> Result<(), ReplyError> {
    if verf.flavor != auth_flavor::RPCSEC_GSS {
        return Err(ReplyError::VerifierFlavor);
    }
    ctx.verify_mic(&res.seq_window.to_be_bytes(), &verf.body).map_err(ReplyError::Verifier)
}

/// The caller's side of an established context.
pub struct GssClient {
    handle: Bytes,
    ctx: Box<dyn SecContext>,
    window: u32,
    next_seq: u32,
}

impl GssClient {
    pub fn new(handle: Bytes, ctx: Box<dyn SecContext>, window: u32) -> GssClient {
        GssClient { handle, ctx, window, next_seq: 1 }
    }

    pub fn handle(&self) -> &Bytes {
        &self.handle
    }

    /// How many calls may be outstanding on the context.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// The number [`GssClient::next_seq`] hands out next.
    pub fn upcoming_seq(&self) -> u32 {
        self.next_seq
    }

    /// A new sequence number; `None` once they are used up (a new context
    /// is needed, RFC 2203 section 5.3.3.3).
    pub fn next_seq(&mut self) -> Option<u32> {
        let seq = self.next_seq;
        if seq >= MAXSEQ {
            return None;
        }
        self.next_seq += 1;
        Some(seq)
    }

    /// A data call (`destroy`: the context's destruction, with no
    /// arguments) with sequence number `seq`: the whole record.
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &mut self,
        xid: u32,
        prog: u32,
        vers: u32,
        proc_: u32,
        service: Service,
        seq: u32,
        args: &[u8],
        destroy: bool,
    ) -> Result<Vec<Bytes>, GssError> {
        self.call_segments(xid, prog, vers, proc_, service, seq, &[Bytes::copy_from_slice(args)], destroy)
    }

    /// [`GssClient::call`] with the arguments as an encoder's segments,
    /// gathered once for the mechanism (a WRITE's are a mebibyte).
    #[allow(clippy::too_many_arguments)]
    pub fn call_segments(
        &mut self,
        xid: u32,
        prog: u32,
        vers: u32,
        proc_: u32,
        service: Service,
        seq: u32,
        args: &[Bytes],
        destroy: bool,
    ) -> Result<Vec<Bytes>, GssError> {
        let gss_proc = if destroy { rpc_gss_proc_t::RPCSEC_GSS_DESTROY } else { rpc_gss_proc_t::RPCSEC_GSS_DATA };
        let cred = rpc_gss_cred_vers_1_t {
            gss_proc: gss_proc as u32,
            seq_num: seq,
            service: service.to_wire() as u32,
            handle: self.handle.clone(),
        };
        let e = header(xid, prog, vers, proc_, &cred);
        let head = e.into_bytes();
        let mic = self.ctx.get_mic(&head)?;
        let mut e = Encoder::with_capacity(64);
        e.append_segments(vec![head]);
        opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from(mic) }.encode(&mut e);
        e.append_segments(seal_segments(&mut *self.ctx, service, seq, args)?);
        Ok(e.into_segments())
    }

    /// The results of an accepted reply to the call with sequence number
    /// `seq`, its verifier checked and its body opened. `body` is what
    /// follows the accept status (for SUCCESS, the sealed results).
    pub fn reply(&mut self, service: Service, seq: u32, verf: &opaque_auth, body: Bytes) -> Result<Bytes, ReplyError> {
        self.check_verifier(seq, verf)?;
        Ok(open_body(&mut *self.ctx, service, seq, body)?)
    }

    /// Whether an accepted reply's verifier is the checksum of `seq`.
    pub fn check_verifier(&mut self, seq: u32, verf: &opaque_auth) -> Result<(), ReplyError> {
        if verf.flavor != auth_flavor::RPCSEC_GSS {
            return Err(ReplyError::VerifierFlavor);
        }
        self.ctx.verify_mic(&seq.to_be_bytes(), &verf.body).map_err(ReplyError::Verifier)
    }
}

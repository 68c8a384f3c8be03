//! Contexts a client lends the back channel (RFC 8881 section 2.10.8.2):
//! CREATE_SESSION and BACKCHANNEL_CTL name a context the client set up on
//! the fore channel (`gcbp_handle_from_server`) and the handle callbacks
//! are to carry (`gcbp_handle_from_client`). The server then calls the
//! client under that same GSS context, its roles turned round: it
//! checksums the callback's header and seals its arguments, and checks
//! the reply's verifier and opens its results, with sequence numbers of
//! its own (the two directions count apart, section 18.36.4).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::{gss_cb_handles4, nfsstat4};
use proto::rpc::opaque_auth;
use proto::rpcsec_gss::MAXSEQ;
use rpcsec::{GssClient, GssError, ReplyError, SecContext, Service};

use super::{Context, GssCaller, GssState};

/// A context, used through its own lock: the server's accepted context
/// is the one that seals callbacks.
struct Lent(Arc<Context>);

impl SecContext for Lent {
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        self.0.inner.lock().mech.get_mic(msg)
    }
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.0.inner.lock().mech.verify_mic(msg, mic)
    }
    fn wrap(&mut self, msg: &[u8]) -> Result<Bytes, GssError> {
        self.0.inner.lock().mech.wrap(msg)
    }
    fn unwrap(&mut self, token: &[u8]) -> Result<Bytes, GssError> {
        self.0.inner.lock().mech.unwrap(token)
    }
}

/// A context offered for callbacks.
pub(crate) struct CbGss {
    ctx: Arc<Context>,
    /// What callbacks name it by: `gcbp_handle_from_client`.
    handle: Bytes,
    /// `gcbp_service`, which every callback under it uses.
    pub service: Service,
    /// The sequence number of the next callback under it.
    next_seq: u32,
    window: u32,
}

impl std::fmt::Debug for CbGss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CbGss")
            .field("principal", &self.ctx.principal)
            .field("service", &self.service)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl CbGss {
    /// When the client's ticket, and with it the context, runs out.
    pub(crate) fn expires(&self) -> Duration {
        self.ctx.expires
    }

    /// Whether a callback can still go under it at `now`.
    pub(crate) fn usable(&self, now: Duration) -> bool {
        now < self.ctx.expires && self.next_seq < MAXSEQ
    }

    /// Whether it is the same offer as `other` (the same context lent
    /// under the same back handle).
    pub(crate) fn same(&self, other: &CbGss) -> bool {
        Arc::ptr_eq(&self.ctx, &other.ctx) && self.handle == other.handle
    }

    fn client(&self) -> GssClient {
        GssClient::new(self.handle.clone(), Box::new(Lent(self.ctx.clone())), self.window)
    }

    /// The whole record of callback `proc_` with XDR arguments `args`,
    /// and how to check its reply.
    pub(crate) fn call(
        &mut self,
        xid: u32,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[u8],
    ) -> Result<(Vec<Bytes>, CbReplyCheck), GssError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let record = self.client().call(xid, prog, vers, proc_, self.service, seq, args, false)?;
        Ok((record, CbReplyCheck { ctx: self.ctx.clone(), handle: self.handle.clone(), service: self.service, seq }))
    }
}

/// What the reply to a callback under a lent context must pass.
#[derive(Clone)]
pub(crate) struct CbReplyCheck {
    ctx: Arc<Context>,
    handle: Bytes,
    service: Service,
    seq: u32,
}

impl std::fmt::Debug for CbReplyCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CbReplyCheck").field("service", &self.service).field("seq", &self.seq).finish()
    }
}

impl CbReplyCheck {
    /// The results of an accepted reply: `verf` must be the checksum of
    /// the call's sequence number, `body` (what follows the accept
    /// status) is opened by the call's service.
    pub(crate) fn open(&self, verf: &opaque_auth, body: Bytes) -> Result<Bytes, ReplyError> {
        let mut c = GssClient::new(self.handle.clone(), Box::new(Lent(self.ctx.clone())), 1);
        c.reply(self.service, self.seq, verf, body)
    }
}

impl GssState {
    /// The context `h` lends the back channel. A handle names only a
    /// context of the principal making the request: handles are not
    /// secrets, and no client may have callbacks sealed under another's
    /// context. NFS4ERR_NOENT otherwise (RFC 8881 sections 18.33.3 and
    /// 18.36.4), as for a context that does not exist or has expired.
    pub(crate) fn lend(
        &self,
        h: &gss_cb_handles4,
        caller: Option<&GssCaller>,
        now: Duration,
    ) -> Result<CbGss, nfsstat4> {
        let ctx = self.find(&h.gcbp_handle_from_server).ok_or(nfsstat4::NFS4ERR_NOENT)?;
        let mine = caller.is_some_and(|c| c.principal == ctx.principal);
        if !mine || now >= ctx.expires {
            return Err(nfsstat4::NFS4ERR_NOENT);
        }
        let service = Service::from_wire(h.gcbp_service as u32).ok_or(nfsstat4::NFS4ERR_INVAL)?;
        Ok(CbGss {
            ctx,
            handle: h.gcbp_handle_from_client.clone(),
            service,
            next_seq: 1,
            window: self.limits.seq_window,
        })
    }
}

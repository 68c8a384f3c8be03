//! The server's calls on a connection (the NFSv4.1 back channel) as the
//! layer above sees them, and the ways it answers one: results, results
//! under a verifier (RPCSEC_GSS), GARBAGE_ARGS, a refused credential, or
//! nothing at all (dropping the [`Responder`]).

use bytes::Bytes;
use client_core::rpc::{auth_error_reply, garbage_args_reply, success_reply, success_reply_with, IncomingCall};
use proto::rpc::{auth_stat, opaque_auth};
use tokio::sync::mpsc;

/// A call the server made on this connection, and how to answer it.
pub struct Incoming {
    pub call: IncomingCall,
    pub reply: Responder,
}

/// Answers one incoming call on the connection it came on (or its
/// successor, after a reconnect).
pub struct Responder {
    xid: u32,
    out: mpsc::UnboundedSender<Vec<Bytes>>,
}

impl Responder {
    /// Answers call `xid` by writing the record to `out`, which the
    /// connection's task sends in turn with its calls.
    pub fn new(xid: u32, out: mpsc::UnboundedSender<Vec<Bytes>>) -> Responder {
        Responder { xid, out }
    }

    /// Sends the procedure's XDR-encoded results.
    pub fn send(self, results: Vec<Bytes>) {
        let r = success_reply(self.xid, results);
        self.record(r);
    }

    /// Sends results already sealed by the call's security, under its
    /// reply verifier.
    pub fn send_sealed(self, verf: opaque_auth, sealed: Vec<Bytes>) {
        let r = success_reply_with(self.xid, verf, sealed);
        self.record(r);
    }

    /// The arguments did not open or decode.
    pub fn garbage_args(self, verf: opaque_auth) {
        let r = garbage_args_reply(self.xid, verf);
        self.record(r);
    }

    /// The call's credential or verifier is refused (MSG_DENIED,
    /// AUTH_ERROR `why`).
    pub fn deny(self, why: auth_stat) {
        let r = auth_error_reply(self.xid, why);
        self.record(r);
    }

    fn record(self, r: Vec<Bytes>) {
        // The connection is gone: the server calls again on the next.
        let _ = self.out.send(r);
    }
}

//! RPCSEC_GSS on the back channel (RFC 8881 section 2.10.8.2). Under
//! Kerberos the client lends the server the context its own calls go
//! under, by handle (CREATE_SESSION, then BACKCHANNEL_CTL for each newer
//! one), and names a handle of its own that the server's callbacks carry.
//! A callback under RPCSEC_GSS is checked as a server checks a call (the
//! header's checksum, the sequence window, the body) and answered under
//! the same context; one under a handle this client did not give is
//! refused with RPCSEC_GSS_CREDPROBLEM, so that no one without the
//! context can recall delegations or end a COPY's wait.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client_core::rpc::IncomingCall;
use parking_lot::Mutex;
use proto::nfs4::{callback_sec_parms4, gss_cb_handles4, rpc_gss_svc_t};
use proto::rpc::{auth_flavor, auth_stat};
use rpcsec::callee::{self, Callee, Refusal};
use rpcsec::Service;
use tokio::time::Instant;

use crate::transport::{BackContext, Responder};

/// Contexts callbacks may come under: the one lent last and the one
/// before it, which the server may go on using until the BACKCHANNEL_CTL
/// that lends the newer one has run.
const KEPT: usize = 2;

/// Least time between two lendings asked for by SEQUENCE's status flags:
/// a context set up from a ticket that itself ends within the lease ends
/// as soon as the one it replaces, and the server keeps saying so.
const REFRESH_GAP: Duration = Duration::from_secs(30);

/// The handles this process gives out; a server keys them by session,
/// so unique within the process is more than enough.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// What the session knows of the back channel's security.
#[derive(Default)]
pub(crate) struct CbSecurity {
    table: Mutex<Table>,
    /// One BACKCHANNEL_CTL at a time.
    pub(crate) updating: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Table {
    /// Oldest first.
    callees: VecDeque<Arc<Mutex<Callee>>>,
    /// The generation of the fore context lent last (0: none).
    generation: u64,
    /// Whether the server took the RPCSEC_GSS offer of CREATE_SESSION.
    lent: bool,
    last_refresh: Option<Instant>,
}

fn wire_service(s: Service) -> rpc_gss_svc_t {
    match s {
        Service::None => rpc_gss_svc_t::RPC_GSS_SVC_NONE,
        Service::Integrity => rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY,
        Service::Privacy => rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY,
    }
}

/// An offer of the context `back` for callbacks, and the handle it asks
/// them to carry.
pub(crate) struct Offer {
    pub parms: callback_sec_parms4,
    pub handle: Bytes,
    pub generation: u64,
}

impl CbSecurity {
    /// Makes an offer of `back` and is ready for callbacks under it at
    /// once: the server may call back before its reply to the offer
    /// arrives.
    pub(crate) fn offer(&self, back: &BackContext) -> Offer {
        let n = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        let handle = Bytes::from(format!("nfsx-cb-{n}"));
        let c = Callee::new(handle.clone(), back.service, Box::new(back.ctx.clone()), back.window);
        let mut t = self.table.lock();
        t.callees.push_back(Arc::new(Mutex::new(c)));
        while t.callees.len() > KEPT {
            t.callees.pop_front();
        }
        let parms = callback_sec_parms4::RPCSEC_GSS(gss_cb_handles4 {
            gcbp_service: wire_service(back.service),
            gcbp_handle_from_server: back.handle.clone(),
            gcbp_handle_from_client: handle.clone(),
        });
        Offer { parms, handle, generation: back.generation }
    }

    /// The server took `offer`.
    pub(crate) fn taken(&self, offer: &Offer) {
        let mut t = self.table.lock();
        t.lent = true;
        t.generation = t.generation.max(offer.generation);
    }

    /// The server refused `offer`: no callback comes under its handle.
    /// `more` says whether later contexts are still to be offered.
    pub(crate) fn refused(&self, offer: &Offer, more: bool) {
        let mut t = self.table.lock();
        t.callees.retain(|c| c.lock().handle() != &offer.handle);
        t.lent &= more;
    }

    /// Whether the server took a context of this client for callbacks.
    pub(crate) fn lent(&self) -> bool {
        self.table.lock().lent
    }

    /// The generation of the fore context lent last (0: none).
    pub(crate) fn generation(&self) -> u64 {
        self.table.lock().generation
    }

    /// Whether SEQUENCE's flags may start a lending now, and if so,
    /// counts it as started: at most one per [`REFRESH_GAP`].
    pub(crate) fn refresh_due(&self) -> bool {
        let mut t = self.table.lock();
        let now = Instant::now();
        if !t.lent || t.last_refresh.is_some_and(|l| now.duration_since(l) < REFRESH_GAP) {
            return false;
        }
        t.last_refresh = Some(now);
        true
    }

    fn callee(&self, handle: &Bytes) -> Option<Arc<Mutex<Callee>>> {
        self.table.lock().callees.iter().find(|c| c.lock().handle() == handle).cloned()
    }

    /// The arguments of `call` and how to answer it, when its credential
    /// passes; otherwise the call is refused (answered here) or dropped
    /// (RFC 2203 section 5.3.3.1: replays and calls below the window).
    /// Calls under AUTH_NONE and AUTH_SYS pass as they came: the client
    /// offers AUTH_NONE too, for servers that do not call back under
    /// RPCSEC_GSS.
    pub(crate) fn admit(&self, call: &IncomingCall, reply: Responder) -> Option<(Bytes, Answer)> {
        if call.cred.flavor != auth_flavor::RPCSEC_GSS {
            return Some((call.args.clone(), Answer { reply, seal: None }));
        }
        let Some(cred) = callee::credential(call.cred.body.clone()) else {
            tracing::warn!(xid = call.xid, "a callback with an RPCSEC_GSS credential that does not decode");
            reply.deny(auth_stat::AUTH_BADCRED);
            return None;
        };
        let Some(callee) = self.callee(&cred.handle) else {
            tracing::warn!(xid = call.xid, "a callback under an RPCSEC_GSS handle this client did not give");
            reply.deny(auth_stat::RPCSEC_GSS_CREDPROBLEM);
            return None;
        };
        let verdict = callee.lock().admit(&call.header, &cred, &call.verf, call.args.clone());
        match verdict {
            Ok(a) => Some((a.args, Answer { reply, seal: Some((callee, a.seq)) })),
            Err(Refusal::Drop) => {
                tracing::debug!(xid = call.xid, seq = cred.seq_num, "a callback replayed or below the window: dropped");
                None
            }
            Err(Refusal::Auth(why)) => {
                tracing::warn!(xid = call.xid, ?why, "a callback's RPCSEC_GSS credential refused");
                reply.deny(why);
                None
            }
            Err(Refusal::GarbageArgs { seq }) => {
                tracing::warn!(xid = call.xid, "a callback's RPCSEC_GSS body does not open");
                let verf = callee.lock().verifier(seq);
                match verf {
                    Ok(v) => reply.garbage_args(v),
                    Err(e) => tracing::warn!(xid = call.xid, "no verifier for the reply: {e}"),
                }
                None
            }
        }
    }
}

/// How to answer a callback that passed: as it came, or under its
/// RPCSEC_GSS context.
pub(crate) struct Answer {
    reply: Responder,
    seal: Option<(Arc<Mutex<Callee>>, u32)>,
}

impl Answer {
    /// Sends the procedure's XDR-encoded results.
    pub(crate) fn send(self, results: Vec<Bytes>) {
        let Some((callee, seq)) = self.seal else { return self.reply.send(results) };
        let sealed = {
            let mut c = callee.lock();
            c.verifier(seq).and_then(|v| Ok((v, c.seal_results(seq, &results.concat())?)))
        };
        match sealed {
            Ok((verf, body)) => self.reply.send_sealed(verf, body),
            // The server calls again, or gives up on the back channel.
            Err(e) => tracing::warn!("could not seal a callback's results: {e}"),
        }
    }
}

#[cfg(test)]
#[path = "cbsec_tests.rs"]
mod tests;

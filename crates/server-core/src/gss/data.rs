//! Data calls under a context (RFC 2203 section 5.3.3): the context
//! found, its ticket still valid, the header checksum verified, the
//! sequence number new to the window, and the arguments' body opened.
//! Each failure gets the reply section 5.3.3.3 gives it; a replayed or
//! stale sequence number gets none at all.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use proto::rpc::{accept_stat, auth_stat, reply_data};
use proto::rpcsec_gss::{rpc_gss_cred_vers_1_t, rpc_gss_proc_t};
use rpcsec::{open_body, Service, Verdict};

use super::{Context, GssCaller};
use crate::record::{CallHead, Record};
use crate::rpc::{outcome, rejected_auth};
use crate::{Core, Outcome, PeerInfo, WarnKind};

/// RPCSEC_GSS in the `cred_flavor` of a call header.
pub(crate) const FLAVOR_GSS: u32 = proto::rpc::auth_flavor::RPCSEC_GSS as u32;

/// What became of an RPCSEC_GSS call.
pub(crate) enum GssVerdict {
    /// A data call that passed: run it as `caller` with these arguments.
    Run { caller: GssCaller, args: Bytes },
    /// Answered (a control procedure, or refused), or dropped (`reply`
    /// is `None`).
    Answered(Outcome),
}

/// The version 1 credential, or the auth_stat to refuse it with (an
/// unknown version is the only way a well-formed body fails to decode;
/// either way the credential is not one we take).
fn credential(body: Bytes) -> Result<rpc_gss_cred_vers_1_t, auth_stat> {
    rpcsec::callee::credential(body).ok_or(auth_stat::AUTH_BADCRED)
}

impl Core {
    /// Judges an RPCSEC_GSS call; `None` when it would have to wait
    /// (`nowait`) for work done off the connection's thread.
    pub(crate) fn gss_call(&self, record: &Record, h: &CallHead, peer: &PeerInfo, nowait: bool) -> Option<GssVerdict> {
        let cred = match credential(record.cred(h)) {
            Ok(c) => c,
            Err(stat) => return Some(GssVerdict::Answered(self.gss_refused(h, peer, stat, "undecodable credential"))),
        };
        const DATA: u32 = rpc_gss_proc_t::RPCSEC_GSS_DATA as u32;
        const INIT: u32 = rpc_gss_proc_t::RPCSEC_GSS_INIT as u32;
        const CONTINUE_INIT: u32 = rpc_gss_proc_t::RPCSEC_GSS_CONTINUE_INIT as u32;
        const DESTROY: u32 = rpc_gss_proc_t::RPCSEC_GSS_DESTROY as u32;
        Some(match cred.gss_proc {
            DATA => self.gss_data(record, h, peer, &cred),
            // Context creation reads the service's keytab.
            INIT | CONTINUE_INIT if nowait => return None,
            INIT | CONTINUE_INIT => GssVerdict::Answered(self.gss_init(record, h, peer, &cred)),
            DESTROY => GssVerdict::Answered(self.gss_destroy(record, h, peer, &cred)),
            _ => GssVerdict::Answered(self.gss_refused(h, peer, auth_stat::AUTH_BADCRED, "unknown control procedure")),
        })
    }

    fn gss_data(&self, record: &Record, h: &CallHead, peer: &PeerInfo, cred: &rpc_gss_cred_vers_1_t) -> GssVerdict {
        let (ctx, service) = match self.gss_verified(record, h, peer, cred) {
            Ok(v) => v,
            Err(out) => return GssVerdict::Answered(out),
        };
        let opened = open_body(&mut *ctx.inner.lock().mech, service, cred.seq_num, record.decoder_at(h.args_at).rest());
        match opened {
            Ok(args) => GssVerdict::Run {
                caller: GssCaller {
                    principal: ctx.principal.clone(),
                    identity: ctx.identity.clone(),
                    service,
                    ctx,
                    seq: cred.seq_num,
                },
                args,
            },
            Err(e) => {
                self.gss_log_once(peer, "rpcsec_gss.garbage_args", || {
                    tracing::warn!(peer = %peer.addr, xid = h.xid, principal = %ctx.principal, "RPCSEC_GSS arguments refused: {e} (logged once per client)")
                });
                let reply =
                    self.gss_accepted(&ctx, h.xid, cred.seq_num, reply_data::default(accept_stat::GARBAGE_ARGS));
                GssVerdict::Answered(outcome(reply.unwrap_or_default(), "rpcsec_gss.garbage_args", false))
            }
        }
    }

    /// The context of a data or DESTROY call whose header checksum and
    /// sequence number pass, with the service it asks for.
    pub(super) fn gss_verified(
        &self,
        record: &Record,
        h: &CallHead,
        peer: &PeerInfo,
        cred: &rpc_gss_cred_vers_1_t,
    ) -> Result<(Arc<Context>, Service), Outcome> {
        let Some(service) = Service::from_wire(cred.service) else {
            return Err(self.gss_refused(h, peer, auth_stat::AUTH_BADCRED, "unknown service"));
        };
        // A context we never made, or one dropped (destroyed, idle, pushed
        // out, or from before a restart): the client sets up a new one.
        let Some(ctx) = self.gss.find(&cred.handle) else {
            return Err(self.gss_refused(h, peer, auth_stat::RPCSEC_GSS_CREDPROBLEM, "no such context"));
        };
        let now = self.v4.now();
        if now >= ctx.expires {
            self.gss.remove(&cred.handle);
            return Err(self.gss_refused(h, peer, auth_stat::RPCSEC_GSS_CTXPROBLEM, "the context's ticket expired"));
        }
        ctx.last_used.store(now.as_nanos() as u64, Ordering::Relaxed);
        let mut inner = ctx.inner.lock();
        let header_ok = h.verf_flavor == FLAVOR_GSS
            && inner.mech.verify_mic(record.header_through_cred(h), &record.verf(h)).is_ok();
        if !header_ok {
            drop(inner);
            return Err(self.gss_refused(
                h,
                peer,
                auth_stat::RPCSEC_GSS_CREDPROBLEM,
                "header checksum does not verify",
            ));
        }
        match inner.window.admit(cred.seq_num) {
            Verdict::Accept => {}
            Verdict::Drop => {
                drop(inner);
                tracing::debug!(peer = %peer.addr, xid = h.xid, seq = cred.seq_num, "RPCSEC_GSS sequence number replayed or below the window; dropped");
                return Err(Outcome { label: "rpcsec_gss.dropped", ok: false, ..Outcome::default() });
            }
            Verdict::Exhausted => {
                drop(inner);
                // The context stays: RFC 2203 section 5.3.3.3 has the
                // client refresh it, and a number past MAXSEQ says nothing
                // about the calls it makes with lower ones meanwhile.
                return Err(self.gss_refused(h, peer, auth_stat::RPCSEC_GSS_CTXPROBLEM, "sequence numbers used up"));
            }
        }
        drop(inner);
        Ok((ctx, service))
    }

    /// A refusal of an RPCSEC_GSS call with `stat`, logged (rate-limited).
    pub(super) fn gss_refused(&self, h: &CallHead, peer: &PeerInfo, stat: auth_stat, why: &str) -> Outcome {
        let label = match stat {
            auth_stat::RPCSEC_GSS_CREDPROBLEM => "rpcsec_gss.credproblem",
            auth_stat::RPCSEC_GSS_CTXPROBLEM => "rpcsec_gss.ctxproblem",
            _ => "rpcsec_gss.badcred",
        };
        self.gss_log_once(peer, label, || {
            tracing::warn!(peer = %peer.addr, xid = h.xid, ?stat, "RPCSEC_GSS call refused: {why} (logged once per client)")
        });
        outcome(rejected_auth(h.xid, stat), label, false)
    }

    /// Logs a refusal the first time a client gets that kind; after that
    /// it is only counted (the metrics' `proc` label), or, with too many
    /// clients to remember, sampled as other warnings are.
    pub(super) fn gss_log_once(&self, peer: &PeerInfo, kind: &'static str, log: impl FnOnce()) {
        match self.gss.first_refusal(peer.addr.ip(), kind) {
            Some(true) => log(),
            Some(false) => {}
            None => self.warn(WarnKind::Auth, log),
        }
    }
}

//! Context creation and destruction (RFC 2203 sections 5.2 and 5.4).
//!
//! Creation runs GSS_Accept_sec_context on the client's token and answers
//! with `rpc_gss_init_res`: a handle and, once the mechanism is done, the
//! sequence window with its checksum in the reply's verifier. A failure
//! is told in the result's major and minor status, not by refusing the
//! call (the RFC keeps the two RPCSEC_GSS auth_stat values for data
//! calls).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::rpc::{accept_stat, auth_flavor, auth_stat, opaque_auth, reply_data};
use proto::rpcsec_gss::{rpc_gss_cred_vers_1_t, rpc_gss_init_res, rpc_gss_proc_t};
use rpcsec::{major, AcceptStep, Established, SeqWindow};
use xdr::Encoder;

use super::{Context, Inner, Pending};
use crate::record::{CallHead, Record};
use crate::rpc::{accepted_with, outcome};
use crate::{Core, Outcome, PeerInfo, WarnKind};

impl Core {
    pub(super) fn gss_init(
        &self,
        record: &Record,
        h: &CallHead,
        peer: &PeerInfo,
        cred: &rpc_gss_cred_vers_1_t,
    ) -> Outcome {
        let Some(acceptor) = self.gss.acceptor.clone() else {
            return self.gss_refused(h, peer, auth_stat::AUTH_BADCRED, "no Kerberos service configured");
        };
        if h.proc_ != 0 {
            return self.gss_refused(h, peer, auth_stat::AUTH_BADCRED, "context creation outside NULLPROC");
        }
        let none = || opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() };
        let Ok(token) = record.decoder_at(h.args_at).opaque_var(self.gss.limits.max_token_bytes) else {
            self.warn(
                WarnKind::Garbage,
                || tracing::warn!(peer = %peer.addr, xid = h.xid, "RPCSEC_GSS init token undecodable or too long"),
            );
            let reply = accepted_with(h.xid, none(), reply_data::default(accept_stat::GARBAGE_ARGS), &());
            return outcome(reply, "rpcsec_gss.garbage_args", false);
        };
        let now = self.v4.now();
        let continuing = cred.gss_proc == rpc_gss_proc_t::RPCSEC_GSS_CONTINUE_INIT as u32;
        let accepting = if continuing {
            match self.gss.table.lock().pending.remove(&cred.handle) {
                Some(p) => p.accepting,
                None => return self.init_failed(h, peer, major::GSS_S_NO_CONTEXT, 0, "no such context in creation"),
            }
        } else {
            acceptor.start()
        };
        let window = self.gss.limits.seq_window;
        match accepting.step(&token) {
            Err(e) => self.init_failed(h, peer, e.major, e.minor, &e.message),
            Ok(AcceptStep::Continue { next, token }) => {
                let handle = if continuing { cred.handle.clone() } else { self.gss.new_handle() };
                self.gss.table.lock().pending.insert(handle.clone(), Pending { accepting: next, started: now });
                let res = rpc_gss_init_res {
                    handle,
                    gss_major: major::GSS_S_CONTINUE_NEEDED,
                    gss_minor: 0,
                    seq_window: window,
                    gss_token: Bytes::from(token),
                };
                outcome(accepted_with(h.xid, none(), reply_data::SUCCESS, &res), "rpcsec_gss.init", true)
            }
            Ok(AcceptStep::Complete(Established { ctx, token, principal, lifetime })) => {
                let handle = if continuing { cred.handle.clone() } else { self.gss.new_handle() };
                let identity = self.gss.map.as_ref().and_then(|m| m.identity(&principal));
                if identity.is_none() {
                    tracing::info!(peer = %peer.addr, %principal, "principal has no local account; it acts as the anonymous user");
                }
                let context = Arc::new(Context {
                    handle: handle.clone(),
                    principal: Arc::from(principal.as_str()),
                    identity,
                    expires: now + lifetime,
                    last_used: AtomicU64::new(now.as_nanos() as u64),
                    inner: Mutex::new(Inner { mech: ctx, window: SeqWindow::new(window) }),
                });
                // The verifier is the checksum of the window (section
                // 5.2.3.1); a context that cannot make one is of no use.
                let mic = match context.mic(&window.to_be_bytes()) {
                    Ok(m) => m,
                    Err(e) => return self.init_failed(h, peer, e.major, e.minor, &e.message),
                };
                tracing::debug!(peer = %peer.addr, %principal, ?lifetime, "RPCSEC_GSS context established");
                self.gss.insert(context, now);
                let verf = opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from(mic) };
                let res = rpc_gss_init_res {
                    handle,
                    gss_major: major::GSS_S_COMPLETE,
                    gss_minor: 0,
                    seq_window: window,
                    gss_token: Bytes::from(token),
                };
                outcome(accepted_with(h.xid, verf, reply_data::SUCCESS, &res), "rpcsec_gss.init", true)
            }
        }
    }

    /// The creation reply telling the client the mechanism's failure.
    fn init_failed(&self, h: &CallHead, peer: &PeerInfo, gss_major: u32, gss_minor: u32, why: &str) -> Outcome {
        self.gss_log_once(peer, "rpcsec_gss.init_failed", || {
            tracing::warn!(peer = %peer.addr, xid = h.xid, gss_major, gss_minor, "RPCSEC_GSS context refused: {why} (logged once per client)")
        });
        let res =
            rpc_gss_init_res { handle: Bytes::new(), gss_major, gss_minor, seq_window: 0, gss_token: Bytes::new() };
        let none = opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() };
        outcome(accepted_with(h.xid, none, reply_data::SUCCESS, &res), "rpcsec_gss.init_failed", false)
    }

    /// DESTROY: checked like a data call, then the context is gone; the
    /// reply is a data call's with no results.
    pub(super) fn gss_destroy(
        &self,
        record: &Record,
        h: &CallHead,
        peer: &PeerInfo,
        cred: &rpc_gss_cred_vers_1_t,
    ) -> Outcome {
        let (ctx, service) = match self.gss_verified(record, h, peer, cred) {
            Ok(v) => v,
            Err(out) => return out,
        };
        self.gss.remove(&ctx.handle);
        let mut e = Encoder::with_capacity(32);
        crate::rpc::success_header(h.xid, &mut e);
        let mut out = outcome(e.into_segments(), "rpcsec_gss.destroy", true);
        self.gss_seal(&ctx, cred.seq_num, service, &mut out);
        out
    }
}

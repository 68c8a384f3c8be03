//! RPCSEC_GSS on a connection: the context is set up before the first NFS
//! call (RFC 2203 section 5.2), with the mechanism's steps (which may ask
//! the KDC for a service ticket) run off the runtime's threads, and set
//! up again when the server says it no longer holds it
//! (RPCSEC_GSS_CREDPROBLEM or CTXPROBLEM), after which the refused call
//! is made once more. The sealing of each call is the sans-IO core's.
//! Each context is also kept for the NFSv4.1 back channel, which the
//! server calls back under ([`BackContext`]): the GSS-API's per-message
//! state is one per context, so both go through one `SharedContext`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use client_core::rpc::{split_init_result, Results, RpcError};
use rpcsec::call::check_init_verifier;
use rpcsec::{major, GssClient, InitStep, Initiating, Initiator, Service, SharedContext};

use super::{Call, Connection};

/// What a connection needs to make its calls under Kerberos.
#[derive(Clone)]
pub struct GssParams {
    pub initiator: Arc<dyn Initiator>,
    /// The server's host-based service name, `nfs@HOST`.
    pub target: String,
    pub service: Service,
}

impl std::fmt::Debug for GssParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GssParams").field("target", &self.target).field("service", &self.service).finish()
    }
}

/// The context NFS calls go under now, as the back channel shares it
/// (RFC 8881 section 2.10.8.2: the server calls back under a context the
/// client lends it by its handle).
#[derive(Clone)]
pub struct BackContext {
    /// The same mechanism context the fore channel's calls use.
    pub ctx: SharedContext,
    /// The server's handle for it (`gcbp_handle_from_server`).
    pub handle: Bytes,
    /// The server's sequence window.
    pub window: u32,
    pub service: Service,
    /// Which set-up of the connection made it (1 for the first).
    pub generation: u64,
}

/// A connection's context set-ups: one at a time, and none for a call
/// whose failure an earlier set-up already answered.
pub(super) struct Setups {
    lock: tokio::sync::Mutex<()>,
    /// Contexts set up so far.
    generation: AtomicU64,
    current: parking_lot::Mutex<Option<BackContext>>,
    /// The generation, for those who act when it changes.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Setups {
    fn default() -> Self {
        Setups {
            lock: Default::default(),
            generation: AtomicU64::new(0),
            current: Default::default(),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }
}

fn mech_failed(e: rpcsec::GssError) -> RpcError {
    RpcError::AuthError(format!("Kerberos: {e}"))
}

/// One step of the mechanism, on a thread that may block.
async fn step(next: Box<dyn Initiating>, token: Option<Bytes>) -> Result<InitStep, RpcError> {
    tokio::task::spawn_blocking(move || next.step(token.as_deref()))
        .await
        .map_err(|e| RpcError::AuthError(format!("Kerberos step did not finish: {e}")))?
        .map_err(mech_failed)
}

impl Connection {
    /// The security flavor NFS calls go under.
    pub fn flavor(&self) -> rpcsec::Flavor {
        self.gss.as_ref().map_or(rpcsec::Flavor::Sys, |g| rpcsec::Flavor::of_service(g.service))
    }

    /// Whether calls of `prog` go under the connection's context: NFS
    /// itself; portmap, MOUNT and NLM keep AUTH_SYS, which servers accept
    /// for them.
    pub(super) fn sealed_program(&self, prog: u32) -> bool {
        self.gss.is_some() && prog == proto::nfs3::NFS_PROGRAM
    }

    /// A call under the connection's context: set up first if there is
    /// none; when the server lost it or it ran out, a new one and the call
    /// again (it was refused before it ran).
    pub(super) async fn call_sealed(
        &self,
        name: Option<&'static str>,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: Vec<Bytes>,
    ) -> Result<Bytes, RpcError> {
        let gen = self.gss_ready(prog, vers).await?;
        match self.call_once(name, prog, vers, proc_, args.clone()).await {
            Err(RpcError::GssContext(why)) => {
                tracing::info!(%why, "RPCSEC_GSS context refused; setting up a new one");
                self.gss_setup(prog, vers, gen).await?;
                self.call_once(name, prog, vers, proc_, args).await
            }
            other => other,
        }
    }

    /// The context calls go under now, for the back channel to share;
    /// None before the first is set up, or without Kerberos.
    pub fn back_context(&self) -> Option<BackContext> {
        self.setups.current.lock().clone()
    }

    /// Changes each time a new context is set up (its generation).
    pub fn context_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.setups.changes.subscribe()
    }

    /// The generation of the context calls go under now, setting one up
    /// if there is none yet.
    pub(crate) async fn gss_ready(&self, prog: u32, vers: u32) -> Result<u64, RpcError> {
        let gen = self.setups.generation.load(Ordering::Acquire);
        if gen > 0 {
            return Ok(gen);
        }
        self.gss_setup(prog, vers, 0).await
    }

    /// Sets up a new context unless one newer than `seen` exists already.
    pub(crate) async fn gss_setup(&self, prog: u32, vers: u32, seen: u64) -> Result<u64, RpcError> {
        let Some(g) = self.gss.clone() else { return Ok(0) };
        let _one = self.setups.lock.lock().await;
        let gen = self.setups.generation.load(Ordering::Acquire);
        if gen > seen {
            return Ok(gen);
        }
        let (initiator, target) = (g.initiator.clone(), g.target.clone());
        let first = tokio::task::spawn_blocking(move || initiator.start(&target).and_then(|i| i.step(None)))
            .await
            .map_err(|e| RpcError::AuthError(format!("Kerberos start did not finish: {e}")))?
            .map_err(mech_failed)?;
        let (client, ctx) = self.exchange(prog, vers, first).await?;
        let (handle, window) = (client.handle().clone(), client.window());
        self.shared.rpc.lock().core.set_gss_shared(client, g.service, ctx.clone());
        tracing::debug!(target = %g.target, service = ?g.service, "RPCSEC_GSS context set up");
        // Set-ups are one at a time: none moved the count since it was read.
        let generation = gen + 1;
        *self.setups.current.lock() = Some(BackContext { ctx, handle, window, service: g.service, generation });
        self.setups.generation.store(generation, Ordering::Release);
        self.setups.changes.send_replace(generation);
        Ok(generation)
    }

    /// Trades tokens with the server until both sides are done.
    async fn exchange(
        &self,
        prog: u32,
        vers: u32,
        mut state: InitStep,
    ) -> Result<(GssClient, SharedContext), RpcError> {
        let mut handle = Bytes::new();
        // RFC 4121 takes two tokens; more than a few is a server playing.
        for _ in 0..8 {
            let (token, next, done) = match state {
                InitStep::Continue { next, token } => (token, Some(next), None),
                InitStep::Complete { ctx, token, .. } => (token, None, Some(ctx)),
            };
            let (verf, res) = split_init_result(self.init_call(prog, vers, &handle, token).await?)?;
            if res.gss_major != major::GSS_S_COMPLETE && res.gss_major != major::GSS_S_CONTINUE_NEEDED {
                return Err(RpcError::AuthError(format!(
                    "the server refused the Kerberos context (major {:#x}, minor {})",
                    res.gss_major, res.gss_minor
                )));
            }
            if res.handle.is_empty() {
                return Err(RpcError::BadReply("context creation reply without a handle".into()));
            }
            handle = res.handle.clone();
            let server_done = res.gss_major == major::GSS_S_COMPLETE;
            let mut ctx = match (next, done) {
                (_, Some(ctx)) if server_done => ctx,
                (Some(next), _) => match step(next, Some(res.gss_token.clone())).await? {
                    InitStep::Complete { ctx, .. } if server_done => ctx,
                    s if !server_done => {
                        state = s;
                        continue;
                    }
                    _ => return Err(RpcError::BadReply("the server finished the context before the client".into())),
                },
                _ => return Err(RpcError::BadReply("the server wants more of a finished context".into())),
            };
            check_init_verifier(&mut *ctx, &res, &verf)
                .map_err(|e| RpcError::BadReply(format!("context creation reply: {e}")))?;
            let shared = SharedContext::new(ctx);
            return Ok((GssClient::new(handle, Box::new(shared.clone()), res.seq_window), shared));
        }
        Err(RpcError::BadReply("context creation did not finish".into()))
    }

    async fn init_call(&self, prog: u32, vers: u32, handle: &Bytes, token: Vec<u8>) -> Result<Bytes, RpcError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let call =
            Call { name: None, prog, vers, proc_: 0, args: Vec::new(), reply, init: Some((handle.clone(), token)) };
        self.calls.send(call).map_err(|_| RpcError::Disconnected("connection closed".into()))?;
        rx.await.map_or_else(|_| Err(RpcError::Disconnected("connection closed".into())), Results::open)
    }
}

//! RPCSEC_GSS on a connection: the context is set up before the first NFS
//! call (RFC 2203 section 5.2), with the mechanism's steps (which may ask
//! the KDC for a service ticket) run off the runtime's threads, and set
//! up again when the server says it no longer holds it
//! (RPCSEC_GSS_CREDPROBLEM or CTXPROBLEM), after which the refused call
//! is made once more. A context is also set up anew shortly before the
//! one in use runs out (its ticket's end, as the mechanism reports it),
//! by one caller while the others go on under the old, so that no call
//! is refused for it. The sealing of each call is the sans-IO core's.
//! Each context is also kept for the NFSv4.1 back channel, which the
//! server calls back under ([`BackContext`]): the GSS-API's per-message
//! state is one per context, so both go through one `SharedContext`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// How long before a context's end a new one is set up (at most half
    /// its lifetime).
    pub renew_before: Duration,
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
    /// When the context in use is to be renewed, in nanoseconds since
    /// `epoch` ([`NEVER`]: it is not). Read by every call, hence no lock.
    renew_at: AtomicU64,
    /// A caller is renewing it; the others go on under it meanwhile.
    renewing: AtomicBool,
    /// When the context in use ends, if its lifetime is known.
    ends: parking_lot::Mutex<Option<Instant>>,
    epoch: Instant,
}

const NEVER: u64 = u64::MAX;

/// GSS_C_INDEFINITE: a context that does not end. (The Kerberos
/// initiator reports it as a day, which is then renewed daily.)
const INDEFINITE: Duration = Duration::from_secs(u32::MAX as u64);

/// How much later than the one before a context must end to count as
/// later: mechanisms report lifetimes in whole seconds.
const LATER_BY: Duration = Duration::from_secs(1);

/// A renewal that failed is tried again halfway to the context's end,
/// unless that is nearer than this.
const RETRY_MIN: Duration = Duration::from_secs(1);

impl Default for Setups {
    fn default() -> Self {
        Setups {
            lock: Default::default(),
            generation: AtomicU64::new(0),
            current: Default::default(),
            changes: tokio::sync::watch::Sender::new(0),
            renew_at: AtomicU64::new(NEVER),
            renewing: AtomicBool::new(false),
            ends: Default::default(),
            epoch: Instant::now(),
        }
    }
}

impl Setups {
    fn since_epoch(&self, t: Option<Instant>) -> u64 {
        t.map_or(NEVER, |t| u64::try_from(t.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(NEVER))
    }

    fn renewal_due(&self) -> bool {
        let at = self.renew_at.load(Ordering::Acquire);
        at != NEVER && self.since_epoch(Some(Instant::now())) >= at
    }

    /// Schedules the renewal of a context set up from `started` on that
    /// lasts `lifetime`: `renew_before` ahead of its end, but never in
    /// its first half, so that a short lifetime does not renew in a loop.
    /// A context that ends no later than the one before it came from a
    /// credential that was not refreshed (a cached service ticket):
    /// renewing it would only get the same end again, so the server's
    /// refusal sets up the next.
    fn schedule(&self, started: Instant, lifetime: Duration, renew_before: Duration) {
        let ends = if lifetime.is_zero() || lifetime >= INDEFINITE { None } else { started.checked_add(lifetime) };
        let mut known = self.ends.lock();
        let later = match (ends, *known) {
            (Some(new), Some(old)) => new > old + LATER_BY,
            (new, _) => new.is_some(),
        };
        let at = ends.filter(|_| later).and_then(|e| e.checked_sub(renew_before.min(lifetime / 2)));
        if ends.is_some() && !later {
            tracing::info!(
                "the new RPCSEC_GSS context ends no later than the one before (its ticket was not \
                 refreshed); the next is set up when the server refuses it"
            );
        }
        *known = ends;
        self.renew_at.store(self.since_epoch(at), Ordering::Release);
    }

    /// After a renewal failed: again halfway to the context's end.
    fn retry_later(&self) {
        let now = Instant::now();
        let half = self.ends.lock().and_then(|e| e.checked_duration_since(now)).map(|left| left / 2);
        let at = half.filter(|h| *h >= RETRY_MIN).map(|h| now + h);
        self.renew_at.store(self.since_epoch(at), Ordering::Release);
    }
}

/// Lets another caller renew once this one is done, however it ends.
struct Renewing<'a>(&'a AtomicBool);

impl Drop for Renewing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
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
    /// if there is none yet, or renewing it if it ends soon.
    pub(crate) async fn gss_ready(&self, prog: u32, vers: u32) -> Result<u64, RpcError> {
        let gen = self.setups.generation.load(Ordering::Acquire);
        if gen == 0 {
            return self.gss_setup(prog, vers, 0).await;
        }
        if self.setups.renewal_due() {
            self.gss_renew(prog, vers, gen).await;
            return Ok(self.setups.generation.load(Ordering::Acquire));
        }
        Ok(gen)
    }

    /// Sets up a context to follow generation `gen` before it ends, unless
    /// another caller is at it. The old one is still good meanwhile, and
    /// stays in use when this fails.
    async fn gss_renew(&self, prog: u32, vers: u32, gen: u64) {
        let s = &self.setups;
        if s.renewing.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return;
        }
        let _done = Renewing(&s.renewing);
        // Renewed by the caller before this one since it looked.
        if !s.renewal_due() {
            return;
        }
        tracing::debug!(generation = gen, "renewing the RPCSEC_GSS context before it ends");
        if let Err(e) = self.gss_setup(prog, vers, gen).await {
            tracing::warn!("could not renew the RPCSEC_GSS context before it ends; calls go on under it: {e}");
            s.retry_later();
        }
    }

    /// Sets up a new context unless one newer than `seen` exists already.
    pub(crate) async fn gss_setup(&self, prog: u32, vers: u32, seen: u64) -> Result<u64, RpcError> {
        let Some(g) = self.gss.clone() else { return Ok(0) };
        let _one = self.setups.lock.lock().await;
        let gen = self.setups.generation.load(Ordering::Acquire);
        if gen > seen {
            return Ok(gen);
        }
        let started = Instant::now();
        let (initiator, target) = (g.initiator.clone(), g.target.clone());
        let first = tokio::task::spawn_blocking(move || initiator.start(&target).and_then(|i| i.step(None)))
            .await
            .map_err(|e| RpcError::AuthError(format!("Kerberos start did not finish: {e}")))?
            .map_err(mech_failed)?;
        let (client, ctx, lifetime) = self.exchange(prog, vers, first).await?;
        let (handle, window) = (client.handle().clone(), client.window());
        self.shared.rpc.lock().core.set_gss_shared(client, g.service, ctx.clone());
        tracing::debug!(target = %g.target, service = ?g.service, "RPCSEC_GSS context set up");
        // Set-ups are one at a time: none moved the count since it was read.
        let generation = gen + 1;
        *self.setups.current.lock() = Some(BackContext { ctx, handle, window, service: g.service, generation });
        // Before the generation moves: a caller who sees the new one must
        // not find the old context's renewal due.
        self.setups.schedule(started, lifetime, g.renew_before);
        self.setups.generation.store(generation, Ordering::Release);
        self.setups.changes.send_replace(generation);
        Ok(generation)
    }

    /// Trades tokens with the server until both sides are done; with the
    /// context, how long it lasts.
    async fn exchange(
        &self,
        prog: u32,
        vers: u32,
        mut state: InitStep,
    ) -> Result<(GssClient, SharedContext, Duration), RpcError> {
        let mut handle = Bytes::new();
        // RFC 4121 takes two tokens; more than a few is a server playing.
        for _ in 0..8 {
            let (token, next, done) = match state {
                InitStep::Continue { next, token } => (token, Some(next), None),
                InitStep::Complete { ctx, token, lifetime } => (token, None, Some((ctx, lifetime))),
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
            let (mut ctx, lifetime) = match (next, done) {
                (_, Some(done)) if server_done => done,
                (Some(next), _) => match step(next, Some(res.gss_token.clone())).await? {
                    InitStep::Complete { ctx, lifetime, .. } if server_done => (ctx, lifetime),
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
            return Ok((GssClient::new(handle, Box::new(shared.clone()), res.seq_window), shared, lifetime));
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

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    fn renew_in(s: &Setups, from: Instant) -> Option<Duration> {
        let at = s.renew_at.load(Ordering::Acquire);
        (at != NEVER).then(|| Duration::from_nanos(at) - from.duration_since(s.epoch))
    }

    /// Renewal comes `renew_before` ahead of the end, never in the first
    /// half of a lifetime, not at all for a context that does not end,
    /// and not for one that ends no later than the one before.
    #[test]
    fn renewal_is_scheduled_ahead_of_the_end() {
        let s = Setups::default();
        let t = s.epoch + MIN;
        s.schedule(t, 60 * MIN, 5 * MIN);
        assert_eq!(renew_in(&s, t), Some(55 * MIN));
        // The next context, set up then, from a refreshed ticket.
        let t2 = t + 55 * MIN;
        s.schedule(t2, 10 * MIN, 5 * MIN);
        assert_eq!(renew_in(&s, t2), Some(5 * MIN));
        // Set up from the same ticket: it ends when the one before did.
        let t3 = t2 + 5 * MIN;
        s.schedule(t3, 5 * MIN, 5 * MIN);
        assert_eq!(renew_in(&s, t3), None);
        // A fresh ticket again: a short lifetime is renewed at its half.
        let t4 = t3 + 5 * MIN;
        s.schedule(t4, Duration::from_secs(4), 5 * MIN);
        assert_eq!(renew_in(&s, t4), Some(Duration::from_secs(2)));

        for lifetime in [Duration::ZERO, INDEFINITE, Duration::MAX] {
            let s = Setups::default();
            s.schedule(s.epoch, lifetime, 5 * MIN);
            assert_eq!(renew_in(&s, s.epoch), None, "{lifetime:?}");
        }
    }

    /// A failed renewal is tried again halfway to the end, and not once
    /// that is less than a second away.
    #[test]
    fn a_failed_renewal_is_retried_halfway_to_the_end() {
        let s = Setups::default();
        s.schedule(Instant::now(), 10 * MIN, 5 * MIN);
        let before = Instant::now();
        s.retry_later();
        let left = renew_in(&s, before).expect("a retry");
        assert!(left <= 5 * MIN && left > 5 * MIN - Duration::from_secs(1), "{left:?}");

        let s = Setups::default();
        s.schedule(Instant::now(), Duration::from_millis(1500), 5 * MIN);
        s.retry_later();
        assert_eq!(s.renew_at.load(Ordering::Acquire), NEVER);
    }
}

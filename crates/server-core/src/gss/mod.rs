//! RPCSEC_GSS version 1 (RFC 2203) on the server: the contexts clients
//! set up, and what each call under one must pass before it runs.
//!
//! The GSS-API mechanism (Kerberos V5 through the system's library) is
//! given by the embedding server as an [`Acceptor`], and principals are
//! turned into local identities by its [`PrincipalMap`]; this module only
//! speaks the protocol: context creation and destruction
//! ([`control`]), the header checksum, the sequence window and the
//! argument bodies of data calls ([`data`]), and the verifier and result
//! bodies of their replies ([`seal`]).
//!
//! Contexts are kept in one table under one lock, taken once per call to
//! find the context; the context's own lock covers its GSS calls and its
//! window. The table is bounded: a client that opens contexts without end
//! pushes out the longest unused, whose owners get
//! RPCSEC_GSS_CREDPROBLEM and set up a new one.

pub(crate) mod backchannel;
pub(crate) mod control;
pub(crate) mod data;
pub(crate) mod seal;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use rpcsec::{Accepting, Acceptor, Identity, PrincipalMap, SecContext, SeqWindow, Service};
use serde::Deserialize;

/// Limits of the contexts RPCSEC_GSS clients set up (`[gss]` in the
/// server's configuration).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GssLimits {
    /// The sequence window of each context: how many calls of one context
    /// may overtake each other on the way and still run (RFC 2203
    /// section 5.3.3.1). Linux clients keep at most 128 outstanding.
    /// Default 128.
    pub seq_window: u32,
    /// Contexts kept at once, all clients together; a new one beyond it
    /// pushes out the longest unused. Default 16384.
    pub max_contexts: usize,
    /// A context unused for this long is dropped (clients that vanish
    /// never destroy theirs). Default 3600.
    pub context_idle_secs: u32,
    /// Largest context-creation token accepted, in bytes (a Kerberos
    /// AP-REQ with a large authorization part runs to tens of KiB).
    /// Default 65536.
    pub max_token_bytes: u32,
    /// Client addresses whose refusals are remembered, so that each
    /// kind of refusal is logged once per client; past it the usual
    /// sampling of warnings applies. Default 4096.
    pub logged_clients: usize,
}

impl Default for GssLimits {
    fn default() -> Self {
        GssLimits {
            seq_window: 128,
            max_contexts: 16384,
            context_idle_secs: 3600,
            max_token_bytes: 64 * 1024,
            logged_clients: 4096,
        }
    }
}

/// A caller authenticated under an RPCSEC_GSS context.
#[derive(Clone)]
pub struct GssCaller {
    /// The client's principal (`alice@EXAMPLE.COM`).
    pub principal: Arc<str>,
    /// The local identity it maps to; `None`: the anonymous user.
    pub identity: Option<Identity>,
    /// What this call's body is protected with.
    pub service: Service,
    pub(crate) ctx: Arc<Context>,
    /// This call's sequence number, for its reply's verifier.
    pub(crate) seq: u32,
}

impl PartialEq for GssCaller {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.ctx, &other.ctx) && self.seq == other.seq && self.service == other.service
    }
}

impl Eq for GssCaller {}

impl std::fmt::Debug for GssCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GssCaller")
            .field("principal", &self.principal)
            .field("service", &self.service)
            .field("seq", &self.seq)
            .finish()
    }
}

/// One established context.
pub(crate) struct Context {
    pub handle: Bytes,
    pub principal: Arc<str>,
    pub identity: Option<Identity>,
    /// When the client's ticket runs out (core clock).
    expires: Duration,
    /// Core clock nanoseconds of the last call.
    last_used: AtomicU64,
    inner: Mutex<Inner>,
}

struct Inner {
    mech: Box<dyn SecContext>,
    window: SeqWindow,
}

impl Context {
    /// GSS_GetMIC of `msg` under this context.
    pub(crate) fn mic(&self, msg: &[u8]) -> Result<Vec<u8>, rpcsec::GssError> {
        self.inner.lock().mech.get_mic(msg)
    }
}

/// A context creation in progress (the mechanism asked for another token).
struct Pending {
    accepting: Box<dyn Accepting>,
    started: Duration,
}

#[derive(Default)]
struct Table {
    live: HashMap<Bytes, Arc<Context>>,
    pending: HashMap<Bytes, Pending>,
}

/// The server's RPCSEC_GSS side: its mechanism, if it has one, and the
/// contexts set up with it.
pub(crate) struct GssState {
    acceptor: Option<Arc<dyn Acceptor>>,
    map: Option<Arc<dyn PrincipalMap>>,
    limits: GssLimits,
    /// Begins every handle, so that a handle from before a restart is
    /// never taken for one made after it.
    boot: u32,
    next: AtomicU64,
    table: Mutex<Table>,
    /// (client address, kind of refusal) already logged.
    logged: Mutex<std::collections::HashSet<(std::net::IpAddr, &'static str)>>,
}

impl GssState {
    pub(crate) fn new(limits: GssLimits, boot: u32) -> GssState {
        GssState {
            acceptor: None,
            map: None,
            limits,
            boot,
            next: AtomicU64::new(1),
            table: Default::default(),
            logged: Default::default(),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.acceptor.is_some()
    }

    fn new_handle(&self) -> Bytes {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut h = Vec::with_capacity(12);
        h.extend_from_slice(&self.boot.to_be_bytes());
        h.extend_from_slice(&n.to_be_bytes());
        Bytes::from(h)
    }

    fn find(&self, handle: &[u8]) -> Option<Arc<Context>> {
        self.table.lock().live.get(handle).cloned()
    }

    fn remove(&self, handle: &[u8]) -> Option<Arc<Context>> {
        self.table.lock().live.remove(handle)
    }

    /// Keeps a new context, making room first: contexts idle too long go,
    /// then, if still full, the longest unused.
    fn insert(&self, ctx: Arc<Context>, now: Duration) {
        let idle = Duration::from_secs(self.limits.context_idle_secs.into());
        let mut t = self.table.lock();
        if t.live.len() >= self.limits.max_contexts.max(1) {
            let cutoff = now.saturating_sub(idle).as_nanos() as u64;
            t.live.retain(|_, c| c.last_used.load(Ordering::Relaxed) >= cutoff);
            t.pending.retain(|_, p| p.started >= now.saturating_sub(idle));
        }
        while t.live.len() >= self.limits.max_contexts.max(1) {
            let oldest = t.live.iter().min_by_key(|(_, c)| c.last_used.load(Ordering::Relaxed)).map(|(h, _)| h.clone());
            let Some(h) = oldest else { break };
            t.live.remove(&h);
        }
        t.live.insert(ctx.handle.clone(), ctx);
    }

    /// Whether refusal `kind` of client `ip` is new: logged once per
    /// client (`None` once too many clients are remembered).
    pub(crate) fn first_refusal(&self, ip: std::net::IpAddr, kind: &'static str) -> Option<bool> {
        let mut logged = self.logged.lock();
        if logged.contains(&(ip, kind)) {
            return Some(false);
        }
        if logged.len() >= self.limits.logged_clients {
            return None;
        }
        logged.insert((ip, kind));
        Some(true)
    }

    /// How many contexts are established (for metrics).
    pub(crate) fn contexts(&self) -> usize {
        self.table.lock().live.len()
    }
}

impl crate::Core {
    /// Gives the core a Kerberos (or other GSS-API) mechanism: RPCSEC_GSS
    /// calls are then served, and `map` names the local user each
    /// principal acts as. Without one, RPCSEC_GSS is refused as an
    /// unknown flavor. Call before serving.
    pub fn with_gss(mut self, acceptor: Arc<dyn Acceptor>, map: Arc<dyn PrincipalMap>) -> crate::Core {
        self.gss.acceptor = Some(acceptor);
        self.gss.map = Some(map);
        self
    }

    /// RPCSEC_GSS contexts currently established.
    pub fn gss_contexts(&self) -> usize {
        self.gss.contexts()
    }
}

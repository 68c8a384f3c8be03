//! The nfsx server: tokio transport around the sans-IO `server_core::Core`.
//!
//! One listener answers NFS, MOUNT and the portmapper on the same port; a
//! second portmapper listener on port 111 is added when it can be bound.
//! Each record is handed to a worker thread as soon as it is complete and
//! replies go out in completion order, so one slow request (an fsync) does
//! not hold up the others on the connection.

pub mod backchannel;
pub mod clock;
pub mod cluster;
pub mod conn;
mod dir_events;
pub mod exports;
pub mod gss;
pub mod jobs;
pub mod lone_poll;
pub mod metrics;
pub mod names;
pub mod outbound;
pub mod settings;
pub mod sink;
pub mod slots;
pub mod stable;
pub mod state;
pub mod tls;
pub mod workers;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

use server_core::{Core, CoreSettings, OutReply, PeerInfo, ServicePorts};

use crate::clock::SystemClock;

pub use cluster::ClusterError;
pub use exports::{Backend, ExportError};
pub use metrics::Metrics;
pub use settings::{Settings, SettingsError};
pub use state::StateError;
pub use tls::TlsError;

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Export(#[from] ExportError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Gss(#[from] gss::GssError),
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// What `nfsx serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The directory to export when no exports file is given.
    pub dir: Option<PathBuf>,
    pub backend: Backend,
    pub exports_file: Option<PathBuf>,
    pub settings: Settings,
}

/// State every connection shares.
pub struct Shared {
    pub core: Arc<Core>,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    pub shutdown: watch::Sender<bool>,
    /// Notified whenever a request finishes (shutdown waits on it).
    pub idle: Notify,
    /// Open connections by number, for NFSv4.1 callbacks.
    pub connections: Arc<backchannel::Connections>,
    /// Runs the requests that may block.
    pub workers: workers::Workers,
    /// RPC-with-TLS, when a certificate is configured.
    pub tls: Option<tls::Tls>,
    /// Requests running in place now (`max_requests_in_place`).
    pub in_place: std::sync::atomic::AtomicUsize,
    /// Connection threads polling for a lone client's next request now
    /// (`max_lone_pollers`).
    pub lone_pollers: std::sync::atomic::AtomicUsize,
    /// Requests running in place without a hand-off now
    /// (`max_requests_in_place_direct`).
    pub in_place_direct: std::sync::atomic::AtomicUsize,
    /// Requests waiting for a client's answer to a callback.
    pub(crate) parking: conn::parked::Parking,
    resolve_hostnames: bool,
}

/// A started server; dropping it does not stop it, [`Server::shutdown`] does.
pub struct Server {
    pub shared: Arc<Shared>,
    pub local_addr: SocketAddr,
    pub portmap_addr: Option<SocketAddr>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Stops following the cluster's shared record (or, alone, watching
    /// the shared file systems for another server's first denial).
    cluster_stop: Arc<std::sync::atomic::AtomicBool>,
    /// The thread that follows it, holding the core (and so the mounted
    /// file systems) until it sees `cluster_stop`.
    cluster_thread: Option<std::thread::JoinHandle<()>>,
    /// The core's background jobs, waited for once the server stops.
    jobs: Arc<jobs::Threads>,
}

/// A server that has stopped serving; its background jobs may still hold
/// the core, and with it the mounted file systems.
#[must_use = "wait for the background jobs, or a Ceph export stays mounted until the process ends"]
pub struct Stopped {
    jobs: Arc<jobs::Threads>,
    limit: Duration,
}

impl Stopped {
    /// Waits (up to the shutdown grace period) for the core's background
    /// jobs to end. Call once every other holder of the core is gone (the
    /// async runtime dropped): the last job to end then drops the core and
    /// unmounts the file systems, ending a Ceph export's session at once
    /// rather than leaving its capabilities to the metadata server's
    /// timeout.
    pub fn wait_for_jobs(self) {
        let left = self.jobs.wait(self.limit);
        if left > 0 {
            tracing::warn!(jobs = left, "background jobs still running at exit");
        }
    }
}

impl Server {
    /// Binds the listeners and starts accepting.
    pub async fn start(cfg: ServeConfig) -> Result<Server, ServerError> {
        let mut settings = cfg.settings.clone();
        settings.validate()?;
        let state_dir = settings.state_dir.clone().unwrap_or_else(state::default_state_dir);
        let key = state::handle_key(&state_dir)?;
        let exports = exports::build(&cfg, &state_dir)?;
        fit_fd_limit(&mut settings, exports.len());
        let resolve_hostnames = exports.iter().any(|e| e.rules.iter().any(|r| exports::needs_hostname(r)));

        // A head of a cluster keeps its client records in RADOS, where the
        // head that takes over its address finds them. Before listening:
        // a head taken over gets its clients back first.
        let head = match &settings.cluster.node {
            Some(node) => {
                let sessions = match cfg.backend {
                    Backend::Ceph => exports.iter().map(|e| exports::ceph_session(&state_dir, e.id)).collect(),
                    _ => Vec::new(),
                };
                let shared = settings.cluster.connect(&settings.ceph, node)?;
                let grace = Duration::from_secs(settings.core.nfs4.grace_secs.into());
                Some(cluster::Head::open(shared, node, &settings.ceph, sessions, grace)?)
            }
            None => None,
        };
        let listen_error = |source| ServerError::Listen { addr: settings.listen, source };
        let listener = TcpListener::bind(settings.listen).await.map_err(listen_error)?;
        let local_addr = listener.local_addr().map_err(listen_error)?;
        let portmap = bind_portmap(&settings, local_addr).await;
        let portmap_addr = portmap.as_ref().and_then(|l| l.local_addr().ok());

        let ports = ServicePorts { tcp: local_addr.port(), udp: None };
        // A callback is a few hundred bytes; a connection with more than a
        // whole record still unsent is not being read.
        let connections = Arc::new(backchannel::Connections::new(settings.max_record_size));
        let store: Arc<dyn server_core::StableStore> = match &head {
            Some(h) => h.store(),
            None => Arc::new(stable::FileStore::open(&state_dir)?),
        };
        let jobs = Arc::new(jobs::Threads::default());
        let kerberos = if gss::wanted(&exports) { Some(gss::mechanism(&settings.gss)?) } else { None };
        let nfs4 = &settings.core.nfs4;
        server_core::use_name_source(Box::new(names::NssNames::new(
            Duration::from_secs(nfs4.owner_cache_secs.into()),
            nfs4.owner_cache_entries,
        )));
        let core_settings = CoreSettings { gss: settings.gss.limits(), ..settings.core.clone() };
        let own_ports = [Some(local_addr.port()), portmap_addr.map(|a| a.port())].into_iter().flatten().collect();
        let (outbound, outbound_ends) = outbound::TcpOutbound::new(tokio::runtime::Handle::current(), own_ports);
        let mut core = Core::new(core_settings, exports, key, state::boot_verifier(), ports)
            .with_nfs4_env(Arc::new(SystemClock::default()), connections.clone(), store)
            .with_outbound(outbound)
            .with_jobs(jobs.clone())
            .with_sendfile();
        if let Some((acceptor, map)) = kerberos {
            core = core.with_gss(acceptor, map);
        }
        let core = Arc::new(core);
        let cluster_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cluster_stats = head.as_ref().map(|h| h.stats());
        let cluster_thread = match head {
            Some(h) => Some(h.follow(core.clone(), cluster_stop.clone())?),
            // Alone: told of another server's first denial by the store
            // (a background job that ends at `cluster_stop`).
            None => {
                core.watch_share_denials(cluster_stop.clone());
                None
            }
        };
        let (shutdown, _) = watch::channel(false);
        let spare = workers::Spare {
            threads: settings.worker_spare_threads,
            stall: Duration::from_millis(settings.worker_stall_ms),
        };
        let workers =
            workers::Workers::new(settings.worker_threads, Duration::from_secs(settings.worker_idle_secs), spare);
        let tls = tls::Tls::from_settings(&settings.tls)?;
        let shared = Arc::new(Shared {
            core,
            workers,
            tls,
            settings,
            metrics: Arc::new(Metrics::default()),
            shutdown,
            idle: Notify::new(),
            connections,
            in_place: Default::default(),
            lone_pollers: Default::default(),
            in_place_direct: Default::default(),
            parking: conn::parked::Parking::new(tokio::runtime::Handle::current()),
            resolve_hostnames,
        });
        let mut tasks = vec![tokio::spawn(accept_loop(listener, shared.clone()))];
        if let Some(l) = portmap {
            tasks.push(tokio::spawn(accept_loop(l, shared.clone())));
        }
        if shared.core.shares_store() {
            tasks.push(tokio::spawn(expire_lapsed_clients(shared.clone())));
        }
        tasks.push(tokio::spawn(outbound_results(shared.clone(), outbound_ends)));
        tasks.push(tokio::spawn(nlm_ticks(shared.clone())));
        tasks.extend(dir_events::spawn(&shared));
        if let Some(addr) = shared.settings.metrics {
            let registry = shared.metrics.registry(shared.core.clone(), cluster_stats);
            tasks.push(tokio::spawn(async move {
                if let Err(e) = metrics::http::serve(addr, registry).await {
                    tracing::error!(%addr, "metrics endpoint failed: {e}");
                }
            }));
        }
        tracing::info!(
            listen = %local_addr,
            portmap = ?portmap_addr,
            state_dir = %state_dir.display(),
            versions = ?shared.settings.core.versions,
            tls = shared.tls.is_some(),
            "nfsx serving NFS (MOUNT v3, NLM and portmap beside NFSv3)"
        );
        Ok(Server { shared, local_addr, portmap_addr, tasks, cluster_stop, cluster_thread, jobs })
    }

    /// Stops accepting, lets requests in flight finish (up to the grace
    /// period), then returns what is left to wait for.
    pub async fn shutdown(self) -> Stopped {
        let _ = self.shared.shutdown.send(true);
        self.cluster_stop.store(true, std::sync::atomic::Ordering::Release);
        for t in &self.tasks {
            t.abort();
        }
        let grace = Duration::from_millis(self.shared.settings.shutdown_grace_ms);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let n = self.shared.metrics.in_flight.get();
            if n <= 0 {
                break;
            }
            let notified = self.shared.idle.notified();
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                tracing::warn!(in_flight = n, "shutdown grace period over, exiting with requests in flight");
                break;
            }
        }
        // The follower lets go of the core within a poll, so that the
        // file systems are unmounted (a Ceph session left open would hold
        // its capabilities until the MDS times it out).
        if let Some(t) = self.cluster_thread {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
        tracing::info!("nfsx stopped");
        let limit = Duration::from_millis(self.shared.settings.shutdown_grace_ms);
        Stopped { jobs: self.jobs, limit }
    }
}

/// The portmapper on its well-known port, when that is not the main port,
/// is free, and we may bind it. Failing that, clients must be told the port.
async fn bind_portmap(settings: &Settings, main: SocketAddr) -> Option<TcpListener> {
    let port = settings.portmap_port().filter(|p| *p != main.port())?;
    let addr = SocketAddr::new(main.ip(), port);
    match TcpListener::bind(addr).await {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::info!(%addr, "portmapper not on its well-known port ({e}); clients must be given port {}", main.port());
            None
        }
    }
}

/// How often a server over a shared store looks for NFSv4 clients whose
/// lease ran out, whose opens and locks another server's clients may be
/// waiting on (see `Core::expire_lapsed_clients`).
const LAPSED_CLIENTS_EVERY: Duration = Duration::from_secs(1);

async fn expire_lapsed_clients(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(LAPSED_CLIENTS_EVERY) => {}
            _ = shutdown.changed() => return,
        }
        let core = shared.core.clone();
        // The tables' lock may be held by a request waiting on the store.
        let _ = tokio::task::spawn_blocking(move || core.expire_lapsed_clients()).await;
    }
}

/// Hands the ends of the core's calls to clients back to it.
async fn outbound_results(shared: Arc<Shared>, mut ends: tokio::sync::mpsc::UnboundedReceiver<(u64, OutReply)>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let (id, r) = tokio::select! {
            e = ends.recv() => match e {
                Some(e) => e,
                None => return,
            },
            _ = shutdown.changed() => return,
        };
        let core = shared.core.clone();
        // The core may wait briefly on its locks.
        let _ = tokio::task::spawn_blocking(move || core.outbound_done(id, r)).await;
    }
}

/// How often the core's calls to clients are driven (retries, deadlines)
/// while it has some in progress.
const NLM_TICK: Duration = Duration::from_millis(250);

async fn nlm_ticks(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(NLM_TICK) => {}
            _ = shutdown.changed() => return,
        }
        if shared.core.nlm_busy() {
            let core = shared.core.clone();
            let _ = tokio::task::spawn_blocking(move || core.nlm_tick()).await;
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let max = shared.settings.max_connections;
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let (stream, addr) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and the like: wait for a connection to close.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        // At the limit, the connection idle the longest makes room, as
        // knfsd does: leaving new clients in the backlog would let idle
        // sockets lock real clients out.
        if shared.connections.len() >= max {
            match shared.connections.idlest() {
                Some(victim) => {
                    victim.kick.notify_one();
                    shared.metrics.connections_evicted.inc();
                }
                None => {
                    shared.metrics.connections_rejected.inc();
                    continue;
                }
            }
        }
        let local = stream.local_addr().unwrap_or_else(|_| listener.local_addr().unwrap_or(addr));
        let shared = shared.clone();
        tokio::spawn(async move {
            shared.metrics.connections_total.inc();
            shared.metrics.connections_open.inc();
            let hostname = if shared.resolve_hostnames { exports::reverse_lookup(addr.ip()).await } else { None };
            tracing::debug!(peer = %addr, ?hostname, "connection opened");
            conn::serve(stream, PeerInfo { addr, local, hostname, conn: 0, tls: Default::default() }, shared.clone())
                .await;
            shared.metrics.connections_open.dec();
            tracing::debug!(peer = %addr, "connection closed");
        });
    }
}

/// Raises the open-file limit to its hard maximum and lowers
/// `max_connections` (with a warning) when even that cannot hold every
/// connection beside the backends' cached fds.
fn fit_fd_limit(settings: &mut Settings, exports: usize) {
    let fds_per_export = settings.localfs.handle_cache + settings.localfs.open_file_cache;
    let need = settings.max_connections + fds_per_export * exports.max(1) + RESERVED_FDS;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let (cur, max) = (limit.current.unwrap_or(u64::MAX), limit.maximum.unwrap_or(u64::MAX));
    let want = (need as u64).min(max);
    let mut have = cur;
    if cur < want {
        let raised = rustix::process::Rlimit { current: Some(want), maximum: limit.maximum };
        match rustix::process::setrlimit(rustix::process::Resource::Nofile, raised) {
            Ok(()) => have = want,
            Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
        }
    }
    let have = usize::try_from(have).unwrap_or(usize::MAX);
    if have < need {
        let fit = have.saturating_sub(fds_per_export * exports.max(1) + RESERVED_FDS).max(MIN_CONNECTIONS);
        tracing::warn!(
            open_file_limit = have,
            max_connections = settings.max_connections,
            lowered_to = fit,
            "the open-file limit cannot hold max_connections beside the handle and open-file caches"
        );
        settings.max_connections = settings.max_connections.min(fit);
    }
}

/// Descriptors kept for everything but connections and cached files:
/// listeners, the state directory, journals, logs.
const RESERVED_FDS: usize = 256;
/// Connections served whatever the fd limit says.
const MIN_CONNECTIONS: usize = 64;

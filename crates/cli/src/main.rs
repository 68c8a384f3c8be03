//! `nfsx`: the user-space NFS server, and `nfsx bench`, the papers' NFS
//! workloads against any server or directory.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

mod cluster;
mod malloc;
mod umount;

#[derive(Parser)]
#[command(name = "nfsx", version, about = "User-space NFS server, client and benchmark", long_about = None)]
struct Cli {
    /// Log filter, e.g. `info`, `debug`, `server_core=debug` (also RUST_LOG).
    #[arg(long, global = true, default_value = "info", env = "NFSX_LOG")]
    log: String,
    /// Log line format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Copy, Clone, ValueEnum, Debug)]
enum BackendArg {
    /// The directory on the host file system.
    Local,
    /// An empty in-memory tree (nothing reaches the disk; for tests and for
    /// measuring the protocol path alone).
    Memory,
    /// A Ceph file system through libcephfs; DIR (or --ceph-path, or each
    /// exports line) is a path inside it.
    Ceph,
}

#[derive(Subcommand)]
enum Command {
    /// Export a directory over NFSv3 and NFSv4.0/4.1/4.2 (with MOUNT v3, NLM
    /// v4 and NSM locking for v3 clients, and a portmapper), in clear text or
    /// over RPC-with-TLS when the settings name a certificate ([tls]).
    ///
    /// With no --exports file, DIR is exported read-write to localhost
    /// (127.0.0.0/8 and ::1) without root squashing. Clients mount DIR's
    /// absolute path, as with /etc/exports; NFSv4 clients find it under
    /// the pseudo root `/`, which joins all exports:
    ///
    ///   nfsx serve /srv/data
    ///   nfs-ls 'nfs://127.0.0.1/srv/data?version=3'
    ///   nfs-ls 'nfs://127.0.0.1/srv/data?version=4'
    ///
    /// NFSv4 state (leases, grace period, delegations, slot tables) is set
    /// in the `[core.nfs4]` table of the --config file; client records for
    /// reclaim after a restart are kept in the state directory.
    ///
    /// NFS, MOUNT and the portmapper all answer on the listen port. Listening
    /// on 2049, the portmapper also answers on port 111 when that port is
    /// free, so plain `nfs://HOST/PATH` URLs work. On another port it leaves
    /// 111 alone (unless --portmap-port says otherwise): pass the port to the
    /// client (libnfs: `?nfsport=P&mountport=P`).
    #[command(verbatim_doc_comment)]
    Serve {
        /// Directory to export (optional when --exports names the exports).
        dir: Option<PathBuf>,
        /// Address and port for NFS, MOUNT and portmap [default: 0.0.0.0:2049].
        #[arg(long, env = "NFSX_LISTEN")]
        listen: Option<SocketAddr>,
        /// Also answer the portmapper on this port (0: never) [default: 111
        /// when listening on 2049, else none].
        #[arg(long, env = "NFSX_PORTMAP_PORT", value_name = "PORT")]
        portmap_port: Option<u16>,
        /// Storage backend for DIR.
        #[arg(long, value_enum, default_value_t = BackendArg::Local)]
        backend: BackendArg,
        /// With --backend ceph: the cluster's ceph.conf [default: [ceph] conf,
        /// else libcephfs's search].
        #[arg(long, value_name = "FILE")]
        ceph_conf: Option<PathBuf>,
        /// With --backend ceph: the directory of the Ceph file system to
        /// export when DIR is not given [default: [ceph] path, "/"].
        #[arg(long, value_name = "PATH")]
        ceph_path: Option<String>,
        /// Exports file in /etc/exports(5) syntax (paths, client patterns,
        /// rw/ro, sync/async, root_squash/no_root_squash/all_squash,
        /// anonuid/anongid, secure/insecure).
        #[arg(long)]
        exports: Option<PathBuf>,
        /// TOML settings file; every key is optional (see docs/CONFIGURATION.md).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where the file-handle key and backend state are kept
        /// [default: /var/lib/nfsx for root, else ~/.local/state/nfsx].
        #[arg(long, env = "NFSX_STATE_DIR")]
        state_dir: Option<PathBuf>,
        /// Serve Prometheus metrics at http://ADDR:PORT/metrics.
        #[arg(long, env = "NFSX_METRICS")]
        metrics: Option<SocketAddr>,
    },
    /// Run an NFS benchmark workload against one or more targets, side by side.
    ///
    /// Targets are NFS servers, reached with nfsx's own client
    /// (nfs://HOST[:PORT]/EXPORT; PORT is where the server's portmapper
    /// answers, 111 if omitted), or directories on any mounted file system
    /// (plain system calls). Several --target options run alternately, and
    /// every later target is compared with the first:
    ///
    ///   nfsx bench seqwrite --target nfs://127.0.0.1/srv/data --target /tmp --runs 5 --report out/
    ///
    /// Workloads: seqwrite (Lever & Honeyman), data, metadata, macro
    /// (Chen et al. 2015, sections 3, 4, 6; Lai), multi-client, recall
    /// (Chen et al. 2015 Fig. 13), locked-read (section 5.2). Targets
    /// nfs://HOST/EXPORT speak NFSv4.1 where the server offers it and NFSv3
    /// otherwise; ?version=3 or ?version=4.1 fixes the version (the papers'
    /// NFSv3 figures need ?version=3).
    #[command(verbatim_doc_comment)]
    Bench(Box<bench::cli::BenchArgs>),
    /// Mount an NFS export on a local directory through FUSE (NFSv4.1
    /// where the server offers it, else NFSv3, through nfsx's own client),
    /// so any program can use it; no kernel NFS client
    /// is needed. Runs in the foreground until the directory is unmounted
    /// (`nfsx umount DIR`, `fusermount3 -u DIR`) or the process gets
    /// SIGINT/SIGTERM, which unmount it:
    ///
    ///   nfsx mount nfs://127.0.0.1/srv/data /mnt/data &
    ///   tar -C /mnt/data -xf src.tar && nfsx umount /mnt/data
    ///   nfsx mount 'nfs://127.0.0.1/srv/data?version=3' /mnt/data &
    ///
    /// Writes are cached (write-behind) and sent at close(2), fsync(2) or a
    /// stat of the file, which report any error; attributes and names are
    /// trusted for --attr-ttl, and every open revalidates the file
    /// (close-to-open consistency). Needs /dev/fuse and fusermount3
    /// (Debian package fuse3).
    #[command(verbatim_doc_comment)]
    Mount {
        /// nfs://HOST[:PORT]/EXPORT[?version=3|4.1] (PORT: where the
        /// server's portmapper answers; without a version NFSv4.1 where
        /// the server offers it, else NFSv3).
        url: String,
        /// Directory to mount on (must exist).
        dir: PathBuf,
        /// TOML file of client settings (see docs/CONFIGURATION.md).
        #[arg(long)]
        client_config: Option<PathBuf>,
        /// Let other users than the one mounting use the mount (FUSE
        /// allow_other; for non-root users it needs user_allow_other in
        /// /etc/fuse.conf).
        #[arg(long)]
        allow_other: bool,
        /// How long the kernel trusts attributes and names, in milliseconds.
        #[arg(long, default_value_t = 1000, value_name = "MS")]
        attr_ttl: u64,
        /// Calls wait for a server that stopped answering until it is back
        /// (the NFS `hard` option), instead of failing with EIO once the
        /// client's retransmissions (`[rpc] retrans`) or its reconnect time
        /// (`reconnect_timeout_ms`) run out (`soft`, the default here).
        /// `nfsx umount` still detaches a hard mount whose server is gone.
        #[arg(long)]
        hard: bool,
        /// Send each opendir to the mount, which asks whether the
        /// directory changed; by default the kernel opens directories
        /// itself and keeps their listings while their mtime (refreshed
        /// after --attr-ttl) is unchanged, two trips per listing fewer.
        #[arg(long)]
        opendir: bool,
    },
    /// Unmount a directory mounted with `nfsx mount`: as root by the
    /// umount2 system call, otherwise with fusermount3 -u; a busy mount is
    /// detached (lazy unmount) and goes once its last user leaves.
    Umount {
        /// The mounted directory.
        dir: PathBuf,
    },
    /// Heads over one Ceph cluster sharing NFSv4 client state (`[cluster]`
    /// in the settings): look at their shared record in RADOS, move a dead
    /// head's clients to another head, give them back.
    Cluster {
        /// Settings file with the `[ceph]` and `[cluster]` tables the heads use.
        #[arg(long, global = true)]
        config: Option<PathBuf>,
        /// Ceph configuration file (overrides `[ceph] conf`).
        #[arg(long, global = true)]
        ceph_conf: Option<PathBuf>,
        #[command(subcommand)]
        command: cluster::ClusterCommand,
    },
}

/// How long a signalled `nfsx mount` waits for its calls to finish before
/// it exits regardless.
const UNMOUNT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// A hard mount's reconnect time: in effect forever (a century).
const HARD_RECONNECT_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

fn init_logging(filter: &str, format: LogFormat) {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| filter.to_string());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let filter = match cli.command {
        // fuser warns that its own unmount failed whenever the directory
        // was unmounted from outside (nfsx umount), which is the normal end.
        Command::Mount { .. } => format!("{},fuser::mnt=error", cli.log),
        _ => cli.log.clone(),
    };
    init_logging(&filter, cli.log_format);
    match cli.command {
        Command::Bench(args) => {
            // The client's allocator settings are the process's; a file
            // that does not parse is reported by the run itself.
            if let Ok(s) = client::ClientSettings::from_file(args.client_config.as_deref()) {
                malloc::tune(s.malloc_mmap_threshold, s.malloc_trim_threshold);
            }
            std::process::exit(bench::cli::main(*args))
        }
        Command::Mount { url, dir, client_config, allow_other, attr_ttl, hard, opendir } => {
            let mut settings =
                client::ClientSettings::from_file(client_config.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
            malloc::tune(settings.malloc_mmap_threshold, settings.malloc_trim_threshold);
            if hard {
                settings.rpc.retrans = u32::MAX;
                settings.reconnect_timeout_ms = HARD_RECONNECT_MS;
            }
            let mount = fuse::MountSettings {
                attr_ttl: std::time::Duration::from_millis(attr_ttl),
                no_opendir: !opendir,
                ..Default::default()
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(mount_nfs(&url, &dir, settings, mount, allow_other))
        }
        Command::Cluster { config, ceph_conf, command } => cluster::run(config, ceph_conf, command),
        Command::Umount { dir } => umount::run(&dir),
        Command::Serve {
            mut dir,
            listen,
            portmap_port,
            backend,
            ceph_conf,
            ceph_path,
            exports,
            config,
            state_dir,
            metrics,
        } => {
            let mut settings = match &config {
                Some(p) => server::Settings::load(p)?,
                None => server::Settings::default(),
            };
            if let Some(l) = listen {
                settings.listen = l;
            }
            if let Some(p) = portmap_port {
                settings.portmap_port = Some(p);
            }
            if let Some(s) = state_dir {
                settings.state_dir = Some(s);
            }
            if let Some(m) = metrics {
                settings.metrics = Some(m);
            }
            if let Some(c) = ceph_conf {
                settings.ceph.conf = Some(c);
            }
            if let Some(p) = ceph_path {
                settings.ceph.path = p;
            }
            if matches!(backend, BackendArg::Ceph) && dir.is_none() && exports.is_none() {
                dir = Some(PathBuf::from(&settings.ceph.path));
            }
            if dir.is_none() && exports.is_none() {
                anyhow::bail!("nothing to export: give a directory (nfsx serve DIR) or --exports FILE");
            }
            let backend = match backend {
                BackendArg::Local => server::Backend::Local,
                BackendArg::Memory => server::Backend::Memory,
                BackendArg::Ceph => server::Backend::Ceph,
            };
            malloc::tune(settings.malloc_mmap_threshold, settings.malloc_trim_threshold);
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .max_blocking_threads(settings.worker_threads)
                .build()
                .context("starting the async runtime")?;
            let cfg = server::ServeConfig { dir, backend, exports_file: exports, settings };
            let stopped = runtime.block_on(serve(cfg))?;
            // The connections' tasks, and the core they hold, go with the
            // runtime; the jobs that still hold it end after them.
            drop(runtime);
            if let Some(stopped) = stopped {
                stopped.wait_for_jobs();
            }
            Ok(())
        }
    }
}

async fn serve(cfg: server::ServeConfig) -> anyhow::Result<Option<server::Stopped>> {
    let mut signals = Signals::listen()?;
    let server = tokio::select! {
        // A server that has started is stopped as below, never dropped.
        biased;
        started = server::Server::start(cfg) => started?,
        _ = signals.recv() => {
            tracing::info!("stopped while starting");
            return Ok(None);
        }
    };
    signals.recv().await;
    tracing::info!("shutting down: finishing requests in flight");
    Ok(Some(server.shutdown().await))
}

async fn mount_nfs(
    url: &str,
    dir: &std::path::Path,
    settings: client::ClientSettings,
    mount: fuse::MountSettings,
    allow_other: bool,
) -> anyhow::Result<()> {
    let client = client::Client::connect(url, settings).await.with_context(|| format!("connecting to {url}"))?;
    let rt = tokio::runtime::Handle::current();
    let client = std::sync::Arc::new(client);
    let (session, namespace) = fuse::mount(client.clone(), rt, dir, url, mount, allow_other)
        .with_context(|| format!("mounting on {} (needs /dev/fuse and fusermount3)", dir.display()))?;
    tracing::info!(url, dir = %dir.display(), "mounted");
    // Until someone unmounts the directory, or a signal asks us to.
    let unmounted = async {
        while !session.guard.is_finished() {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    };
    let ended: anyhow::Result<()> = tokio::select! {
        _ = unmounted => {
            tracing::info!(dir = %dir.display(), "unmounted");
            session.join().context("the mount's request loop failed")
        }
        r = async { Signals::listen()?.recv().await; anyhow::Ok(()) } => match r {
            Err(e) => Err(e),
            Ok(()) => {
                tracing::info!(dir = %dir.display(), "unmounting");
                // A call waiting on a vanished server (a hard mount) can keep
                // the session from ending; past a grace period the process
                // exits anyway, and the kernel fails what is still waiting
                // (ENOTCONN) when the device closes.
                let done = tokio::task::spawn_blocking(move || session.umount_and_join());
                match tokio::time::timeout(UNMOUNT_GRACE, done).await {
                    Ok(Ok(r)) => r.context("unmounting"),
                    Ok(Err(e)) => Err(anyhow::anyhow!("unmounting: {e}")),
                    Err(_) => {
                        tracing::warn!(dir = %dir.display(), "calls still waiting on the server; leaving them to fail");
                        Ok(())
                    }
                }
            }
        }
    };
    // The lock service's portmapper entries go with the mount, so that the
    // next lock client on this host can register.
    if let Some(svc) = client::lockd::LockService::running() {
        let _ = tokio::time::timeout(UNMOUNT_GRACE, svc.unregister()).await;
    }
    // Servers free at once any NFSv3 lock of this process left behind.
    let _ = tokio::time::timeout(UNMOUNT_GRACE, client::lockd::process_ending()).await;
    // Files still open when the mount ended leave no hidden names behind,
    // however it ended.
    if tokio::time::timeout(UNMOUNT_GRACE, namespace.remove_all_hidden()).await.is_err() {
        tracing::warn!("the server did not answer the removal of hidden names");
    }
    // NFSv4.1: delegations back and the session ended now, so the server
    // frees this client's state at once, not at lease expiry.
    if tokio::time::timeout(UNMOUNT_GRACE, client.shutdown()).await.is_err() {
        tracing::warn!("the server did not answer the end of the session");
    }
    ended
}

/// SIGTERM and SIGINT, listened for from the moment `nfsx serve` starts:
/// a signal that comes while the exports are being mounted (a Ceph
/// cluster may take its mount_timeout_secs) stops the server as cleanly
/// as one that comes later, rather than ending the process with its file
/// systems still mounted.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals { term: signal(SignalKind::terminate())?, int: signal(SignalKind::interrupt())? })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

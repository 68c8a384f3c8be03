//! `nfsx`: the user-space NFS server, and `nfsx bench`, the papers' NFS
//! workloads against any server or directory.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

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
}

#[derive(Subcommand)]
enum Command {
    /// Export a directory over NFSv3 and NFSv4.0/4.1 (with MOUNT v3, NLM v4
    /// and NSM locking for v3 clients, and a portmapper).
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
    /// (Chen et al. 2015, sections 3, 4, 6; Lai), multi-client.
    #[command(verbatim_doc_comment)]
    Bench(Box<bench::cli::BenchArgs>),
}

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
    init_logging(&cli.log, cli.log_format);
    match cli.command {
        Command::Bench(args) => std::process::exit(bench::cli::main(*args)),
        Command::Serve { dir, listen, portmap_port, backend, exports, config, state_dir, metrics } => {
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
            if dir.is_none() && exports.is_none() {
                anyhow::bail!("nothing to export: give a directory (nfsx serve DIR) or --exports FILE");
            }
            let backend = match backend {
                BackendArg::Local => server::Backend::Local,
                BackendArg::Memory => server::Backend::Memory,
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .max_blocking_threads(settings.worker_threads)
                .build()
                .context("starting the async runtime")?;
            let cfg = server::ServeConfig { dir, backend, exports_file: exports, settings };
            runtime.block_on(serve(cfg))
        }
    }
}

async fn serve(cfg: server::ServeConfig) -> anyhow::Result<()> {
    let server = server::Server::start(cfg).await?;
    wait_for_signal().await?;
    tracing::info!("shutting down: finishing requests in flight");
    server.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

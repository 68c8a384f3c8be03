//! `nfs://host[:port]/export` targets: the nfsx client, optionally through
//! the delay proxy. The client is async; workloads are OS threads, so each
//! call is driven with `block_on` on a runtime the target owns.
//!
//! Two runtimes, by how many threads will call a run's clients. Several
//! callers share a multi-thread runtime, whose thread reads every reply
//! and wakes the caller it belongs to. A lone caller, with
//! `drive_from_caller`, drives a current-thread runtime itself: it waits
//! for its reply in the runtime's own poll of the socket, so a call costs
//! one wake-up instead of two (the runtime thread's, then the caller's).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use client::{Client, ClientSettings, NfsUrl, ServerAddrs};
use parking_lot::Mutex;
use proto::nfs3::{ftype3, nfs_fh3, nfsstat3};
use tokio::runtime::{Handle, Runtime};

use crate::proxy::DelayProxy;
use crate::target::{
    BenchError, BenchFile, BenchFs, DirEntry, FileKind, FileStat, OpStat, OpenOptions, Result, Target,
};

/// Client knobs a bench invocation may set.
#[derive(Debug, Clone, Default)]
pub struct NfsOptions {
    /// A TOML file of client settings (see docs/CONFIGURATION.md).
    pub client_config: Option<PathBuf>,
    /// Connections per client (like the `nconnect` mount option).
    pub nconnect: Option<usize>,
    /// No read cache and no readahead: every read is a READ.
    pub no_data_cache: bool,
    /// Writes sent at once as UNSTABLE WRITEs, not through write-behind.
    pub direct_writes: bool,
}

/// How long setting up a client may take before the target is declared
/// unreachable (discovery, MOUNT, FSINFO).
const CONNECT_LIMIT: Duration = Duration::from_secs(20);

/// Opens an `nfs://` target; discovery and one MOUNT happen here, so a
/// wrong host or export fails before any run starts.
pub fn open(url: &str, opts: &NfsOptions) -> Result<Arc<dyn Target>> {
    let parsed = NfsUrl::parse(url).map_err(|e| BenchError::Target(e.to_string()))?;
    let mut settings = ClientSettings::from_file(opts.client_config.as_deref())
        .map_err(|e| BenchError::Invalid(format!("--client-config {e}")))?;
    if let Some(n) = opts.nconnect {
        settings.nconnect = n;
    }
    if opts.no_data_cache {
        settings.read_cache.max_bytes = 0;
        settings.readahead.max_window = 0;
    }
    settings.direct_writes |= opts.direct_writes;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.runtime_threads())
        .thread_name("nfsx-client")
        .enable_all()
        .build()
        .map_err(|e| BenchError::Target(format!("cannot start the client runtime: {e}")))?;
    let addrs = rt
        .block_on(async { tokio::time::timeout(CONNECT_LIMIT, client::resolve(&parsed, &settings)).await })
        .map_err(|_| BenchError::Timeout(format!("{url}: no answer from the server")))?
        .map_err(|e| BenchError::Target(format!("{url}: {e}")))?;
    let target = NfsTarget {
        name: url.to_string(),
        url: parsed,
        settings,
        addrs,
        proxy: Mutex::new(None),
        rt: Arc::new(rt),
        driven: OnceLock::new(),
        callers: AtomicUsize::new(1),
    };
    // Mount once now so a wrong export is reported before any run.
    target.connect()?;
    Ok(Arc::new(target))
}

struct NfsTarget {
    name: String,
    url: NfsUrl,
    settings: ClientSettings,
    addrs: ServerAddrs,
    /// The delay proxy new clients connect through, when a delay is set.
    proxy: Mutex<Option<DelayProxy>>,
    /// Clients of runs with several callers, and the delay proxy.
    rt: Arc<Runtime>,
    /// Clients of runs with one caller, which drives it (`drive_from_caller`).
    driven: OnceLock<Arc<Runtime>>,
    /// Threads that will call the next run's clients (`set_callers`).
    callers: AtomicUsize,
}

/// How often a thread of its own drives the lone caller's runtime, for
/// what must go on while the caller does not call (NFSv4.1 lease renewal,
/// callbacks, write-behind): those run whenever some thread drives it.
const IDLE_DRIVE_INTERVAL: Duration = Duration::from_millis(100);

/// Passes of the runtime in each of those turns: a callback needs several
/// to go all the way through (read, handed to the callback task,
/// answered, written), and with one pass a CB_NOTIFY waited several
/// intervals for its answer. Yields, not a timer: a turn that does not
/// get the runtime (a caller drives it) ends at once instead of waiting
/// for a timer nobody drives.
const IDLE_DRIVE_PASSES: usize = 8;

impl NfsTarget {
    /// The runtime the next run's clients live on.
    fn runtime(&self) -> Result<Arc<Runtime>> {
        if !self.settings.drive_from_caller || self.callers.load(Ordering::Relaxed) > 1 {
            return Ok(self.rt.clone());
        }
        if let Some(rt) = self.driven.get() {
            return Ok(rt.clone());
        }
        let rt = Arc::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| BenchError::Target(format!("cannot start the client runtime: {e}")))?,
        );
        let weak = Arc::downgrade(&rt);
        std::thread::Builder::new()
            .name("nfsx-client-idle".into())
            .spawn(move || drive_while_idle(weak))
            .map_err(|e| BenchError::Target(format!("cannot start the client runtime: {e}")))?;
        Ok(self.driven.get_or_init(|| rt).clone())
    }
}

/// Lets the runtime run its timers, tasks and I/O every
/// `IDLE_DRIVE_INTERVAL` while nobody calls, until the target is gone.
/// Its turn is short: a caller that arrives meanwhile takes over as soon
/// as it ends, and while a caller drives, this one only waits its turn.
fn drive_while_idle(rt: Weak<Runtime>) {
    loop {
        std::thread::sleep(IDLE_DRIVE_INTERVAL);
        let Some(rt) = rt.upgrade() else { return };
        rt.block_on(async {
            for _ in 0..IDLE_DRIVE_PASSES {
                tokio::task::yield_now().await;
            }
        });
    }
}

impl Target for NfsTarget {
    fn name(&self) -> &str {
        &self.name
    }

    fn connect(&self) -> Result<Arc<dyn BenchFs>> {
        let mut addrs = self.addrs;
        if let Some(p) = &*self.proxy.lock() {
            addrs.nfs = p.local_addr();
        }
        let fut = Client::connect_to(&self.url, addrs, self.settings.clone());
        let rt = self.runtime()?;
        let client = rt
            .block_on(async { tokio::time::timeout(CONNECT_LIMIT, fut).await })
            .map_err(|_| BenchError::Timeout(format!("{}: mount did not finish", self.name)))?
            .map_err(|e| BenchError::Target(format!("{}: {e}", self.name)))?;
        Ok(Arc::new(NfsFs { client, rt }))
    }

    fn set_callers(&self, callers: usize) {
        self.callers.store(callers, Ordering::Relaxed);
    }

    fn set_delay(&self, rtt: Duration, one_way: bool) -> Result<()> {
        let (to_server, to_client) = if one_way { (rtt, Duration::ZERO) } else { (rtt / 2, rtt - rtt / 2) };
        let mut proxy = self.proxy.lock();
        if rtt.is_zero() {
            *proxy = None; // straight to the server: no proxy overhead at all
            return Ok(());
        }
        match &*proxy {
            Some(p) => p.set_delay(to_server, to_client),
            None => {
                let p = self
                    .rt
                    .block_on(DelayProxy::start(self.addrs.nfs, to_server, to_client))
                    .map_err(|e| BenchError::Target(format!("delay proxy: {e}")))?;
                *proxy = Some(p);
            }
        }
        Ok(())
    }
}

struct NfsFs {
    client: Client,
    /// `Runtime::block_on`, not a handle's: only the runtime itself lets
    /// the caller drive a current-thread runtime.
    rt: Arc<Runtime>,
}

/// How long a client that is done may take to end its NFSv4.1 session.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

impl Drop for NfsFs {
    /// An NFSv4.1 client gives its delegations back and ends its session
    /// before it goes: left to lease expiry, they would make the next
    /// run's clients wait for recalls nobody answers.
    fn drop(&mut self) {
        if self.client.nfs41().is_none() || Handle::try_current().is_ok() {
            return;
        }
        let client = self.client.clone();
        let _ = self.rt.block_on(async move { tokio::time::timeout(SHUTDOWN_LIMIT, client.shutdown()).await });
    }
}

fn op_err<'a>(op: &'static str, path: &'a str) -> impl FnOnce(client::Error) -> BenchError + 'a {
    move |e| BenchError::op(op, path, e)
}

fn kind(t: ftype3) -> FileKind {
    match t {
        ftype3::NF3REG => FileKind::File,
        ftype3::NF3DIR => FileKind::Dir,
        ftype3::NF3LNK => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

impl BenchFs for NfsFs {
    fn open(&self, path: &str, how: OpenOptions) -> Result<Box<dyn BenchFile>> {
        let file = self.rt.block_on(self.client.open(path, how)).map_err(op_err("open", path))?;
        Ok(Box::new(NfsFile { file: Some(file), rt: self.rt.clone(), path: path.to_string() }))
    }

    fn stat(&self, path: &str) -> Result<FileStat> {
        let a = self.rt.block_on(self.client.stat(path)).map_err(op_err("stat", path))?;
        Ok(FileStat {
            kind: kind(a.r#type),
            size: a.size,
            mode: a.mode,
            mtime_ns: a.mtime.seconds.saturating_mul(1_000_000_000).saturating_add(a.mtime.nseconds.into()),
        })
    }

    fn readdir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let entries = self.rt.block_on(self.client.readdir(path)).map_err(op_err("readdir", path))?;
        Ok(entries
            .into_iter()
            .map(|e| DirEntry { kind: e.attrs.as_ref().map_or(FileKind::Other, |a| kind(a.r#type)), name: e.name })
            .collect())
    }

    fn mkdir(&self, path: &str) -> Result<()> {
        self.rt.block_on(self.client.mkdir(path)).map_err(op_err("mkdir", path))
    }

    fn remove(&self, path: &str) -> Result<()> {
        self.rt.block_on(self.client.remove(path)).map_err(op_err("unlink", path))
    }

    fn rmdir(&self, path: &str) -> Result<()> {
        self.rt.block_on(self.client.rmdir(path)).map_err(op_err("rmdir", path))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.rt.block_on(self.client.rename(from, to)).map_err(op_err("rename", from))
    }

    fn write_whole(&self, path: &str, data: &[u8]) -> Result<()> {
        self.rt.block_on(self.client.write_file(path, data)).map_err(op_err("write", path))
    }

    fn protocol(&self) -> Option<String> {
        Some(format!("NFSv{}", self.client.version()))
    }

    fn copy_range(&self, from: &str, from_off: u64, to: &str, to_off: u64, len: u64) -> Result<u64> {
        let (src, dst) = self.v42_handles("COPY", from, to)?;
        let r = self.rt.block_on(self.client.copy_range_handle(&src, from_off, &dst, to_off, len));
        r.map_err(|e| unsupported_or("COPY", from, e))
    }

    fn clone_range(&self, from: &str, from_off: u64, to: &str, to_off: u64, len: u64) -> Result<()> {
        let (src, dst) = self.v42_handles("CLONE", from, to)?;
        let r = self.rt.block_on(self.client.clone_range_handle(&src, from_off, &dst, to_off, len));
        r.map_err(|e| unsupported_or("CLONE", from, e))
    }

    fn op_stats(&self) -> Vec<OpStat> {
        let ns_to_us = |ns: u64| ns / 1000;
        self.client
            .stats()
            .ops
            .into_iter()
            .map(|(name, c)| OpStat {
                op: name.to_string(),
                count: c.count,
                bytes_sent: c.bytes_sent,
                bytes_received: c.bytes_received,
                retransmissions: c.retransmissions,
                queue_us: ns_to_us(c.queue_ns),
                rtt_us: ns_to_us(c.rtt_ns),
                execute_us: ns_to_us(c.execute_ns),
            })
            .collect()
    }
}

impl NfsFs {
    /// The handles of `from` and `to` for an NFSv4.2 call `op`, or why the
    /// session cannot make it.
    fn v42_handles(&self, op: &str, from: &str, to: &str) -> Result<(nfs_fh3, nfs_fh3)> {
        if !self.client.has_v42() {
            return Err(BenchError::Unsupported(format!(
                "{op} is an NFSv4.2 operation and this client speaks NFSv{}",
                self.client.version()
            )));
        }
        let (src, _) = self.rt.block_on(self.client.lookup(from)).map_err(op_err("lookup", from))?;
        let (dst, _) = self.rt.block_on(self.client.lookup(to)).map_err(op_err("lookup", to))?;
        Ok((src, dst))
    }
}

/// NOTSUPP from the server (a file system that cannot reflink, a server
/// without COPY) is a missing feature, not a failure.
fn unsupported_or(op: &'static str, path: &str, e: client::Error) -> BenchError {
    if e.status() == Some(nfsstat3::NFS3ERR_NOTSUPP) {
        let status = match &e {
            client::Error::Nfs4 { status, .. } => format!("{status:?}"),
            other => other.to_string(),
        };
        let why = if op == "CLONE" { " (its file system cannot share blocks between files)" } else { "" };
        BenchError::Unsupported(format!("the server answers {op} with {status}{why}"))
    } else {
        BenchError::op(if op == "COPY" { "copy" } else { "clone" }, path, e)
    }
}

struct NfsFile {
    file: Option<client::File>,
    rt: Arc<Runtime>,
    path: String,
}

impl NfsFile {
    fn file(&mut self) -> &mut client::File {
        self.file.as_mut().expect("open until close")
    }
}

impl BenchFile for NfsFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let rt = self.rt.clone();
        rt.block_on(self.file().write(offset, data)).map_err(op_err("write", &self.path))
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let rt = self.rt.clone();
        rt.block_on(self.file().read(offset, buf)).map_err(op_err("read", &self.path))
    }

    fn flush(&mut self) -> Result<()> {
        let rt = self.rt.clone();
        rt.block_on(self.file().flush()).map_err(op_err("fsync", &self.path))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        let file = self.file.take().expect("open until close");
        self.rt.block_on(file.close()).map_err(op_err("close", &self.path))
    }

    fn lock_whole(&mut self, write: bool) -> Result<()> {
        let rt = self.rt.clone();
        let owner = lock_owner();
        rt.block_on(self.file().lock(owner, 0, u64::MAX, write, true)).map(drop).map_err(op_err("lock", &self.path))
    }

    fn unlock_whole(&mut self) -> Result<()> {
        let rt = self.rt.clone();
        rt.block_on(self.file().unlock(lock_owner(), 0, u64::MAX)).map_err(op_err("unlock", &self.path))
    }
}

/// The lock owner of the calling thread, as a process's POSIX locks are
/// its own (each workload thread plays a process).
fn lock_owner() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::thread::current().id().hash(&mut h);
    h.finish()
}

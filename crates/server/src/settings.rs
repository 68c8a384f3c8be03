//! Server settings: a TOML file (`--config`) whose every key has a default,
//! so `nfsx serve DIR` runs with none.  `docs/CONFIGURATION.md` lists them.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use server_core::CoreSettings;
use vfs::localfs::LocalFsSettings;
use vfs::MemFsSettings;

/// NFS's well-known port.
pub const NFS_PORT: u16 = 2049;
/// The portmapper's well-known port.
pub const PORTMAP_PORT: u16 = 111;

/// Everything the transport needs; protocol limits live in `core`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Address NFS, MOUNT and the portmapper answer on.
    pub listen: SocketAddr,
    /// Also answer the portmapper on this port when it is free and the
    /// process may bind it; 0 never. Unset: port 111 (what clients ask)
    /// when `listen` is on NFS's port 2049, and none otherwise, so that a
    /// server started on another port leaves 111 to rpcbind and its peers.
    pub portmap_port: Option<u16>,
    /// Prometheus text metrics on `http://ADDR/metrics`; unset disables.
    pub metrics: Option<SocketAddr>,
    /// Where the handle key and backend state live.
    pub state_dir: Option<PathBuf>,
    /// Largest RPC record accepted; a larger one closes the connection.
    /// Must exceed `core.wtmax` plus headers.
    pub max_record_size: usize,
    /// Requests decoded but not yet answered, per connection. When reached
    /// the connection stops reading, so a client that floods waits on TCP
    /// flow control instead of growing the server's memory.
    pub max_in_flight_per_connection: usize,
    /// Simultaneous client connections. A new one at the limit closes the
    /// connection that has been idle the longest (as knfsd does), so idle
    /// sockets never lock real clients out. Lowered at start when the
    /// process's file-descriptor limit cannot hold it beside the caches.
    pub max_connections: usize,
    /// Threads that run requests which may block (file system calls). A
    /// request beyond them waits for the first to finish.
    pub worker_threads: usize,
    /// After this many requests in a row that each found nothing else of
    /// their connection outstanding (a client with one request in flight),
    /// a request that may block runs on the connection's own thread (an
    /// NFSv4 compound only if it cannot wait for a callback reply, which
    /// an NFSv4.1 client sends over that same connection: see
    /// `server_core::placement`), which
    /// hands its other connections to another thread meanwhile (tokio's
    /// `block_in_place`), instead of going to a worker: no hand-off, two
    /// context switches fewer on the request's path. A request that finds
    /// another outstanding starts the count again, so a connection with
    /// many in flight keeps its requests running side by side. 0: always
    /// a worker.
    pub lone_requests_in_place_after: u32,
    /// Requests running in place at once, over all connections; beyond
    /// it they go to a worker. Each holds a thread of the runtime's
    /// blocking pool (`worker_threads` threads) while it runs, and the
    /// worker pool's rescue of a stalled queue (`worker_stall_ms`) does
    /// not reach it, so a backend that stops answering holds at most this
    /// many in place; the rest are answered from the worker pool.
    pub max_requests_in_place: usize,
    /// Of the requests running in place, how many at once run without
    /// `block_in_place`: NFSv3, and NFSv4 compounds that cannot wait for
    /// a callback's reply (they wait for nothing but the file system).
    /// Such a request keeps the runtime's core on its thread,
    /// which is then the one the client's next request wakes, and polls
    /// for it (`lone_poll_us`); meanwhile the tasks queued on that thread
    /// wait for the request (the runtime's other threads take the rest).
    /// 0: every request in place hands the thread's other connections
    /// away first.
    pub max_requests_in_place_direct: usize,
    /// After a request run on the connection's thread itself (not in
    /// place: see `serve`) of a connection that has had one request at a
    /// time for `lone_requests_in_place_after` requests, the thread polls the
    /// socket for the next request this long, in microseconds, before it
    /// sleeps: the client's next call then finds it awake, and neither
    /// side pays for waking the other's CPU (see `lone_poll`). 0 (or
    /// `lone_requests_in_place_after` 0): never poll.
    pub lone_poll_us: u64,
    /// A connection whose polls ran out this many times in a row (its
    /// client thinks between requests, or is idle) stops polling, until a
    /// request comes within `lone_poll_us` of the start of a wait, as a
    /// poll would have found it (see `lone_poll::Adaptive`). 0: never stop.
    pub lone_poll_max_quiet: u32,
    /// A connection whose next request has lately come more than this
    /// long after the reply (µs, a moving average of the waits) stops
    /// polling, until its requests come back faster: a poll that finds
    /// the request late costs the server more CPU than the wake-up it
    /// saves. 0: off (poll whenever `lone_poll_max_quiet` allows).
    pub lone_poll_worth_us: u64,
    /// Connection threads polling at once, over all connections; a lone
    /// connection finding them all busy sleeps at once. Keep it below the
    /// cores, or polling takes CPU that requests need.
    pub max_lone_pollers: usize,
    /// A worker thread idle this long exits (started again when needed).
    pub worker_idle_secs: u64,
    /// Requests queued this long behind busy workers mean the workers are
    /// stuck (a backend waiting on a cluster that stopped answering):
    /// spare threads then take the queue, so its requests get an answer.
    pub worker_stall_ms: u64,
    /// Threads allowed beyond `worker_threads` while the queue is stalled.
    pub worker_spare_threads: usize,
    /// An UNSTABLE WRITE to a file another worker is writing waits behind
    /// that one and runs next on its thread, instead of waking a thread of
    /// its own only to wait for the file's inode lock (see
    /// `server_core::placement::serial`). Stable writes stay side by side
    /// for group commit. false: every WRITE wakes a worker.
    pub serial_unstable_writes: bool,
    /// Bytes read from a socket per read call between records (a read
    /// inside a record takes at most the rest of its fragment).
    pub read_buffer_size: usize,
    /// glibc's `M_MMAP_THRESHOLD`: allocations this large or larger get
    /// their own `mmap`. Above the largest record's buffer, so receive
    /// buffers come from the heap and are reused (see `malloc`). 0:
    /// glibc's dynamic threshold.
    pub malloc_mmap_threshold: usize,
    /// glibc's `M_TRIM_THRESHOLD`: free memory at the top of a heap kept
    /// before it is given back to the kernel, so the next buffer is not
    /// faulted in and zeroed again. 0: glibc's dynamic threshold.
    pub malloc_trim_threshold: usize,
    /// How long SIGTERM waits for in-flight requests before exiting.
    pub shutdown_grace_ms: u64,
    /// A connection idle this long is closed (clients reconnect; NFSv4.1
    /// clients renew their lease well within it, so only connections
    /// without state go quiet this long). knfsd uses 6 minutes.
    pub idle_timeout_secs: u64,
    /// Bytes all connections together may hold in records still arriving.
    /// Past it, connections holding at least their share stop reading
    /// (TCP pushes back on their clients) and are closed if still stalled
    /// after `record_stall_secs`, so many clients that send most of a large
    /// record and stop cannot take the server's memory.
    pub max_partial_record_bytes: usize,
    /// How long a connection may wait for room under
    /// `max_partial_record_bytes` before it is closed.
    pub record_stall_secs: u64,
    /// Protocol limits (rtmax, wtmax, readdir sizes, ...).
    pub core: CoreSettings,
    /// The host-directory backend.
    pub localfs: LocalFsSettings,
    /// The in-memory backend (`--backend memory`).
    pub memfs: MemFsSettings,
    /// The CephFS backend (`--backend ceph`).
    pub ceph: vfs_ceph::CephSettings,
    /// Several heads over one Ceph cluster sharing NFSv4 client state.
    pub cluster: crate::cluster::ClusterSettings,
    /// RPC-with-TLS (RFC 9289): certificate, key, client authorities.
    pub tls: crate::tls::TlsSettings,
    /// Kerberos (RPCSEC_GSS): keytab, principal mapping, context limits.
    pub gss: crate::gss::GssSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            listen: SocketAddr::from(([0, 0, 0, 0], 2049)),
            portmap_port: None,
            metrics: None,
            state_dir: None,
            max_record_size: 4 << 20,
            max_in_flight_per_connection: 128,
            max_connections: 10240,
            worker_threads: 16,
            lone_requests_in_place_after: 8,
            max_requests_in_place: 8,
            max_requests_in_place_direct: 1,
            lone_poll_us: 50,
            lone_poll_max_quiet: 4,
            lone_poll_worth_us: 0,
            max_lone_pollers: 1,
            worker_idle_secs: 10,
            worker_stall_ms: 500,
            worker_spare_threads: 48,
            serial_unstable_writes: true,
            read_buffer_size: 256 << 10,
            malloc_mmap_threshold: 8 << 20,
            malloc_trim_threshold: 16 << 20,
            shutdown_grace_ms: 10_000,
            idle_timeout_secs: 360,
            max_partial_record_bytes: 256 << 20,
            record_stall_secs: 30,
            core: CoreSettings::default(),
            localfs: LocalFsSettings::default(),
            memfs: MemFsSettings::default(),
            ceph: vfs_ceph::CephSettings::default(),
            cluster: Default::default(),
            tls: Default::default(),
            gss: Default::default(),
        }
    }
}

/// A settings file that cannot be read or used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read settings file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid settings file {}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("max_record_size ({max_record_size}) must be at least wtmax + 4096 ({need})")]
    RecordTooSmall { max_record_size: usize, need: usize },
    #[error("max_in_flight_per_connection and worker_threads must be at least 1")]
    NoWorkers,
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
}

impl Settings {
    pub fn load(path: &std::path::Path) -> Result<Settings, SettingsError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| SettingsError::Read { path: path.to_path_buf(), source })?;
        let s: Settings =
            toml::from_str(&text).map_err(|source| SettingsError::Parse { path: path.to_path_buf(), source })?;
        s.validate()?;
        Ok(s)
    }

    /// The extra portmapper port in effect, if any (see `portmap_port`).
    pub fn portmap_port(&self) -> Option<u16> {
        match self.portmap_port {
            Some(0) => None,
            Some(p) => Some(p),
            None if self.listen.port() == NFS_PORT => Some(PORTMAP_PORT),
            None => None,
        }
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        let need = self.core.wtmax as usize + 4096;
        if self.max_record_size < need {
            return Err(SettingsError::RecordTooSmall { max_record_size: self.max_record_size, need });
        }
        if self.max_in_flight_per_connection == 0 || self.worker_threads == 0 {
            return Err(SettingsError::NoWorkers);
        }
        Ok(self.cluster.validate()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/nfsx.example.toml lists every key at its default; if a default
    /// changes or a key is added without documenting it, this fails.
    #[test]
    fn example_file_is_the_defaults() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/nfsx.example.toml");
        let loaded = Settings::load(&path).expect("example settings parse");
        assert_eq!(format!("{loaded:?}"), format!("{:?}", Settings::default()));
    }

    /// Port 111 is only taken by default when serving on 2049.
    #[test]
    fn portmapper_port_follows_the_listen_port() {
        let mut s = Settings::default();
        assert_eq!(s.portmap_port(), Some(111));
        s.listen = "127.0.0.1:20490".parse().unwrap();
        assert_eq!(s.portmap_port(), None, "another port leaves 111 alone");
        s.portmap_port = Some(111);
        assert_eq!(s.portmap_port(), Some(111), "unless asked");
        s.portmap_port = Some(0);
        s.listen = "0.0.0.0:2049".parse().unwrap();
        assert_eq!(s.portmap_port(), None, "0 never");
        let t: Settings = toml::from_str("portmap_port = 0").unwrap();
        assert_eq!(t.portmap_port(), None);
    }

    #[test]
    fn unknown_keys_and_bad_limits_are_errors() {
        assert!(toml::from_str::<Settings>("lisen = \"0.0.0.0:1\"").is_err());
        let s: Settings = toml::from_str("max_record_size = 1000").unwrap();
        assert!(matches!(s.validate(), Err(SettingsError::RecordTooSmall { max_record_size: 1000, .. })));
        let s: Settings = toml::from_str("worker_threads = 0").unwrap();
        assert!(matches!(s.validate(), Err(SettingsError::NoWorkers)));
    }
}

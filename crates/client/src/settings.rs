//! Every knob of the client, with its default. A TOML file with these keys
//! (all optional) configures `nfsx bench --client-config`.

use client_core::attrcache::AttrCacheSettings;
use client_core::readahead::{ReadCacheSettings, ReadaheadSettings};
use client_core::rpc::RpcSettings;
use client_core::v41::backoff::RetrySettings;
use client_core::writeback::WritebackSettings;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientSettings {
    /// Connections to the NFS service per client, calls spread round-robin
    /// (like the Linux `nconnect` mount option). Default 1.
    pub nconnect: usize,
    /// Largest READ, in bytes; the server's FSINFO rtmax caps it. Default 1 MiB.
    pub rsize: u32,
    /// Largest WRITE, in bytes; the server's FSINFO wtmax caps it. Default 1 MiB.
    pub wsize: u32,
    /// Bytes asked for per READDIRPLUS reply. Default 64 KiB.
    pub readdir_size: u32,
    /// Limit for one TCP connect, in ms. Default 5000.
    pub connect_timeout_ms: u64,
    /// How long a broken connection, or one found dead (no reply for a
    /// whole retransmit timeout, `rpc.timeout_ms`), is retried before its
    /// calls fail, in ms. Default 15000.
    pub reconnect_timeout_ms: u64,
    /// Longest pause between reconnect attempts (they start at 50 ms and
    /// double), in ms: how late a client may notice that a server (or a
    /// head taking over its address) is back. The same pauses come before
    /// dialling again after a connection that broke within a second of
    /// being made, so a server that drops every connection is not
    /// redialled in a loop. Default 500.
    pub reconnect_max_pause_ms: u64,
    /// AUTH_SYS identity; default the process's effective uid and gid.
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// AUTH_SYS machine name; default the host name.
    pub machine_name: Option<String>,
    /// Largest reply record accepted, in bytes. Default 4 MiB + 64 KiB.
    pub max_record: usize,
    /// Room made in the receive buffer for a read that starts between
    /// replies; a read inside a reply takes exactly its rest, and one after
    /// a large reply makes room for another as large. Default 256 KiB.
    pub read_buffer: usize,
    /// Replies shorter than this many bytes are copied out of the receive
    /// buffer; longer ones (READ data) are handed over as slices of it. A
    /// slice keeps the whole buffer alive while anything of its reply is
    /// (a handle in the name cache), so the next read would allocate a new
    /// `read_buffer` and fault its pages in: more than a short copy costs.
    /// Default 16 KiB.
    pub copy_replies_below: usize,
    /// While other calls wait on a connection, a reply fragment still
    /// lacking at least `reply_lowat_min` bytes makes the connection ask
    /// the kernel (`SO_RCVLOWAT`) not to wake its reader until the rest,
    /// at most `reply_lowat_max` bytes, has arrived: one wake-up per large
    /// reply instead of one per piece the loopback delivers (four 1 MiB
    /// READs in flight: 2.6 instead of 4.0-4.4 context switches per READ
    /// on the client, 1.11-1.23x the rate from nfsx and 1.03-1.14x from
    /// NFS-Ganesha; docs/BENCHMARKS.md, "rcvlowat"). With one call outstanding the
    /// reader takes a reply in as it arrives, which overlaps its copy with
    /// the sending. The mark is at most a quarter of the socket's receive
    /// buffer (`rcvlowat`). Plain TCP only. `reply_lowat_max = 0` turns it off.
    /// Defaults 64 KiB and 1 MiB.
    pub reply_lowat_min: usize,
    pub reply_lowat_max: usize,
    /// glibc's `M_MMAP_THRESHOLD`, set by `nfsx bench` and `nfsx mount` at
    /// start (a library user's process is left as it is): allocations this
    /// large get their own `mmap`. Above a 1 MiB READ reply's buffer, so
    /// those come from the heap and are reused; with glibc's own choice
    /// four 1 MiB READs in flight took about 45 page faults per READ
    /// (docs/BENCHMARKS.md, "never-zeroed"). 0: glibc's dynamic threshold.
    /// Default 8 MiB.
    pub malloc_mmap_threshold: usize,
    /// glibc's `M_TRIM_THRESHOLD`, set with the one above: free memory at
    /// the top of a heap kept rather than given back to the kernel at
    /// once. 0: glibc's dynamic threshold. Default 16 MiB.
    pub malloc_trim_threshold: usize,
    /// Threads of the async runtime `nfsx bench` runs the client on, whose
    /// callers are threads of their own, each waiting for its call. 0: one
    /// per connection to the NFS service (`nconnect`), at most one per
    /// core. A connection's work is one task; a second runtime thread for
    /// it only wakes to steal that task from the first, context switches
    /// that buy nothing. (`nfsx mount` runs every FUSE request as a task of
    /// its own and keeps a thread per core.) Default 0.
    pub runtime_threads: usize,
    /// A run of `nfsx bench` with a single thread calling its client runs
    /// that client on a current-thread runtime the caller drives itself:
    /// it sleeps in the poll of the socket its reply comes from, one
    /// wake-up per call instead of two (the runtime thread's, then the
    /// caller's). Runs with several callers keep `runtime_threads`. A
    /// thread of its own drives the runtime every 100 ms while the caller
    /// does not (lease renewal, callbacks, write-behind). Default true.
    pub drive_from_caller: bool,
    /// A caller that drives a current-thread runtime (`nfsx bench` with
    /// one calling thread, `drive_from_caller`) polls the socket for its
    /// reply for this long before the runtime sleeps in `epoll_wait`: a
    /// reply that comes within it costs the caller no wake-up from sleep,
    /// which on this project's 2-core VM was most of a small call's
    /// client-side time (4 KiB READs at one in flight: 2.7x the rate with
    /// nfsx, 1.6x with NFS-Ganesha). Paid as CPU of the caller's thread,
    /// at most this long per call, and only where that thread is the
    /// runtime's only one; runtimes with several threads never poll. The
    /// default covers both servers' small replies on loopback (Ganesha's
    /// rates stop rising at 500; at 50 only nfsx's did, which would favour
    /// the faster server). 0: sleep at once. Default 500.
    pub reply_poll_us: u64,
    /// Writes bypass the write-behind cache, as O_DIRECT writes do: each
    /// `write` is sent at once as UNSTABLE WRITEs of at most `wsize` and
    /// returns with their replies; fsync and close COMMIT them. For
    /// measuring a server's WRITE path rather than the client's cache
    /// (`nfsx bench --direct`). Default false.
    pub direct_writes: bool,
    pub rpc: RpcSettings,
    pub writeback: WritebackSettings,
    pub readahead: ReadaheadSettings,
    /// File data kept across opens, checked at each open (close-to-open)
    /// or trusted under an NFSv4.1 delegation.
    pub read_cache: ReadCacheSettings,
    pub attr_cache: AttrCacheSettings,
    pub v41: V41Settings,
    /// RPC-with-TLS (`?tls=1`): the authorities to trust, and the
    /// client's own certificate for mutual TLS.
    pub tls: crate::tls::TlsSettings,
    /// Kerberos (`?sec=krb5`, `krb5i`, `krb5p`): whose credential.
    pub gss: GssSettings,
    /// NFSv3 locking: the lock service servers call back when a blocked
    /// lock is granted (`callbacks`, `portmap`, `listen`, `repoll_secs`).
    pub nlm: crate::lockd::LockServiceSettings,
}

/// The Kerberos credential a mount uses (`[gss]`). Without a keytab the
/// caller's credential cache (`KRB5CCNAME`, else the default) holds it,
/// as after `kinit`; with one, the client gets its own tickets for
/// `principal` from the keytab and keeps them in memory.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GssSettings {
    /// A keytab holding the principal's key (a client keytab). Default:
    /// none, use the credential cache.
    pub keytab: Option<std::path::PathBuf>,
    /// The principal to act as, `user` or `user@REALM`; needed with a
    /// keytab.
    pub principal: Option<String>,
    /// A connection sets up a new context this many seconds before the
    /// one in use ends (its ticket's end; never in the first half of its
    /// lifetime), while calls go on under the old. Otherwise the first
    /// call after the end is refused (RPCSEC_GSS_CTXPROBLEM) and waits
    /// for a new context, and a credential that can no longer give one
    /// fails calls at that moment instead of a warning this long ahead.
    /// Default 300.
    pub renew_before_secs: u64,
}

impl Default for GssSettings {
    fn default() -> Self {
        GssSettings { keytab: None, principal: None, renew_before_secs: 300 }
    }
}

/// NFSv4.1 sessions (`?version=4.1`).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct V41Settings {
    /// Fore-channel slots asked for at CREATE_SESSION: requests the
    /// session may have in flight (the server may grant fewer, and lower
    /// or raise its target later). Default 64.
    pub slots: u32,
    /// Accept the delegations the server offers (false: every OPEN says
    /// it wants none, OPEN4_SHARE_ACCESS_WANT_NO_DELEG). Default true.
    pub delegations: bool,
    /// Use pNFS flexible-file layouts when the server offers them: READ,
    /// WRITE and COMMIT of open files go to the data servers the layouts
    /// name. Default true.
    pub pnfs: bool,
    /// A data server this client could not reach is not tried again for
    /// this long: files whose layouts name it do their I/O through the
    /// metadata server meanwhile (which hears of the failure, LAYOUTERROR,
    /// and names other data servers in new layouts). Default 30.
    pub pnfs_failed_device_secs: u64,
    /// At NFSv4.2, reads go as READ_PLUS (RFC 7862), as Linux clients
    /// mounting NFSv4.2 send them: a sparse file's holes cross the wire as
    /// (offset, length) pairs. Off, reads are READs. Default false.
    pub read_plus: bool,
    /// Ask for directory delegations (RFC 8881 section 10.9) where the
    /// server grants them: while one is held, listings, LOOKUPs and the
    /// children's GETATTRs of the directory are answered from what the
    /// client cached, which the server's CB_NOTIFYs keep true. Default true.
    pub dir_delegations: bool,
    /// A directory listed (or walked: a LOOKUP call in it) a second time
    /// within this many seconds of the first is asked a delegation for.
    /// Default 10.
    pub dir_delegation_window_secs: u64,
    /// A directory the server declined a delegation for is not asked
    /// again for this many seconds. Default 60.
    pub dir_delegation_declined_secs: u64,
    /// Directory delegations held at most. Default 4096.
    pub max_dir_delegations: usize,
    /// The delay asked for between notifications of one child's (or the
    /// directory's) attribute changes, in ms (`gdda_child_attr_delay`):
    /// a file being written is notified at most this often rather than
    /// at every WRITE. Default 100.
    pub dir_notify_attr_delay_ms: u64,
    /// Waits between retries of a request the server asked to delay.
    pub retry: RetrySettings,
}

impl Default for V41Settings {
    fn default() -> Self {
        V41Settings {
            slots: 64,
            delegations: true,
            pnfs: true,
            pnfs_failed_device_secs: 30,
            read_plus: false,
            dir_delegations: true,
            dir_delegation_window_secs: 10,
            dir_delegation_declined_secs: 60,
            max_dir_delegations: 4096,
            dir_notify_attr_delay_ms: 100,
            retry: RetrySettings::default(),
        }
    }
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            nconnect: 1,
            rsize: 1 << 20,
            wsize: 1 << 20,
            readdir_size: 64 << 10,
            connect_timeout_ms: 5000,
            reconnect_timeout_ms: 15_000,
            reconnect_max_pause_ms: 500,
            uid: None,
            gid: None,
            machine_name: None,
            max_record: (4 << 20) + (64 << 10),
            read_buffer: 256 << 10,
            copy_replies_below: 16 << 10,
            reply_lowat_min: 64 << 10,
            reply_lowat_max: 1 << 20,
            malloc_mmap_threshold: 8 << 20,
            malloc_trim_threshold: 16 << 20,
            runtime_threads: 0,
            drive_from_caller: true,
            reply_poll_us: 500,
            direct_writes: false,
            rpc: RpcSettings::default(),
            writeback: WritebackSettings::default(),
            readahead: ReadaheadSettings::default(),
            read_cache: ReadCacheSettings::default(),
            attr_cache: AttrCacheSettings::default(),
            v41: V41Settings::default(),
            tls: Default::default(),
            gss: Default::default(),
            nlm: Default::default(),
        }
    }
}

impl ClientSettings {
    /// The runtime's thread count `runtime_threads` asks for.
    pub fn runtime_threads(&self) -> usize {
        match self.runtime_threads {
            0 => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                self.nconnect.clamp(1, cores)
            }
            n => n,
        }
    }

    pub fn from_toml(text: &str) -> Result<ClientSettings, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// The settings a TOML file gives, or the defaults without one; an
    /// error names the file.
    pub fn from_file(path: Option<&std::path::Path>) -> Result<ClientSettings, String> {
        let Some(p) = path else {
            return Ok(ClientSettings::default());
        };
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        ClientSettings::from_toml(&text).map_err(|e| format!("{}: {e}", p.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/client.example.toml lists every key at its default; if a default
    /// changes, the example (and docs/CONFIGURATION.md) must change with it.
    #[test]
    fn example_file_is_the_defaults() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/client.example.toml");
        let loaded = ClientSettings::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(format!("{loaded:?}"), format!("{:?}", ClientSettings::default()));
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(ClientSettings::from_toml("nconect = 2").unwrap_err().contains("nconect"));
    }
}

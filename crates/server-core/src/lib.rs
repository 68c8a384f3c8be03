//! Sans-IO NFS server core: one RPC record in, one reply record out.
//!
//! The transport (crates/server) frames records, asks [`Core::placement`]
//! where each should run (on the connection's own thread when it touches no
//! disk, on a worker otherwise), calls [`Core::handle`] (or
//! [`Core::try_handle_inline`]) and writes back the returned segments and
//! file tail; everything that
//! makes up the protocol — RPC header and authentication, portmap/rpcbind,
//! MOUNT v3, NFSv3, export rules and file handles — lives here, with no
//! sockets, runtime or clock, so it is tested by feeding it records.
#![forbid(unsafe_code)]

pub mod auth;
pub mod clock;
mod cluster;
pub mod devices;
mod dir_notify;
mod drc;
pub mod exports;
pub mod fh;
pub mod gss;
mod jobs;
mod mount;
mod nlm;
mod ops;
pub mod outbound;
mod park;
mod placement;
mod portmap;
mod record;
mod rpc;
mod settings;
mod share_gate;
mod shared_delegs;
mod shared_locks;
mod shared_shares;
pub mod state;

pub use clock::{Clock, ManualClock};
pub use exports::{ClientMatcher, ClientRule, ExportOptions};
pub use gss::{GssCaller, GssLimits};
pub use jobs::{Jobs, NoJobs};
pub use nlm::settings::NlmSettings;
pub use ops::v4::attrs::idmap::{use_name_source, NameSource};
pub use outbound::{NoOutbound, OutCall, OutReply, Outbound};
pub use park::{Parked, WaitId};
pub use placement::Placement;
pub use portmap::uaddr;
pub use record::Record;
pub use rpc::{starttls_reply, tls_probe_xid, Auth, AUTH_TLS};
pub use settings::{CoreSettings, NfsVersion};
pub use state::nsm_hosts::NsmHost;
pub use state::{Backchannel, MemStore, NoBackchannel, StableStore};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How the connection a record came on is protected (RPC-with-TLS,
/// RFC 9289); exports may require a level (`xprtsec=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TransportSecurity {
    /// Clear text.
    #[default]
    Clear,
    /// TLS; the client presented no certificate.
    Tls,
    /// TLS with a client certificate the server verified (mutual TLS);
    /// `identity` names it (its first DNS or IP subject alternative name,
    /// else its subject), for logs.
    Mtls { identity: String },
}

/// Who sent a record, as the transport knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The client's address and source port (`secure` checks the port).
    pub addr: SocketAddr,
    /// Our address the client connected to (rpcbind GETADDR replies with it).
    pub local: SocketAddr,
    /// Reverse-resolved client name, if the transport looked it up; host
    /// name rules in exports only match through it.
    pub hostname: Option<String>,
    /// The transport's number for the connection the record arrived on
    /// (0 when there is none): NFSv4.1 binds sessions' back channels to
    /// connections by it.
    pub conn: u64,
    pub tls: TransportSecurity,
}

/// Ports reported by portmap GETPORT / rpcbind GETADDR for every service
/// (NFS, MOUNT and portmap itself are served on the same port).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServicePorts {
    pub tcp: u16,
    pub udp: Option<u16>,
}

/// One exported tree.
#[derive(Clone)]
pub struct Export {
    /// Goes into every file handle; must stay the same across restarts for
    /// handles to survive them, and be unique among exports.
    pub id: u32,
    /// The path clients mount (e.g. the absolute host path).
    pub path: String,
    pub fs: Arc<dyn vfs::Vfs>,
    /// Client rules in order; the first that matches a peer applies.
    pub rules: Vec<ClientRule>,
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export").field("id", &self.id).field("path", &self.path).field("rules", &self.rules).finish()
    }
}

/// The result of one record.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The reply record (without record marking) as segments for a
    /// vectored write; `None` when nothing must be sent (the record was a
    /// reply, not an RPC message at all, or a retransmission of a call
    /// still running).
    pub reply: Option<Vec<bytes::Bytes>>,
    /// What was called, for metrics and logs: "nfs3.READ", "mount3.MNT",
    /// "portmap.GETPORT", "rpc.garbage", ...
    pub label: &'static str,
    /// The call was accepted and the procedure reported success.
    pub ok: bool,
    /// File bytes that follow `reply` on the wire (then zero padding to a
    /// multiple of four), for a transport that sends them from the page
    /// cache: a READ's data. Only set when the transport said it can
    /// ([`Core::with_sendfile`]); the record's length counts them.
    pub tail: Option<vfs::FileRegion>,
    /// The call waits for an event before it can be answered (`reply` is
    /// then `None`): the transport keeps it and runs it on with
    /// [`Core::resume`] when one of [`Outcome::woken`] names it or its
    /// [`Parked::timeout`] has passed, whichever comes first.
    pub parked: Option<Box<Parked>>,
    /// Parked calls this record gave what they waited for (a client's
    /// answer to a callback): resume them.
    pub woken: Vec<WaitId>,
}

/// The server's protocol state, shared by all connections.
pub struct Core {
    settings: CoreSettings,
    exports: Vec<Export>,
    fh: fh::FhCodec,
    /// WRITE/COMMIT verifier; replaced when unstable data may have been lost.
    write_verifier: AtomicU64,
    ports: ServicePorts,
    /// Programs on this host registered with portmap SET.
    pub(crate) portmap_regs: portmap::registry::Registry,
    mounts: parking_lot::Mutex<mount::MountList>,
    warn_counts: [AtomicU64; WarnKind::COUNT],
    /// Replies to recent non-idempotent NFSv3 / NFSv4.0 calls, for
    /// retransmissions.
    drc: drc::Drc,
    /// NFSv4 state: clients, sessions, opens, locks, delegations.
    pub(crate) v4: Arc<state::State4>,
    /// The NFSv4 pseudo file system joining the exports.
    pub(crate) pseudo: ops::v4::pseudo::PseudoFs,
    /// The transport sends [`Outcome::tail`] regions (sendfile).
    sendfile: bool,
    /// Some export's file system is shared with other servers, whose
    /// locks live in it too (`shared_locks`).
    shared_locks: bool,
    /// Where locks and share reservations to release in the shared store
    /// go (`shared_locks`), started with the first.
    releaser: std::sync::OnceLock<parking_lot::Mutex<std::sync::mpsc::Sender<Vec<shared_locks::Release>>>>,
    /// pNFS data servers clients reported failing.
    pub(crate) devices: devices::DeviceHealth,
    /// Whether share modes are held in the shared store yet.
    pub(crate) share_store: shared_shares::ShareStore,
    pub(crate) shared_delegs: shared_delegs::SharedDelegs,
    /// Records whose header was read ([`Core::parse`]).
    records_parsed: std::sync::atomic::AtomicU64,
    /// Where background work runs ([`Core::with_jobs`]).
    pub(crate) jobs: Arc<dyn Jobs>,
    /// RPCSEC_GSS contexts ([`Core::with_gss`]).
    pub(crate) gss: gss::GssState,
    /// NLM's calls to clients' lock managers ([`Core::with_outbound`]).
    pub(crate) nlm: nlm::calls::NlmCalls,
    /// Some export rule admits other flavors than AUTH_SYS: NFSv4
    /// compounds check each handle against the call's flavor
    /// (`ops::v4::wrongsec`). Without one, every call is AUTH_SYS or
    /// refused before it runs, and the checks are skipped.
    pub(crate) sec_restricted: bool,
}

/// Kinds of client misbehaviour whose warnings are rate-limited separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WarnKind {
    /// Undecodable records, unknown programs/procedures, bad arguments.
    Garbage = 0,
    /// Rejected credentials.
    Auth = 1,
    /// Clients not allowed by the export rules, insecure ports.
    Access = 2,
    /// Forged or malformed file handles.
    Handle = 3,
}

impl WarnKind {
    const COUNT: usize = 4;
}

/// Why a peer may not use an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denied {
    NoRule,
    InsecurePort,
    /// The export's `xprtsec=` does not admit the connection's protection.
    TransportSecurity,
}

impl Core {
    pub fn new(
        settings: CoreSettings,
        exports: Vec<Export>,
        handle_secret: [u8; 32],
        write_verifier: [u8; 8],
        ports: ServicePorts,
    ) -> Core {
        let mut kept: Vec<Export> = Vec::with_capacity(exports.len());
        for mut x in exports {
            match exports::normalize_path(&x.path) {
                Some(p) => x.path = p,
                None => {
                    tracing::error!(path = %x.path, "export path is not absolute and normalised; mount by path will not find it")
                }
            }
            if kept.iter().any(|k| k.id == x.id) {
                tracing::error!(id = x.id, path = %x.path, "duplicate export id; export ignored");
                continue;
            }
            kept.push(x);
        }
        let mut settings = settings.sanitized();
        let shared_locks = kept.iter().any(|x| x.fs.shared_store().is_some());
        let sec_restricted = kept.iter().flat_map(|x| &x.rules).any(|r| r.options.sec != [rpcsec::Flavor::Sys]);
        // A courtesy client's opens and locks stay in the shared store,
        // where a client of another server would meet them with no way to
        // have them expired: on such a server a lease that runs out ends
        // its client's state.
        if shared_locks && settings.nfs4.courtesy_secs > 0 {
            tracing::info!("no courtesy time for expired NFSv4 clients: other servers share an export");
            settings.nfs4.courtesy_secs = 0;
        }
        // No clock, back channel or stable store until the embedding
        // server gives its own (`with_nfs4_env`).
        let v4 = Arc::new(state::State4::new(
            settings.nfs4.clone(),
            Arc::new(ManualClock::default()),
            Arc::new(NoBackchannel),
            Arc::new(MemStore::default()),
        ));
        let pseudo = ops::v4::pseudo::PseudoFs::build(&kept);
        v4.track_released_locks(shared_locks);
        let settings_gss = settings.gss.clone();
        let nlm = nlm::calls::NlmCalls::new(Arc::new(NoOutbound), settings.nlm.clone(), 1);
        let drc = drc::Drc::new(
            settings.drc_entries,
            settings.drc_max_reply_bytes,
            std::time::Duration::from_secs(settings.drc_secs.into()),
        );
        Core {
            drc,
            settings,
            v4,
            pseudo,
            exports: kept,
            fh: fh::FhCodec::new(handle_secret),
            write_verifier: AtomicU64::new(u64::from_be_bytes(write_verifier)),
            ports,
            portmap_regs: Default::default(),
            mounts: parking_lot::Mutex::new(mount::MountList::default()),
            warn_counts: Default::default(),
            sendfile: false,
            shared_locks,
            releaser: Default::default(),
            devices: Default::default(),
            share_store: Default::default(),
            shared_delegs: Default::default(),
            records_parsed: Default::default(),
            jobs: Arc::new(NoJobs),
            nlm,
            sec_restricted,
            gss: gss::GssState::new(
                settings_gss,
                u32::from_be_bytes([write_verifier[4], write_verifier[5], write_verifier[6], write_verifier[7]]),
            ),
        }
    }

    /// Says that the transport sends file regions ([`Outcome::tail`]):
    /// READs of at least `read_sendfile_min` bytes then hand back the
    /// file instead of its bytes.
    pub fn with_sendfile(mut self) -> Core {
        self.sendfile = true;
        self
    }

    /// Whether a READ of `count` bytes should go out as a file region.
    pub(crate) fn sends_file(&self, count: u32, call: &rpc::Call) -> bool {
        self.sendfile
            && self.settings.read_sendfile_min > 0
            && count >= self.settings.read_sendfile_min
            && !call.auth.seals_results()
    }

    /// Gives the core a place to run its background jobs (see [`Jobs`]);
    /// without one, none runs. Call before serving.
    pub fn with_jobs(mut self, jobs: Arc<dyn Jobs>) -> Core {
        self.jobs = jobs;
        self
    }

    /// Replaces the NFSv4 environment: the clock leases run on, the back
    /// channel callbacks go out on, and the store client records persist
    /// in (whose contents start a grace period). Call before serving.
    pub fn with_nfs4_env(
        mut self,
        clock: Arc<dyn Clock>,
        backchannel: Arc<dyn Backchannel>,
        store: Arc<dyn StableStore>,
    ) -> Core {
        self.portmap_regs.restore(&store.local_registrations());
        self.v4 = Arc::new(state::State4::new(self.settings.nfs4.clone(), clock, backchannel, store));
        self.v4.track_released_locks(self.shared_locks);
        self
    }

    /// How many times the lock over the NFSv4 state's tables (clients,
    /// owners, callbacks, layouts) was taken: what a request shares with
    /// every other client's.
    pub fn nfs4_state_locked(&self) -> u64 {
        self.v4.tables_locked()
    }

    /// How many times a shard of the state of files (their NFSv4 stateids,
    /// their NFSv4 and NLM byte-range locks) was locked: what a request
    /// shares only with requests on files of the same shard.
    pub fn nfs4_file_shards_locked(&self) -> u64 {
        self.v4.shards_locked()
    }

    /// How many times a client's NFSv4 owners and stateids were locked:
    /// what a request shares only with requests of the same client.
    pub fn nfs4_clients_locked(&self) -> u64 {
        self.v4.clients_locked()
    }

    pub fn settings(&self) -> &CoreSettings {
        &self.settings
    }

    pub fn exports(&self) -> &[Export] {
        &self.exports
    }

    /// Each pNFS data server's reported errors and whether it is held out
    /// of new layouts (empty without `pnfs_data_servers`).
    pub fn pnfs_devices(&self) -> Vec<devices::DeviceReport> {
        self.devices.reports(self.settings.pnfs_data_servers.len(), self.v4.now())
    }

    /// The verifier WRITE and COMMIT currently return.
    pub fn write_verifier(&self) -> [u8; 8] {
        self.write_verifier.load(Ordering::Acquire).to_be_bytes()
    }

    /// Replaces the write verifier so that clients resend unstable writes
    /// whose data may be lost (called on a failed COMMIT). `old` guards
    /// against two concurrent failures advancing it twice for one loss.
    pub(crate) fn change_write_verifier(&self, old: [u8; 8]) {
        let old = u64::from_be_bytes(old);
        let _ = self.write_verifier.compare_exchange(old, old.wrapping_add(1), Ordering::AcqRel, Ordering::Acquire);
    }

    pub(crate) fn export_by_id(&self, id: u32) -> Option<&Export> {
        self.exports.iter().find(|x| x.id == id)
    }

    /// Logs a client-misbehaviour warning unless this kind is flooding:
    /// the first `warn_burst` are logged, then one in `warn_sample_every`.
    #[allow(unknown_lints, clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87
    pub(crate) fn warn(&self, kind: WarnKind, log: impl FnOnce()) {
        let n = self.warn_counts[kind as usize].fetch_add(1, Ordering::Relaxed);
        let s = &self.settings;
        if n < s.warn_burst || (n - s.warn_burst) % s.warn_sample_every == 0 {
            log();
        }
    }

    /// The export rule that applies to `peer`, checking the `secure`
    /// option against its source port.
    pub(crate) fn rule_for<'a>(
        &self,
        export: &'a Export,
        peer: &PeerInfo,
        what: &str,
    ) -> Result<&'a ClientRule, Denied> {
        let Some(rule) = exports::match_rule(&export.rules, peer) else {
            self.warn(WarnKind::Access, || {
                tracing::warn!(peer = %peer.addr, host = ?peer.hostname, export = %export.path, "{what} refused: client matches no export rule")
            });
            return Err(Denied::NoRule);
        };
        if rule.options.secure && peer.addr.port() >= 1024 {
            self.warn(WarnKind::Access, || {
                tracing::warn!(peer = %peer.addr, export = %export.path, rule = %rule.pattern,
                    "{what} refused: source port is not below 1024 and the export is `secure` (add `insecure` to allow)")
            });
            return Err(Denied::InsecurePort);
        }
        if !rule.options.xprtsec.admits(&peer.tls) {
            self.warn(WarnKind::Access, || {
                tracing::warn!(peer = %peer.addr, export = %export.path, rule = %rule.pattern, transport = ?peer.tls,
                    "{what} refused: the export's xprtsec= does not allow this connection's transport security")
            });
            return Err(Denied::TransportSecurity);
        }
        Ok(rule)
    }
}

// The transport shares one Core between worker threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Core>();
};

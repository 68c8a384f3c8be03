//! NFSv4.1 (RFC 8881) under the same file API as NFSv3: a session with a
//! slot table, every request a COMPOUND behind a SEQUENCE, a back channel
//! on the same connection, opens and delegations, and recovery when the
//! session or the server's state is lost.
//!
//! The calls in `ops.rs` answer in the client's own types (`Fattr`, the
//! structures of `crate::results`), as NFSv3's calls do, so the caches,
//! the mount and the benchmarks above them do not care which version is
//! on the wire; the NFSv4 work (stateids, opens, the lease) stays here.

mod callback;
mod cbsec;
mod compound;
mod dirdeleg;
#[doc(hidden)]
pub mod fuzzing;
mod locks;
mod oneshot;
mod opens;
mod ops;
mod pnfs;
mod reply;
mod secinfo;
mod session;
mod v42;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};

use bytes::Bytes;
use client_core::v41::backoff::RetrySettings;
use client_core::v41::delegations::Delegations;
use client_core::v41::slots::SlotTable;
use parking_lot::Mutex;
use proto::nfs4::{clientid4, sessionid4};
use tokio::sync::Notify;

use crate::transport::Connection;

pub use dirdeleg::{DirHooks, CACHED_FIRST_COOKIE, CACHED_VERF};
pub use locks::LockConflict;
pub use opens::OpenAccess;
pub use v42::Copied;

/// What a recall must do before the delegation goes back: write back what
/// the client cached for the file (the file API installs it).
pub type FlushHook = Arc<dyn Fn(Bytes) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The session in use and how to make another.
#[derive(Debug, Clone)]
pub(crate) struct SessionState {
    pub clientid: clientid4,
    pub sessionid: sessionid4,
    /// The CREATE_SESSION sequence id the next session of this client
    /// id uses (RFC 8881 section 18.36.4).
    pub create_seq: u32,
    /// Lease time in seconds.
    pub lease: u32,
    /// Bumped with every new session, so callers that saw one fail know
    /// whether someone else already replaced it.
    pub generation: u64,
}

pub struct Nfs41 {
    pub(crate) conn: Connection,
    /// The NFSv4 minor version every compound carries (1 or 2), the one
    /// the client id was made with.
    pub(crate) minor: u32,
    /// This client's name for EXCHANGE_ID: stable for the client's life,
    /// so a server that restarted knows whose opens are being reclaimed.
    pub(crate) owner: Bytes,
    /// Differs between runs of the client (RFC 8881 section 2.4).
    pub(crate) verifier: [u8; 8],
    pub(crate) retry: RetrySettings,
    pub(crate) slots_wanted: u32,
    /// Whether OPENs accept delegations (`[v41] delegations`).
    pub(crate) want_delegations: bool,
    /// Whether reads at minor version 2 go as READ_PLUS (`[v41] read_plus`).
    pub(crate) read_plus: bool,
    pub(crate) session: Mutex<SessionState>,
    pub(crate) slots: Mutex<SlotTable>,
    pub(crate) slot_freed: Notify,
    /// Serialises recovery: one caller re-establishes, the rest wait.
    pub(crate) recovering: tokio::sync::Mutex<()>,
    pub(crate) opens: Mutex<HashMap<Bytes, opens::OpenState>>,
    pub(crate) delegations: Mutex<Delegations<Bytes>>,
    /// Stateids replaced by a recovery (old `other` → the new stateid),
    /// for requests that were built before it and are sent again.
    pub(crate) remapped: Mutex<HashMap<[u8; 12], proto::nfs4::stateid4>>,
    /// Files whose open a recovery could not reclaim (the lease ran out,
    /// or the server's grace period was over): I/O through that open
    /// fails (RFC 8881 section 8.4.3) until the file is opened again,
    /// rather than going on under the anonymous stateid over what other
    /// clients wrote meanwhile.
    pub(crate) lost: Mutex<std::collections::HashSet<Bytes>>,
    /// Lock stateids by (file, lock owner).
    pub(crate) locks: Mutex<HashMap<(Bytes, u64), proto::nfs4::stateid4>>,
    /// Locks taken on this client alone under a write delegation (RFC
    /// 8881 section 10.4.2), taken at the server when it goes back.
    pub(crate) local_locks: Mutex<client_core::v41::locallocks::LocalLocks<Bytes>>,
    /// Lock operations on a file, one at a time per shard of files: a
    /// recall taking the local locks to the server must not interleave
    /// with an owner unlocking or locking the same file meanwhile.
    pub(crate) lock_gates: Vec<tokio::sync::Mutex<()>>,
    pub(crate) flush_hook: OnceLock<FlushHook>,
    /// The export's root handle, from PUTROOTFH + LOOKUPs at mount.
    pub(crate) root: Mutex<Bytes>,
    /// Background COPYs waited for, and CB_OFFLOADs that came first.
    pub(crate) offloads: Mutex<v42::Offloads>,
    /// The contexts callbacks may come under (RPCSEC_GSS).
    pub(crate) cb_sec: cbsec::CbSecurity,
    pub(crate) me: Weak<Nfs41>,
    pub(crate) counters: Mutex<Counters>,
    /// Layouts and data servers, when the server is a pNFS metadata server
    /// and `[v41] pnfs` is on.
    pub(crate) pnfs: Option<pnfs::Pnfs>,
    /// Whether directories are asked delegations for (`[v41] dir_delegations`).
    pub(crate) want_dir_delegations: bool,
    /// The server does not know GET_DIR_DELEGATION: not asked again.
    pub(crate) dir_delegations_refused: std::sync::atomic::AtomicBool,
    /// `[v41] dir_notify_attr_delay_ms`.
    pub(crate) dir_notify_delay_ms: u64,
    pub(crate) dir_delegs: Mutex<client_core::v41::dirdelegs::DirDelegations>,
    pub(crate) dir_hooks: OnceLock<DirHooks>,
    /// Since the session began, for the times directory listings are
    /// compared at.
    pub(crate) clock: tokio::time::Instant,
    /// The SEQUENCE status flags about lost callbacks and revoked state
    /// the last reply had, to act on their rise.
    pub(crate) seen_status_flags: std::sync::atomic::AtomicU32,
}

/// What the v4.1 layer did besides the calls the stats count.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub recalls: u64,
    pub delegations_granted: u64,
    pub delay_retries: u64,
    pub sessions_created: u64,
    pub reclaims: u64,
    /// Opens served under a delegation without a call.
    pub local_opens: u64,
    /// Locks taken (or found in the way) under a write delegation without a call.
    pub local_locks: u64,
    /// READs and WRITEs sent to a pNFS data server instead of the server.
    pub ds_reads: u64,
    pub ds_writes: u64,
    pub dir_delegations_granted: u64,
    /// CB_NOTIFYs applied to a delegated directory's cache.
    pub dir_notifications: u64,
    /// Listings, LOOKUPs and GETATTRs answered from a delegated
    /// directory's cache, where a call would have been made otherwise.
    pub dir_calls_saved: u64,
}

impl Nfs41 {
    /// The handle of the export's root.
    pub fn root(&self) -> Bytes {
        self.root.lock().clone()
    }

    /// Installs what a recall runs before DELEGRETURN.
    pub fn set_flush_hook(&self, hook: FlushHook) {
        let _ = self.flush_hook.set(hook);
    }

    /// The calls made, on the session's connection and, with pNFS, on
    /// the connections to data servers (their NFSv3 READs and WRITEs).
    pub fn stats(&self) -> client_core::stats::Stats {
        let mut s = self.conn.stats();
        for d in self.data_server_stats() {
            s.merge(&d);
        }
        s
    }

    pub fn counters(&self) -> Counters {
        self.counters.lock().clone()
    }

    /// Delegations held now.
    pub fn delegations_held(&self) -> usize {
        self.delegations.lock().len()
    }

    fn arc(&self) -> Option<Arc<Nfs41>> {
        self.me.upgrade()
    }
}

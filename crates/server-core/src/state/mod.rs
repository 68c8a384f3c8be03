//! NFSv4 server state (RFC 8881 sections 2.10, 8, 9, 10): clients,
//! sessions, stateids, share reservations, byte-range locks, delegations,
//! leases and the grace period. Four kinds of lock keep it:
//! - each session under a lock of its own, beside its client's lease
//!   ([`lease::Lease`]), so that SEQUENCE touches only its session;
//! - each client's owners and stateid indexes under a lock of its own
//!   ([`stateids::Stateids`]);
//! - the stateids and byte-range locks of files in shards by file
//!   ([`shards`]), so that the stateid check of READ and WRITE and NLM's
//!   locks take only the file's shard, and an NFSv4.1 client's OPEN,
//!   CLOSE, DELEGRETURN, LOCK, LOCKU and LOCKT only its client's part and
//!   the file's shard;
//! - the other tables (client records, callbacks, grace, layouts,
//!   copies) behind one mutex, taken by operations that need them
//!   (NFSv4.0's seqid-carrying operations, client and session management,
//!   and an NFSv4.1 request that meets another client's state: a
//!   delegation to recall, a conflict with a client whose lease may have
//!   run out, a grace period, a file other servers share), held for table
//!   updates only, never across backend I/O.
//!
//! The order is tables, then one client, then one file's shard; a thread
//! holds at most one client and one shard (checked).
//!
//! Only this module sees the tables and their locks: the operations go
//! through the methods of [`State4`] in `api/`, which say in the
//! protocol's terms what they need, so that how the tables are kept and
//! locked can change behind them.

pub mod settings;

mod api;
pub(crate) mod callback;
pub(crate) mod cb_sec;
pub(crate) mod clients;
pub(crate) mod delegations;
pub mod dir_delegs;
pub(crate) mod grace;
pub(crate) mod layouts;
pub(crate) mod lease;
pub(crate) mod lockmgr;
pub(crate) mod nlm_shares;
pub mod nsm_hosts;
pub(crate) mod offload;
pub(crate) mod opens;
pub(crate) mod sessions;
pub(crate) mod shards;
pub(crate) mod stateids;
pub(crate) mod unlinked;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::sessionid4;

use crate::clock::Clock;
pub(crate) use api::dir_delegations::{Decline, Unwatch};
pub(crate) use api::{Answer, LockRange, Locker, OpenRequest, OpenStep, OpenStore, Wait};
pub use settings::{DelegationPolicy, Nfs4Settings, OwnerFormat};

/// A file as state is kept for it: (export id, file id, generation). The
/// generation keeps a new file that reuses a removed one's id (inode
/// numbers are recycled) from inheriting opens, locks and delegations
/// still held on the removed one.
pub(crate) type FileKey = (u32, u64, u64);

/// Sends records to a client over a connection it opened to us (the
/// NFSv4.1 back channel). Implemented by the transport.
pub trait Backchannel: Send + Sync + 'static {
    /// Queues `record` (without record marking) on connection `conn`;
    /// false if that connection is gone or its queue is full.
    fn send(&self, conn: u64, record: Vec<Bytes>) -> bool;
}

/// No connections to send on (tests of the sans-IO core, fuzzing).
#[derive(Debug, Default)]
pub struct NoBackchannel;

impl Backchannel for NoBackchannel {
    fn send(&self, _conn: u64, _record: Vec<Bytes>) -> bool {
        false
    }
}

/// Durable records of the clients that hold state, so that after a
/// restart they (and only they) may reclaim it during the grace period.
/// Implemented by the transport over the state directory.
pub trait StableStore: Send + Sync + 'static {
    /// Every record present when the server started.
    fn load(&self) -> Vec<Vec<u8>>;
    /// Adds `record` durably (synced before returning).
    fn insert(&self, record: &[u8]);
    fn remove(&self, record: &[u8]);
    /// The number this server instance stamps client ids, session ids and
    /// stateids with, so that those of any other instance are told apart:
    /// an earlier process of this server, or in a cluster another head (a
    /// client that moves to another head must find its ids unknown there,
    /// not another client's). Given the wall-clock seconds; by default
    /// they are the number.
    fn instance(&self, wall_secs: u32) -> u32 {
        wall_secs
    }
    /// This run's NSM state number, odd and larger than that of any run
    /// before (the store counts starts durably); None: a store that does
    /// not count, whose server takes its boot number instead.
    fn nsm_state(&self) -> Option<i32> {
        None
    }
    /// The NFSv3 hosts monitored when the server started
    /// ([`nsm_hosts`]); a store without them forgets them at restart.
    fn nsm_hosts(&self) -> Vec<nsm_hosts::NsmHost> {
        Vec::new()
    }
    /// Adds or updates `host` durably (synced before returning).
    fn nsm_monitor(&self, _host: &nsm_hosts::NsmHost) {}
    fn nsm_unmonitor(&self, _name: &[u8]) {}
    /// Registrations made with the built-in portmapper by lock clients on
    /// this host (one line each, the portmapper's format), as saved.
    fn local_registrations(&self) -> Vec<String> {
        Vec::new()
    }
    /// Replaces them durably.
    fn save_local_registrations(&self, _lines: Vec<String>) {}
}

/// A store that forgets everything when the process ends: a state made
/// again on it (a restart within the process, as tests make) finds what
/// the one before kept, and counts as a new start for NSM.
#[derive(Debug, Default)]
pub struct MemStore {
    records: parking_lot::Mutex<Vec<Vec<u8>>>,
    /// The last NSM state handed out, and the monitored hosts.
    nsm: parking_lot::Mutex<(i32, Vec<nsm_hosts::NsmHost>)>,
    registrations: parking_lot::Mutex<Vec<String>>,
}

impl StableStore for MemStore {
    fn load(&self) -> Vec<Vec<u8>> {
        self.records.lock().clone()
    }
    fn insert(&self, record: &[u8]) {
        let mut r = self.records.lock();
        if !r.iter().any(|x| x == record) {
            r.push(record.to_vec());
        }
    }
    fn remove(&self, record: &[u8]) {
        self.records.lock().retain(|x| x != record);
    }
    fn nsm_state(&self) -> Option<i32> {
        let mut n = self.nsm.lock();
        n.0 = if n.0 <= 0 { 1 } else { n.0 + 2 };
        Some(n.0)
    }
    fn nsm_hosts(&self) -> Vec<nsm_hosts::NsmHost> {
        self.nsm.lock().1.clone()
    }
    fn nsm_monitor(&self, host: &nsm_hosts::NsmHost) {
        let mut n = self.nsm.lock();
        n.1.retain(|h| h.name != host.name);
        n.1.push(host.clone());
    }
    fn nsm_unmonitor(&self, name: &[u8]) {
        self.nsm.lock().1.retain(|h| h.name[..] != *name);
    }
    fn local_registrations(&self) -> Vec<String> {
        self.registrations.lock().clone()
    }
    fn save_local_registrations(&self, lines: Vec<String>) {
        *self.registrations.lock() = lines;
    }
}

/// The tables, under one lock. `stateids` is reached from here too, for
/// the paths that hold the tables anyway; it keeps its own locks.
#[derive(Default)]
struct Tables {
    clients: clients::Clients,
    callbacks: callback::Callbacks,
    grace: grace::Grace,
    /// The same as [`State4::stateids`], reached from the tables too.
    stateids: Arc<stateids::Stateids>,
    offloads: offload::Offloads,
    layouts: layouts::Layouts,
    dir_delegs: dir_delegs::DirDelegs,
}

pub(crate) struct State4 {
    pub settings: Nfs4Settings,
    pub clock: Arc<dyn Clock>,
    pub backchannel: Arc<dyn Backchannel>,
    pub store: Arc<dyn StableStore>,
    /// Wall-clock seconds at start, or a number the store gives that is
    /// unique in the cluster ([`StableStore::instance`]): part of client
    /// ids, session ids and stateids, so those from before a restart (or
    /// from another head) are recognised as stale.
    pub boot: u32,
    /// The tables other than the shards, under one lock: taken through
    /// [`State4::lock_tables`], which counts the acquisitions (tests pin
    /// how many a request takes).
    tables: parking_lot::Mutex<Tables>,
    tables_locked: std::sync::atomic::AtomicU64,
    /// The stateids, by file, each shard under its own lock ([`shards`]).
    shards: Arc<shards::FileShards>,
    /// The stateids and their owners, outside the tables' lock: each
    /// client's part under its own lock, each file's in its shard.
    stateids: Arc<stateids::Stateids>,
    /// Every session, each under its own lock (outside the tables).
    pub sessions: sessions::SessionTable,
    /// When SEQUENCE last had the tables tidied (microseconds of the
    /// clock): it takes their lock for that at most every
    /// [`clients::SWEEP_EVERY`].
    last_tidy_us: std::sync::atomic::AtomicU64,
    pub(crate) write_delegated: Arc<WriteDelegated>,
    /// Files with opens or delegations (`Stateids::files_held`).
    files_held: Arc<std::sync::atomic::AtomicUsize>,
    /// Set when the lock table queued releases for a shared store, read
    /// without the tables' lock (`crate::shared_locks`).
    pub lock_releases: Arc<std::sync::atomic::AtomicBool>,
    /// The grace period's flags (this server's, the cluster's), read
    /// without the tables' lock ([`grace::may_be_in_grace`]).
    grace_flags: (Arc<std::sync::atomic::AtomicBool>, Arc<std::sync::atomic::AtomicBool>),
    /// The NFSv3 hosts NSM monitors, and this run's NSM state.
    pub(crate) nsm: nsm_hosts::NsmHosts,
    /// Directory delegations held and clients waiting for one ([`dir_delegs::DirDelegs::active`]).
    dir_delegs_active: Arc<std::sync::atomic::AtomicUsize>,
}

/// Shards of the set of files under write delegations.
const WRITE_DELEGATED_SHARDS: usize = 16;

/// Which files (export id, file id) some client holds a write delegation
/// on, kept beside the stateid table so that the connection's thread can
/// ask without taking the tables' lock.
#[derive(Debug, Default)]
pub(crate) struct WriteDelegated {
    total: std::sync::atomic::AtomicUsize,
    /// Delegations of either kind held, so that NFSv3 requests, which
    /// must recall them too, skip the tables while there are none.
    held: std::sync::atomic::AtomicUsize,
    shards: [parking_lot::Mutex<std::collections::HashMap<(u32, u64), u32>>; WRITE_DELEGATED_SHARDS],
}

impl WriteDelegated {
    fn shard(&self, key: (u32, u64)) -> &parking_lot::Mutex<std::collections::HashMap<(u32, u64), u32>> {
        &self.shards[(key.1 as usize ^ key.0 as usize) % WRITE_DELEGATED_SHARDS]
    }

    /// One delegation of either kind granted (`true`) or gone.
    pub(crate) fn note_held(&self, granted: bool) {
        if granted {
            self.held.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            self.held.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub(crate) fn add(&self, file: FileKey) {
        self.total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *self.shard((file.0, file.1)).lock().entry((file.0, file.1)).or_default() += 1;
    }

    pub(crate) fn remove(&self, file: FileKey) {
        self.total.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let mut s = self.shard((file.0, file.1)).lock();
        if let Some(n) = s.get_mut(&(file.0, file.1)) {
            *n -= 1;
            if *n == 0 {
                s.remove(&(file.0, file.1));
            }
        }
    }

    /// Whether a write delegation is held on the file; no lock at all
    /// while none is held anywhere.
    pub(crate) fn contains(&self, export_id: u32, fileid: u64) -> bool {
        self.total.load(std::sync::atomic::Ordering::Relaxed) > 0
            && self.shard((export_id, fileid)).lock().contains_key(&(export_id, fileid))
    }
}

impl State4 {
    pub fn new(
        settings: Nfs4Settings,
        clock: Arc<dyn Clock>,
        backchannel: Arc<dyn Backchannel>,
        store: Arc<dyn StableStore>,
    ) -> State4 {
        let boot = store.instance(clock.wall_secs() as u32);
        let settings = settings.sanitized();
        let shards = Arc::new(shards::FileShards::default());
        let lock_releases = shards.lock_book.released_pending.clone();
        let stateids =
            Arc::new(stateids::Stateids::new(shards.clone(), settings.max_expired_stateids, lock_releases.clone()));
        let mut tables = Tables { stateids: stateids.clone(), ..Default::default() };
        let grace = Duration::from_secs(settings.grace_secs.into());
        let nsm_before = store.nsm_hosts();
        tables.grace = grace::Grace::start(store.load(), nsm_before.len(), clock.now(), grace);
        let nsm = nsm_hosts::NsmHosts::new(store.nsm_state().unwrap_or(boot as i32 | 1), nsm_before);
        let write_delegated = stateids.write_delegated.clone();
        let files_held = stateids.files_held.clone();
        let grace_flags = (tables.grace.open.clone(), tables.grace.cluster.clone());
        let dir_delegs_active = tables.dir_delegs.active.clone();
        let tables = parking_lot::Mutex::new(tables);
        State4 {
            settings,
            clock,
            backchannel,
            store,
            boot,
            tables,
            tables_locked: Default::default(),
            shards,
            stateids,
            sessions: Default::default(),
            last_tidy_us: Default::default(),
            write_delegated,
            files_held,
            lock_releases,
            grace_flags,
            nsm,
            dir_delegs_active,
        }
    }

    /// The tables, locked.
    fn lock_tables(&self) -> parking_lot::MutexGuard<'_, Tables> {
        self.tables_locked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.tables.lock()
    }

    /// Expires clients past their courtesy time and drops what expired
    /// clients left ([`clients::tidy`]) if that was last done over
    /// [`clients::SWEEP_EVERY`] ago: SEQUENCE, which otherwise takes no
    /// table lock, calls this so that a server whose clients only renew
    /// still expires the silent ones.
    pub(crate) fn tidy_if_due(&self) {
        use std::sync::atomic::Ordering;
        let now = u64::try_from(self.now().as_micros()).unwrap_or(u64::MAX);
        let last = self.last_tidy_us.load(Ordering::Relaxed);
        let every = clients::SWEEP_EVERY.as_micros() as u64;
        if now.saturating_sub(last) < every && last != 0 {
            return;
        }
        if self.last_tidy_us.compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            clients::tidy(self, &mut self.lock_tables());
        }
    }

    /// Removes session `id` (its callbacks in flight go with it); its
    /// client, or `None` if there was no such session.
    fn forget_session(&self, t: &mut Tables, id: &sessionid4) -> Option<u64> {
        let client = self.sessions.take(id)?;
        t.callbacks.pending.retain(|_, p| p.session != *id);
        callback::refresh_path(self, t, client);
        Some(client)
    }

    /// Whether a grace period refuses a request that takes new state and
    /// is no `reclaim` (NLM's rule: NFSv4's also asks who may reclaim).
    /// Takes the tables only while one may be running.
    pub(crate) fn grace_refuses(&self, reclaim: bool) -> bool {
        !reclaim && self.may_be_in_grace() && self.lock_tables().grace.in_grace(self.now())
    }

    /// Whether a grace period may be running (false: surely none is),
    /// without the tables' lock.
    pub(crate) fn may_be_in_grace(&self) -> bool {
        let (open, cluster) = &self.grace_flags;
        grace::may_be_in_grace(open, cluster)
    }

    /// How many times the tables' lock was taken.
    pub fn tables_locked(&self) -> u64 {
        self.tables_locked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many times a client's owners and stateids were locked.
    pub fn clients_locked(&self) -> u64 {
        self.stateids.clients_locked()
    }

    /// How many times a shard of the files' state was locked.
    pub fn shards_locked(&self) -> u64 {
        self.shards.locked()
    }

    /// Whether some client holds a write delegation on the file, read
    /// without the tables' lock: a GETATTR of it may wait on CB_GETATTR.
    pub fn write_delegated(&self, export_id: u32, fileid: u64) -> bool {
        self.write_delegated.contains(export_id, fileid)
    }

    /// Whether any write delegation is held.
    /// Whether any client holds a delegation of either kind.
    pub fn any_delegated(&self) -> bool {
        self.write_delegated.held.load(std::sync::atomic::Ordering::Relaxed) > 0
    }

    /// Whether any file has opens or delegations, read without the
    /// tables' lock.
    pub fn any_file_state(&self) -> bool {
        self.files_held.load(std::sync::atomic::Ordering::Relaxed) > 0
    }

    pub fn any_write_delegated(&self) -> bool {
        self.write_delegated.total.load(std::sync::atomic::Ordering::Relaxed) > 0
    }

    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.settings.lease_secs.into())
    }

    pub fn now(&self) -> Duration {
        self.clock.now()
    }
}

impl Tables {
    /// Takes everything away from a client whose lease ran out and whose
    /// state conflicts with another client's request (courtesy ends).
    pub fn expire_client(&mut self, client: u64) {
        // Marked gone before its state goes: an NFSv4.1 OPEN recording
        // state without the tables checks the mark with the client's part
        // held, so nothing is left behind for a client that is gone.
        self.clients.expire(client);
        self.stateids.purge_client(client);
        self.offloads.cancel_client(client);
        self.layouts.return_all(client, None);
    }
}

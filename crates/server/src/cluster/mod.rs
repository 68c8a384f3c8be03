//! Several heads over one Ceph cluster sharing NFSv4 client state
//! (`[cluster]`): client records and the cluster's grace period live in
//! RADOS, so a head that takes over a dead head's address lets that head's
//! clients reclaim their opens and locks, and no head grants new state
//! while any head's clients are reclaiming.
//!
//! Each head follows the shared record ([`record::GraceRecord`]) every
//! `poll_ms` on a thread of its own: it says it is in grace while its
//! clients reclaim, takes over the clients a takeover names it for, gives
//! back those of a head that came back, and marks the epoch it has seen
//! (what `nfsx cluster takeover` waits for before the address moves).
//!
//! A head notices a dead one by itself: a head whose entry in the record
//! has not changed for `takeover_after_secs` (timed on the observer's own
//! clock, so the heads' clocks need not agree) is taken over by the next
//! live head, which puts the cluster in grace, waits until every live head
//! enforces it, ends the dead head's Ceph sessions (its CephFS locks and
//! capabilities go, and it is blocklisted should it only be cut off), and
//! then runs `takeover_command` to move the dead head's address.

pub mod admin;
pub mod record;
pub mod stats;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use serde::Deserialize;
use server_core::Core;
use vfs_ceph::rados::Rados;
use vfs_ceph::CephSettings;

use record::GraceRecord;
use store::RadosStore;

/// RADOS object holding the [`GraceRecord`].
pub const GRACE_OBJECT: &str = "grace";

/// `[cluster]` in the settings file.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    /// This head's name in the cluster; unset: a single server, whose
    /// client records stay in its state directory.
    pub node: Option<String>,
    /// RADOS pool of the shared records (the `[ceph]` client's cluster).
    pub pool: String,
    /// RADOS namespace within the pool, so several nfsx clusters (or
    /// other users of the pool) keep apart.
    pub namespace: String,
    /// How often a head reads the shared record.
    pub poll_ms: u64,
    /// A RADOS operation not answered within this is an error, not a wait.
    pub op_timeout_secs: u64,
    /// How long the lock on the shared record lasts should its holder die
    /// in the middle of an update.
    pub lock_secs: u64,
    /// A head that has not read the shared record for this long counts as
    /// gone: a takeover does not wait for it.
    pub live_secs: u64,
    /// A head whose entry in the shared record has not changed for this
    /// long is taken over by the next live head without a command; 0: only
    /// `nfsx cluster takeover` does. Keep it above `op_timeout_secs` (a
    /// head waiting on RADOS is slow, not dead) and well below the Ceph
    /// `session_timeout_secs` (60), after which the dead head's CephFS
    /// locks lapse by themselves and its clients' reclaims conflict.
    pub takeover_after_secs: u64,
    /// Run (`sh -c`) by the head that took a dead head over, once the
    /// cluster enforces the grace period and the dead head's Ceph sessions
    /// are ended: the place to move the dead head's address here (what a
    /// floating address manager does). `NFSX_DEAD_HEAD` and `NFSX_HEAD`
    /// name the two heads. Unset: nothing is run.
    pub takeover_command: Option<String>,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        ClusterSettings {
            node: None,
            pool: "cephfs_metadata".into(),
            namespace: "nfsx".into(),
            poll_ms: 1000,
            op_timeout_secs: 10,
            lock_secs: 10,
            live_secs: 5,
            takeover_after_secs: 20,
            takeover_command: None,
        }
    }
}

/// What keeps a head from joining the cluster, or the admin command from
/// reaching it.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "[cluster] takeover_after_secs ({takeover_after_secs}) must be at least op_timeout_secs ({op_timeout_secs}) and three polls (poll_ms {poll_ms}): a head waiting on RADOS would be taken for dead"
    )]
    TakeoverTooSoon { takeover_after_secs: u64, op_timeout_secs: u64, poll_ms: u64 },
    /// RADOS or the shared record, as librados and the record's code say.
    #[error("[cluster]: {0}")]
    Shared(String),
    #[error("[cluster]: cannot start the thread that follows the shared record")]
    Thread(#[source] std::io::Error),
}

impl ClusterSettings {
    pub fn validate(&self) -> Result<(), ClusterError> {
        let after_ms = self.takeover_after_secs.saturating_mul(1000);
        if after_ms > 0 && after_ms < self.poll_ms.saturating_mul(3).max(self.op_timeout_secs * 1000) {
            return Err(ClusterError::TakeoverTooSoon {
                takeover_after_secs: self.takeover_after_secs,
                op_timeout_secs: self.op_timeout_secs,
                poll_ms: self.poll_ms,
            });
        }
        Ok(())
    }

    /// Connects as `owner` (the head's name, or the admin command's), the
    /// name its locks on the shared record carry.
    pub fn connect(&self, ceph: &CephSettings, owner: &str) -> Result<Shared, ClusterError> {
        let timeout = Duration::from_secs(self.op_timeout_secs);
        let rados = Rados::connect(ceph, &self.pool, &self.namespace, owner, timeout).map_err(ClusterError::Shared)?;
        Ok(Shared { rados: Arc::new(rados), settings: self.clone() })
    }
}

pub fn wall_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The cluster's shared objects, as one head or the admin command sees them.
#[derive(Clone)]
pub struct Shared {
    pub rados: Arc<Rados>,
    pub settings: ClusterSettings,
}

impl Shared {
    /// Reads, changes and writes back the shared record under its lock.
    pub fn update<T>(&self, f: impl FnOnce(&mut GraceRecord) -> Result<T, String>) -> Result<T, String> {
        let hold = Duration::from_secs(self.settings.lock_secs.max(1));
        self.rados.locked(GRACE_OBJECT, hold, hold, || {
            let before = self.read()?;
            let mut r = before.clone();
            let out = f(&mut r)?;
            if r != before {
                self.rados.write_full(GRACE_OBJECT, &r.encode())?;
            }
            Ok(out)
        })
    }

    pub fn read(&self) -> Result<GraceRecord, String> {
        match self.rados.read(GRACE_OBJECT)? {
            Some(b) if !b.is_empty() => GraceRecord::decode(&b),
            _ => Ok(GraceRecord::default()),
        }
    }
}

/// One head's part: its store and the thread following the record.
pub struct Head {
    shared: Shared,
    node: String,
    store: Arc<RadosStore>,
    /// For ending a dead head's Ceph sessions.
    ceph: CephSettings,
    /// The names of this head's own Ceph sessions, published in the record.
    sessions: Vec<String>,
    watch: Mutex<Watch>,
    stats: Arc<stats::Stats>,
}

/// What this head has seen of the others' entries in the record.
#[derive(Default)]
struct Watch {
    /// Head -> its last `at`, and when (on this head's clock) it changed.
    beats: HashMap<String, (u64, Instant)>,
    /// The record could not be read for a while: silence seen across that
    /// gap says nothing (RADOS may have been away for every head).
    unsure: bool,
}

impl Head {
    /// `sessions`: the client uuids of this head's Ceph mounts. A head
    /// that was taken over while it was away first has its clients given
    /// back (`grace`: the grace period they reclaim in), before it listens:
    /// until then its address may answer for the head that holds them.
    pub fn open(
        shared: Shared,
        node: &str,
        ceph: &CephSettings,
        sessions: Vec<String>,
        grace: Duration,
    ) -> Result<Head, ClusterError> {
        let s = &shared.settings;
        match admin::give_back(&shared, node, grace, Duration::from_secs(s.live_secs + s.lock_secs)) {
            Ok(Some(by)) => tracing::info!(head = by, "the head that took this one over gave its NFSv4 clients back"),
            Ok(None) => {}
            Err(e) => tracing::warn!("{e}"),
        }
        let store = RadosStore::open(shared.clone(), node).map_err(ClusterError::Shared)?;
        Ok(Head {
            shared,
            node: node.to_string(),
            store: Arc::new(store),
            ceph: ceph.clone(),
            sessions,
            watch: Mutex::default(),
            stats: Arc::default(),
        })
    }

    pub fn store(&self) -> Arc<RadosStore> {
        self.store.clone()
    }

    /// What the metrics endpoint shows of this head's part.
    pub fn stats(&self) -> Arc<stats::Stats> {
        self.stats.clone()
    }

    /// Looks at the record once now (before serving: the cluster learns
    /// of this head's grace period before any client is answered), then
    /// every `poll_ms` on the thread returned, until `stop` is set.
    pub fn follow(self, core: Arc<Core>, stop: Arc<AtomicBool>) -> Result<std::thread::JoinHandle<()>, ClusterError> {
        let flag = core.cluster_grace_flag();
        // Share modes go to the store once the record says a client denied
        // (this step, or a later one, starts it).
        core.defer_share_store();
        self.step(&core, &flag).map_err(ClusterError::Shared)?;
        if core.in_local_grace() {
            wait_enforced(&self.shared, &[&self.node]);
        }
        let every = Duration::from_millis(self.shared.settings.poll_ms.max(10));
        let thread = std::thread::Builder::new().name("nfsx-cluster".into()).spawn(move || {
            let mut failing = false;
            while !stop.load(Ordering::Acquire) {
                std::thread::sleep(every);
                match self.step(&core, &flag) {
                    Ok(()) if failing => {
                        failing = false;
                        tracing::info!("the cluster's shared record is reachable again");
                    }
                    Ok(()) => {}
                    // Unreachable: keep the last view (in grace or not);
                    // the clients' state is checked in CephFS anyway.
                    Err(e) => {
                        self.watch.lock().unsure = true;
                        self.stats.record_failures.fetch_add(1, Ordering::Relaxed);
                        if !failing {
                            failing = true;
                            tracing::warn!("cannot follow the cluster's shared record: {e}");
                        }
                    }
                }
            }
        });
        thread.map_err(ClusterError::Thread)
    }

    /// For how long (ms, on this head's clock) each head's entry has not
    /// changed, learning from record `r`.
    fn silent(&self, r: &GraceRecord) -> BTreeMap<String, u64> {
        let mut w = self.watch.lock();
        let now = Instant::now();
        let unsure = std::mem::take(&mut w.unsure);
        for (h, seen) in &r.heads {
            let beat = w.beats.entry(h.clone()).or_insert((seen.at, now));
            if beat.0 != seen.at || unsure {
                *beat = (seen.at, now);
            }
        }
        let silent: BTreeMap<String, u64> =
            w.beats.iter().map(|(h, (_, t))| (h.clone(), now.duration_since(*t).as_millis() as u64)).collect();
        *self.stats.silent_ms.lock() =
            silent.iter().filter(|(h, _)| **h != self.node).map(|(h, ms)| (h.clone(), *ms)).collect();
        silent
    }

    fn step(&self, core: &Core, flag: &AtomicBool) -> Result<(), String> {
        let grace = Duration::from_secs(core.settings().nfs4.grace_secs.into());
        let node = self.node.as_str();
        let after_ms = self.shared.settings.takeover_after_secs.saturating_mul(1000);
        let live_secs = self.shared.settings.live_secs;
        let (in_grace, taken, share_store, share_denials) = self.shared.update(|r| {
            let now = wall_secs();
            let mut taken = Vec::new();
            if after_ms > 0 {
                let silent = self.silent(r);
                for dead in r.due_takeovers(node, &silent, after_ms) {
                    tracing::warn!(head = dead, silent_ms = silent[&dead], "a head went silent; taking it over");
                    r.take_over(&dead, node, now, now + grace.as_secs());
                    taken.push((dead.clone(), r.sessions.get(&dead).cloned().unwrap_or_default()));
                }
            }
            if r.sessions.get(node) != Some(&self.sessions) {
                r.sessions.insert(node.to_string(), self.sessions.clone());
            }
            for dead in r.adopt.remove(node).unwrap_or_default() {
                let records = self.store.adopt(&dead)?;
                tracing::info!(head = dead, clients = records.len(), "taking over the NFSv4 clients of a dead head");
                core.adopt_clients(records);
            }
            for back in r.release.remove(node).unwrap_or_default() {
                let owners = self.store.release(&back);
                let n = core.release_clients(&owners);
                tracing::info!(head = back, clients = n, "gave a head that came back its NFSv4 clients");
            }
            if core.in_local_grace() {
                r.need_grace(node, now, now + grace.as_secs());
            } else {
                r.grace_done(node);
            }
            r.seen(node, now);
            if core.share_store_wanted() && !r.share_store {
                tracing::info!(
                    "a client asked for an OPEN that denies: every head is to hold its share modes in CephFS"
                );
                r.share_store = true;
            }
            if let Some(me) = r.heads.get_mut(node) {
                me.share_store = r.share_store && core.share_store_published();
            }
            let denials = r.share_store && r.share_store_lagging(now, live_secs).is_empty();
            Ok((r.in_grace(now), taken, r.share_store, denials))
        })?;
        if share_store {
            // Said in the record at the next step, once done.
            core.start_share_store();
        }
        if share_denials {
            core.allow_share_denials();
        }
        flag.store(in_grace, Ordering::Release);
        self.stats.in_grace.store(in_grace, Ordering::Relaxed);
        self.stats.takeovers.fetch_add(taken.len() as u64, Ordering::Relaxed);
        for (dead, sessions) in taken {
            let (shared, ceph, me) = (self.shared.clone(), self.ceph.clone(), self.node.clone());
            let spawned = std::thread::Builder::new()
                .name("nfsx-takeover".into())
                .spawn(move || finish_takeover(&shared, &ceph, &dead, &me, &sessions));
            if let Err(e) = spawned {
                tracing::error!("cannot start a thread to finish a takeover: {e}");
            }
        }
        Ok(())
    }
}

/// Waits until every live head but `except` has seen the latest grace
/// period (at most `live_secs`): before that, one of them could grant a
/// lock a client is about to reclaim.
fn wait_enforced(shared: &Shared, except: &[&str]) {
    let s = &shared.settings;
    let give_up = Instant::now() + Duration::from_secs(s.live_secs);
    loop {
        match shared.read() {
            Ok(r) if r.lagging(wall_secs(), s.live_secs, except).is_empty() => return,
            Ok(r) if Instant::now() >= give_up => {
                let late = r.lagging(wall_secs(), s.live_secs, except);
                tracing::warn!(heads = ?late, "going on before these heads saw the grace period");
                return;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(s.poll_ms.clamp(10, 100))),
            Err(e) => {
                tracing::warn!("cannot follow the cluster's shared record: {e}");
                return;
            }
        }
    }
}

/// The rest of a takeover this head decided on: once every live head
/// enforces the grace, the dead head's Ceph sessions end (its CephFS locks
/// go, so its clients' reclaims do not conflict with them), then
/// `takeover_command` moves its address.
fn finish_takeover(shared: &Shared, ceph: &CephSettings, dead: &str, me: &str, sessions: &[String]) {
    let started = Instant::now();
    wait_enforced(shared, &[dead]);
    end_sessions(ceph, dead, sessions);
    if let Some(cmd) = &shared.settings.takeover_command {
        let out = std::process::Command::new("sh")
            .args(["-c", cmd])
            .env("NFSX_DEAD_HEAD", dead)
            .env("NFSX_HEAD", me)
            .output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => tracing::error!(
                head = dead,
                status = %o.status,
                stderr = %String::from_utf8_lossy(&o.stderr).trim(),
                "takeover_command failed"
            ),
            Err(e) => tracing::error!(head = dead, "cannot run takeover_command: {e}"),
        }
    }
    tracing::info!(head = dead, took_ms = started.elapsed().as_millis() as u64, "took over a dead head");
}

/// Ends a dead head's Ceph sessions (see `vfs_ceph::end_session`).
pub fn end_sessions(ceph: &CephSettings, dead: &str, sessions: &[String]) {
    for uuid in sessions {
        match vfs_ceph::end_session(ceph, uuid) {
            Ok(true) => tracing::info!(head = dead, session = uuid, "ended a dead head's Ceph session"),
            Ok(false) => {}
            Err(e) => tracing::warn!(head = dead, session = uuid, "{e}"),
        }
    }
}

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

pub mod admin;
pub mod record;
pub mod store;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
        }
    }
}

impl ClusterSettings {
    /// Connects as `owner` (the head's name, or the admin command's), the
    /// name its locks on the shared record carry.
    pub fn connect(&self, ceph: &CephSettings, owner: &str) -> anyhow::Result<Shared> {
        let timeout = Duration::from_secs(self.op_timeout_secs);
        let rados = Rados::connect(ceph, &self.pool, &self.namespace, owner, timeout)
            .map_err(|e| anyhow::anyhow!("[cluster]: {e}"))?;
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
}

impl Head {
    pub fn open(shared: Shared, node: &str) -> anyhow::Result<Head> {
        let store = RadosStore::open(shared.clone(), node).map_err(|e| anyhow::anyhow!("[cluster]: {e}"))?;
        Ok(Head { shared, node: node.to_string(), store: Arc::new(store) })
    }

    pub fn store(&self) -> Arc<RadosStore> {
        self.store.clone()
    }

    /// Looks at the record once now (before serving: the cluster learns
    /// of this head's grace period before any client is answered), then
    /// every `poll_ms` on a thread until `stop` is set.
    pub fn follow(self, core: Arc<Core>, stop: Arc<AtomicBool>) -> anyhow::Result<()> {
        let flag = core.cluster_grace_flag();
        self.step(&core, &flag).map_err(|e| anyhow::anyhow!("[cluster]: {e}"))?;
        if core.in_local_grace() {
            self.wait_enforced();
        }
        let every = Duration::from_millis(self.shared.settings.poll_ms.max(10));
        std::thread::Builder::new().name("nfsx-cluster".into()).spawn(move || {
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
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!("cannot follow the cluster's shared record: {e}");
                    }
                    Err(_) => {}
                }
            }
        })?;
        Ok(())
    }

    /// Waits until every other live head has seen the grace period this
    /// head just started (at most `live_secs`): before that, one of them
    /// could grant a lock a client of this head is about to reclaim.
    fn wait_enforced(&self) {
        let s = &self.shared.settings;
        let give_up = std::time::Instant::now() + Duration::from_secs(s.live_secs);
        loop {
            match self.shared.read() {
                Ok(r) if r.lagging(wall_secs(), s.live_secs, &[&self.node]).is_empty() => return,
                Ok(r) if std::time::Instant::now() >= give_up => {
                    let late = r.lagging(wall_secs(), s.live_secs, &[&self.node]);
                    tracing::warn!(heads = ?late, "serving before these heads saw this head's grace period");
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

    fn step(&self, core: &Core, flag: &AtomicBool) -> Result<(), String> {
        let grace = Duration::from_secs(core.settings().nfs4.grace_secs.into());
        let node = self.node.as_str();
        let in_grace = self.shared.update(|r| {
            let now = wall_secs();
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
            Ok(r.in_grace(now))
        })?;
        flag.store(in_grace, Ordering::Release);
        Ok(())
    }
}

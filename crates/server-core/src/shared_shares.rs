//! Share reservations (OPEN's deny modes) on a file system other servers
//! share (several heads over one store, [`vfs::Vfs::shared_store`]).
//!
//! This server's open table only knows the opens it granted, so on such a
//! file system every open's access and deny modes are also held in the
//! store ([`vfs::SharedStore::share_reserve`]), where the other servers' are. An
//! OPEN takes them there once its own table found no conflict, before it
//! is recorded, and an OPEN that fails after that puts the store back; a
//! CLOSE releases an open's modes there before it answers, so that an open
//! another client makes right after is not refused by them;
//! OPEN_DOWNGRADE narrows them; opens that go all at once (a lease
//! expiring, clients handed to another head) are queued by the table and
//! released after the request, as byte-range locks are.

use std::sync::atomic::{AtomicBool, Ordering};

use proto::nfs4::nfsstat4;
use vfs::{FileId, Vfs};

use crate::ops::v4::status::stat4;
use crate::Core;

/// Whether this server holds share modes in the shared store now.
///
/// A server alone over a shared store does from the start. Heads of a
/// cluster (`[cluster]`) wait until some client asks for an OPEN that
/// denies: until then no open anywhere denies anything, so an access
/// cannot conflict and need not be held in the store, which saves every
/// OPEN a store request (most clients never deny: Linux's always ask for
/// DENY_NONE). That first OPEN is answered NFS4ERR_DELAY and sets
/// `wanted`; the cluster's shared record tells every head, each starts to
/// hold its opens' modes (those it holds already first) and says so, and
/// once all have, OPENs that deny are granted (`denials`).
#[derive(Debug)]
pub(crate) struct ShareStore {
    /// New opens take their modes in the store.
    publish: AtomicBool,
    /// The opens recorded before `publish` was set are in the store too.
    published: AtomicBool,
    /// Every head holds its opens' modes there: denials may be granted.
    denials: AtomicBool,
    /// A client asked for a denial that could not be granted yet.
    wanted: AtomicBool,
}

impl Default for ShareStore {
    fn default() -> Self {
        let on = || AtomicBool::new(true);
        ShareStore { publish: on(), published: on(), denials: on(), wanted: AtomicBool::new(false) }
    }
}

impl Core {
    /// A head of a cluster whose shared record says no client has denied
    /// anything yet: holds no share modes in the store until one does.
    /// Call before serving.
    pub fn defer_share_store(&self) {
        for f in [&self.share_store.publish, &self.share_store.published, &self.share_store.denials] {
            f.store(false, Ordering::Release);
        }
    }

    /// Whether a client asked for an OPEN that denies, which waits until
    /// every head holds its opens' share modes in the store.
    pub fn share_store_wanted(&self) -> bool {
        self.share_store.wanted.load(Ordering::Acquire)
    }

    /// Starts to hold share modes in the store: new opens' at once, then
    /// those of the opens already recorded. Blocking (store requests).
    pub fn start_share_store(&self) {
        let st = &self.share_store;
        let Some(opens) = self.v4.publish_shares(&st.publish) else { return };
        tracing::info!(opens = opens.len(), "holding NFSv4 share modes in the shared store from now on");
        for other in opens {
            // Each with the tables locked, as an OPEN takes them: a CLOSE
            // or an upgrade of the same open comes wholly before or after.
            self.v4.with_open_shares(&other, |file, store_key, access, deny| {
                let Some(store) = self.export_by_id(file.0).and_then(|e| e.fs.shared_store()) else { return };
                match store.share_reserve(file.1, store_key, access, deny) {
                    Ok(true) => {}
                    // None denies yet, so an access cannot conflict.
                    Ok(false) => tracing::warn!(file = file.1, "an open's share modes conflict in the shared store"),
                    Err(e) => tracing::warn!(
                        file = file.1,
                        error = %e,
                        "could not hold an open's share modes in the shared store"
                    ),
                }
            });
        }
        st.published.store(true, Ordering::Release);
    }

    /// Whether every open of this server has its share modes in the store.
    pub fn share_store_published(&self) -> bool {
        self.share_store.published.load(Ordering::Acquire)
    }

    /// Every head holds its opens' share modes in the store: OPENs that
    /// deny may be granted.
    pub fn allow_share_denials(&self) {
        if !self.share_store.denials.swap(true, Ordering::AcqRel) {
            tracing::info!("every head holds its share modes in the shared store: OPENs that deny are granted");
        }
    }

    /// For the metrics: `None` without a shared export; else whether this
    /// server holds its opens' share modes in the store, and whether it
    /// grants OPENs that deny.
    pub fn share_store_state(&self) -> Option<(bool, bool)> {
        if !self.exports().iter().any(|e| e.fs.shared_store().is_some()) {
            return None;
        }
        let st = &self.share_store;
        Some((st.published.load(Ordering::Acquire), st.denials.load(Ordering::Acquire)))
    }

    /// Whether new opens take their modes in the store (read with the
    /// state tables locked, as [`Core::start_share_store`] sets it).
    pub(crate) fn publishes_shares(&self) -> bool {
        self.share_store.publish.load(Ordering::Acquire)
    }
}

/// A reservation taken in the store for an OPEN not yet recorded.
pub(crate) struct Reserved {
    /// The open's store key (0: the file system is not shared).
    pub key: u64,
    /// What the owner's open held there before (0, 0 for a new open).
    before: (u32, u32),
}

/// Holds `access`/`deny` in the store for an open, with the tables
/// locked: `held` is the store key and modes of the owner's open this one
/// upgrades, `new_key` makes a new open's key. NFS4ERR_SHARE_DENIED when
/// another server's open conflicts.
pub(crate) fn reserve(
    core: &Core,
    fs: &dyn Vfs,
    id: FileId,
    held: Option<(u64, u32, u32)>,
    new_key: &mut dyn FnMut() -> u64,
    access: u32,
    deny: u32,
) -> Result<Reserved, nfsstat4> {
    if fs.shared_store().is_none() {
        return Ok(Reserved { key: 0, before: (0, 0) });
    }
    match held {
        Some((key, held_access, held_deny)) if key != 0 => {
            reserve_new(core, fs, id, key, access, deny).map(|r| Reserved { before: (held_access, held_deny), ..r })
        }
        _ => reserve_new(core, fs, id, new_key(), access, deny),
    }
}

/// Holds `access`/`deny` in the store for a new open with store key
/// `key`: NFS4ERR_SHARE_DENIED when another server's open conflicts,
/// NFS4ERR_DELAY for a denial while not every head holds its modes there.
pub(crate) fn reserve_new(
    core: &Core,
    fs: &dyn Vfs,
    id: FileId,
    key: u64,
    access: u32,
    deny: u32,
) -> Result<Reserved, nfsstat4> {
    denial_ready(core, fs, deny)?;
    if !core.publishes_shares() {
        return Ok(Reserved { key, before: (0, 0) });
    }
    // Without a store every reservation is this server's alone.
    let Some(store) = fs.shared_store() else { return Ok(Reserved { key, before: (0, 0) }) };
    match store.share_reserve(id, key, access, deny) {
        Ok(true) => Ok(Reserved { key, before: (0, 0) }),
        Ok(false) => Err(nfsstat4::NFS4ERR_SHARE_DENIED),
        Err(e) => Err(stat4(e)),
    }
}

/// For an OPEN that denies `deny` on `fs`: NFS4ERR_DELAY while not every
/// server sharing it holds its opens' share modes in the store (the first
/// such OPEN asks them to). Asked before the OPEN creates anything too,
/// so that the retry of a GUARDED or EXCLUSIVE creation does not meet the
/// file its first try made.
pub(crate) fn denial_ready(core: &Core, fs: &dyn Vfs, deny: u32) -> Result<(), nfsstat4> {
    let st = &core.share_store;
    if deny == 0 || fs.shared_store().is_none() || st.denials.load(Ordering::Acquire) {
        return Ok(());
    }
    if !st.wanted.swap(true, Ordering::AcqRel) {
        tracing::info!("an OPEN denies: asking every head to hold its share modes in the shared store");
    }
    Err(nfsstat4::NFS4ERR_DELAY)
}

/// Puts the store back as it was before [`reserve`], for an OPEN that
/// failed after it.
pub(crate) fn undo(fs: &dyn Vfs, id: FileId, r: &Reserved) {
    if r.key != 0 {
        set(fs, id, r.key, r.before.0, r.before.1);
    }
}

/// Makes the store hold `access`/`deny` for the open with store key
/// `key` (both 0: none); a failure is logged: it leaves the store holding
/// more than the table, which refuses more, never less.
pub(crate) fn set(fs: &dyn Vfs, id: FileId, key: u64, access: u32, deny: u32) {
    let Some(store) = fs.shared_store().filter(|_| key != 0) else { return };
    if let Err(e) = store.share_reserve(id, key, access, deny) {
        tracing::warn!(file = id, error = %e, "could not bring the shared store's share reservation in line with this server's");
    }
}

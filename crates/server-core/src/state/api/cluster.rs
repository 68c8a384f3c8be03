//! The state as a head of a cluster (several servers over one shared
//! store) and the shared store's bookkeeping need it: the cluster's grace
//! period, clients handed to or taken from other heads, and what the
//! tables released or hold that the store must match (`crate::cluster`,
//! `crate::shared_locks`, `crate::shared_shares`, `crate::shared_delegs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::state::lockmgr::{Lock, LockOwner};
use crate::state::stateids::{Kind, Other};
use crate::state::{clients, delegations, FileKey, State4};

/// What the tables dropped that a shared store still holds: owners' locks
/// on files, and opens' share modes by store key.
pub(crate) type Released = (Vec<(FileKey, LockOwner)>, Vec<(FileKey, u64)>);

impl State4 {
    /// The flag that puts this server in grace while another head is.
    pub(crate) fn cluster_grace_flag(&self) -> Arc<AtomicBool> {
        self.lock_tables().grace.cluster.clone()
    }

    /// Whether this server's own clients (or ones it adopted) may still
    /// reclaim: its part of the cluster's grace period.
    pub(crate) fn in_local_grace(&self) -> bool {
        let now = self.now();
        self.lock_tables().grace.local(now)
    }

    /// Expires the clients whose lease (and courtesy time) ran out and
    /// drops what expired clients left.
    pub(crate) fn expire_lapsed_clients(&self) {
        clients::tidy(self, &mut self.lock_tables());
    }

    /// Lets the clients of `records` (a dead head's) reclaim here, in a
    /// grace period of the usual length from now.
    pub(crate) fn adopt_clients(&self, records: Vec<Vec<u8>>) {
        let now = self.now();
        let length = Duration::from_secs(self.settings.grace_secs.into());
        self.lock_tables().grace.adopt(records, now, length);
    }

    /// Ends the state of the live clients with these owners (they move to
    /// another head) as if their leases had expired, and forgets them as
    /// reclaimers; how many there were.
    pub(crate) fn release_clients(&self, owners: &[Vec<u8>]) -> usize {
        let mut t = self.lock_tables();
        let ids: Vec<u64> = t
            .clients
            .map
            .values()
            .filter(|c| !c.expired && owners.iter().any(|o| o[..] == c.owner[..]))
            .map(|c| c.id)
            .collect();
        for &id in &ids {
            t.expire_client(id);
        }
        for o in owners {
            t.grace.forget(o);
        }
        clients::tidy(self, &mut t);
        ids.len()
    }

    /// Whether the lock table queues what it releases, for a shared store
    /// to release too.
    pub(crate) fn track_released_locks(&self, on: bool) {
        self.shards.lock_book.track_released(on);
    }

    /// Takes what the tables released since last asked.
    pub(crate) fn take_released(&self) -> Released {
        let shares = self.stateids.take_released_shares();
        (self.shards.lock_book.take_released(), shares)
    }

    /// `owner`'s locks on `file` that overlap `start..=end`.
    pub(crate) fn locks_held_in(&self, file: FileKey, owner: &LockOwner, start: u64, end: u64) -> Vec<Lock> {
        self.shards.of_file(file).locks.owned_in(file, owner, start, end)
    }

    /// Sets `publish` (new opens take their share modes in the store) with
    /// the tables locked, so that an OPEN sees it set or finds its open
    /// among those returned: the opens with a store key recorded so far.
    /// `None` if it was set already.
    pub(crate) fn publish_shares(&self, publish: &AtomicBool) -> Option<Vec<Other>> {
        let t = self.lock_tables();
        if publish.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(t.stateids.all_matching(|e| e.open().is_some_and(|o| o.store_key != 0)))
    }

    /// Runs `f` with open `other`'s file, store key, access and deny with
    /// the tables locked, as an OPEN takes them: a CLOSE or an upgrade of
    /// the same open comes wholly before or after. `None` if it is gone.
    pub(crate) fn with_open_shares<R>(&self, other: &Other, f: impl FnOnce(FileKey, u64, u32, u32) -> R) -> Option<R> {
        let t = self.lock_tables();
        // Copied out, so that `f` (which asks the store) runs with the
        // tables held but not the file's shard, which I/O needs.
        let (file, o) = t.stateids.get(other).and_then(|e| Some((e.file, e.open()?.clone())))?;
        Some(f(file, o.store_key, o.access, o.deny))
    }

    /// Runs `f` with the tables locked, given whether a client of this
    /// server holds a delegation (not revoked) on a file: a store's
    /// delegation is given back under that lock, so that a grant and a
    /// release of one file never cross.
    pub(crate) fn with_delegations_held<R>(&self, f: impl FnOnce(&dyn Fn(FileKey) -> bool) -> R) -> R {
        let t = self.lock_tables();
        f(&|file| delegated(&t.stateids, file))
    }

    /// Settles a store's delegation, with the tables locked throughout:
    /// `file` names the state's file behind it (`None`: none was granted;
    /// `give_back(false)` runs at once). Recalled (`deadline` set), its
    /// clients' delegations are recalled, and revoked once the deadline
    /// passed; else it waits while one is held. `give_back(true)` runs and
    /// true is returned once none is left.
    pub(crate) fn settle_store_delegation(
        &self,
        deadline: Option<Duration>,
        file: impl FnOnce() -> Option<FileKey>,
        give_back: impl FnOnce(bool),
    ) -> bool {
        let mut t = self.lock_tables();
        let Some(file) = file() else {
            give_back(false);
            return true;
        };
        let clear = match deadline {
            Some(_) => delegations::recall_conflicting(self, &mut t, file, None, true).is_ok(),
            None => !delegated(&t.stateids, file),
        };
        let late = deadline.is_some_and(|d| self.now() >= d);
        if !clear && !late {
            return false;
        }
        if !clear {
            tracing::warn!(file = file.1, "delegations not returned in time for the shared store; revoked");
            delegations::revoke_all_on(&mut t, file);
        }
        give_back(true);
        true
    }
}

/// Whether a client of this server holds a delegation on `file`.
fn delegated(ids: &crate::state::stateids::Stateids, file: FileKey) -> bool {
    ids.on_file(file).iter().any(|(_, e)| matches!(&e.kind, Kind::Deleg(d) if !d.revoked))
}

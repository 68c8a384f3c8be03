//! Byte-range locks on a file system other servers share (several heads
//! over one store, [`vfs::Vfs::shared_store`]).
//!
//! This server's lock table only knows the locks it granted, so on such a
//! file system every lock is also taken in the store itself
//! ([`vfs::SharedStore::range_lock`]), where the other servers' locks are: a LOCK
//! first takes its range there, so a conflict with another head's client
//! shows before anything changes here; after a LOCK that then failed here,
//! a LOCKU or an NLM UNLOCK, the store is made to hold exactly what the
//! table holds for that owner in that range; locks that go all at once (a
//! CLOSE, a lease expiring, a client host restarting) are queued by the
//! table and released in the store after the request.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use vfs::{FileId, RangeLock, Vfs, VfsResult};

use crate::state::lockmgr::{Lock, LockKind, LockOwner};
use crate::state::{FileKey, State4};
use crate::Core;

/// The number the store knows `owner` by (stable while this server runs;
/// a restarted head's locks go with its old session).
pub(crate) fn owner_key(owner: &LockOwner) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    owner.hash(&mut h);
    h.finish()
}

/// Who a conflicting lock found only in the shared store is reported as
/// held by (LOCK4denied, NLM's holder): the other server's client is not
/// known here.
pub(crate) fn another_server() -> LockOwner {
    LockOwner::Nlm {
        caller: bytes::Bytes::from_static(b"another server"),
        svid: 0,
        oh: bytes::Bytes::from_static(b"another server"),
    }
}

fn range_lock(kind: LockKind) -> RangeLock {
    match kind {
        LockKind::Read => RangeLock::Read,
        LockKind::Write => RangeLock::Write,
    }
}

/// Takes `kind` on `start..=end` for `owner` in the store; `Ok(false)`
/// when another server's client holds a conflicting lock there. Always
/// `Ok(true)` for a file system no other server shares.
pub(crate) fn take(
    fs: &dyn Vfs,
    id: FileId,
    owner: &LockOwner,
    kind: LockKind,
    start: u64,
    end: u64,
) -> VfsResult<bool> {
    let Some(store) = fs.shared_store() else { return Ok(true) };
    store.range_lock(id, owner_key(owner), range_lock(kind), start, end)
}

/// A lock another server's client holds in the store that conflicts with
/// `kind` on `start..=end` for `owner` (LOCKT, NLM TEST). Always `Ok(None)`
/// for a file system no other server shares.
pub(crate) fn test(
    fs: &dyn Vfs,
    id: FileId,
    owner: &LockOwner,
    kind: LockKind,
    start: u64,
    end: u64,
) -> VfsResult<Option<Lock>> {
    let Some(store) = fs.shared_store() else { return Ok(None) };
    let held = store.range_test(id, owner_key(owner), range_lock(kind), start, end)?;
    Ok(held.map(|(lock, start, end)| Lock {
        owner: another_server(),
        kind: if lock == RangeLock::Read { LockKind::Read } else { LockKind::Write },
        start,
        end,
    }))
}

/// Makes the store hold what this server's table holds for `owner` on
/// `start..=end` of `file`.
pub(crate) fn sync(fs: &dyn Vfs, st: &State4, file: FileKey, owner: &LockOwner, start: u64, end: u64) {
    let Some(store) = fs.shared_store() else { return };
    let held = st.locks_held_in(file, owner, start, end);
    let key = owner_key(owner);
    let done = store.range_lock(file.1, key, RangeLock::Unlock, start, end).and_then(|_| {
        held.iter().try_for_each(|l| {
            store.range_lock(file.1, key, range_lock(l.kind), l.start.max(start), l.end.min(end)).map(drop)
        })
    });
    if let Err(e) = done {
        tracing::warn!(file = file.1, error = %e, "could not bring the shared store's locks in line with this server's");
    }
}

impl Core {
    /// Releases in the store the locks and share reservations the tables
    /// dropped during the request just run, on a thread of their own:
    /// they may wait on the network, and the reply need not wait for them.
    pub(crate) fn release_shared_locks(&self) {
        if !self.shared_locks || !self.v4.lock_releases.swap(false, std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let (released, shares) = self.v4.take_released();
        let fs_of = |file: &FileKey| Some(self.export_by_id(file.0)?.fs.clone());
        let work: Vec<Release> = released
            .iter()
            .filter_map(|(file, owner)| Some(Release::Locks(fs_of(file)?, file.1, owner_key(owner))))
            .chain(shares.iter().filter_map(|(file, key)| Some(Release::Share(fs_of(file)?, file.1, *key))))
            .collect();
        if work.is_empty() {
            return;
        }
        let sender = self.releaser.get_or_init(|| start_releaser(&*self.jobs));
        if sender.lock().send(work).is_err() {
            tracing::error!("the thread that releases shared locks is gone");
        }
    }
}

/// What goes in the store after a request: an owner's locks on a file, or
/// an open's share reservation.
pub(crate) enum Release {
    Locks(Arc<dyn Vfs>, FileId, u64),
    Share(Arc<dyn Vfs>, FileId, u64),
}

/// The one job that makes the releases, in the order they came.
fn start_releaser(jobs: &dyn crate::Jobs) -> parking_lot::Mutex<std::sync::mpsc::Sender<Vec<Release>>> {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<Release>>();
    let started = jobs.start(
        "nfsx-unlock",
        Box::new(move || {
            for work in rx {
                for r in work {
                    match r {
                        Release::Locks(fs, id, key) => {
                            let Some(store) = fs.shared_store() else { continue };
                            if let Err(e) = store.range_lock(id, key, RangeLock::Unlock, 0, u64::MAX) {
                                tracing::warn!(file = id, error = %e, "could not release locks in the shared store");
                            }
                        }
                        Release::Share(fs, id, key) => crate::shared_shares::set(&*fs, id, key, 0, 0),
                    }
                }
            }
        }),
    );
    if !started {
        tracing::error!("cannot start the job that releases shared locks");
    }
    parking_lot::Mutex::new(tx)
}

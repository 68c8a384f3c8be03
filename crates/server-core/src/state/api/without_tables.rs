//! NFSv4.1 operations done without the tables' lock, in the file's shard
//! and the client's own part of the stateids: CLOSE, and LOCK, LOCKU and
//! LOCKT of a lock-owner that already holds a lock stateid on the file.
//! SEQUENCE renewed the session's client, the only one its stateids
//! serve; 4.1 has no seqids to keep; a file's open, lock stateids and
//! byte-range locks sit in one shard. What these paths cannot settle goes
//! the tables' way (`locks.rs`, `opens.rs`), which gives the same answer
//! as before: any error, a grace period, a new lock-owner, a conflict
//! with a client whose lease may have run out (courtesy), the per-client
//! cap.

use proto::nfs4::*;

use super::locks::LockRange;
use crate::state::lockmgr::{Lock, LockError, LockKind, LockOwner};
use crate::state::stateids::{find_entry, invalid_stateid, next_seqid, v4_lock_owner, Kind};
use crate::state::{FileKey, State4};

impl State4 {
    /// LOCK by the owner of 4.1 lock stateid `lock`, of session client
    /// `client`, in the file's shard: `None` sends it to the tables.
    pub(super) fn lock_in_shard(&self, client: u64, lock: &stateid4, range: &LockRange) -> Option<LOCK4res> {
        if range.reclaim || self.may_be_in_grace() {
            return None;
        }
        let mut shard = self.shards.of_other(&lock.other);
        let e = find_entry(&shard, self.boot, 1, Some(client), lock).ok()?;
        let Kind::Lock(l) = &e.kind else { return None };
        if e.file != range.file {
            return None;
        }
        let access = shard.ids.get(&l.open)?.open()?.access;
        let needed = if range.kind == LockKind::Write { OPEN4_SHARE_ACCESS_WRITE } else { OPEN4_SHARE_ACCESS_READ };
        if access & needed == 0 {
            return None;
        }
        let owner = v4_lock_owner(client, &l.owner);
        let max = self.settings.max_locks_per_client;
        match shard.locks.lock(range.file, &owner, range.kind, range.start, range.end, max) {
            Ok(()) => {}
            // An NLM holder has no lease that could have run out.
            Err(LockError::Conflict(c)) if matches!(c.owner, LockOwner::Nlm { .. }) => {
                return Some(LOCK4res::NFS4ERR_DENIED(c.denied()));
            }
            Err(_) => return None,
        }
        let e = shard.ids.get_mut(&lock.other)?;
        e.seqid = next_seqid(e.seqid);
        Some(LOCK4res::NFS4_OK(LOCK4resok { lock_stateid: e.stateid(lock.other) }))
    }

    /// LOCKU of 4.1 lock stateid `sid` of session client `client` on
    /// `start..=end` of `file`, in the file's shard: the new stateid and
    /// the lock-owner, or `None` for the tables' path.
    pub(super) fn locku_in_shard(
        &self,
        client: u64,
        sid: &stateid4,
        file: FileKey,
        start: u64,
        end: u64,
    ) -> Option<(stateid4, LockOwner)> {
        let mut shard = self.shards.of_other(&sid.other);
        let e = find_entry(&shard, self.boot, 1, Some(client), sid).ok()?;
        let Kind::Lock(l) = &e.kind else { return None };
        if e.file != file {
            return None;
        }
        let owner = v4_lock_owner(client, &l.owner);
        shard.locks.unlock(file, &owner, start, end);
        let e = shard.ids.get_mut(&sid.other)?;
        e.seqid = next_seqid(e.seqid);
        Some((e.stateid(sid.other), owner))
    }

    /// LOCKT of a 4.1 session's client in the file's shard, outside a
    /// grace period: `Some` with the conflicting lock, if any.
    pub(super) fn lockt_in_shard(
        &self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
    ) -> Option<Option<Lock>> {
        if self.may_be_in_grace() {
            return None;
        }
        Some(self.shards.of_file(file).locks.test(file, owner, kind, start, end))
    }

    /// CLOSE of 4.1 open `sid` of session client `client` on `file`,
    /// without the tables: the reply's stateid and the store key of the
    /// share modes to release in a shared store (see `opens.rs`), or
    /// `None` for the tables' path.
    pub(super) fn close_in_shard(&self, client: u64, sid: &stateid4, file: FileKey) -> Option<(stateid4, Option<u64>)> {
        let store_key = {
            let shard = self.shards.of_other(&sid.other);
            let e = find_entry(&shard, self.boot, 1, Some(client), sid).ok()?;
            if e.file != file {
                return None;
            }
            e.open()?.store_key
        };
        // Closed meanwhile by another of the client's requests: the
        // tables' path gives the error.
        self.stateids.close(&sid.other, false).ok()?;
        let released = (store_key != 0 && self.stateids.take_released_share(store_key)).then_some(store_key);
        Some((invalid_stateid(), released))
    }
}

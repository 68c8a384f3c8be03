//! Byte-range locks as NLM (the NFSv3 side's lock protocol) takes, tests
//! and releases them, in the one lock table NFSv4 uses too, and the
//! NFSv4 delegations an NFSv3 request must recall (RFC 8881 10.4.4 asks
//! it of any conflicting access). NLM holders are hosts, not NFSv4
//! clients: they have no lease, no per-client cap and no owners in the
//! tables, so their locks take only the file's shard (and the tables only
//! while a grace period may be running).

use proto::nfs4::nfsstat4;
use proto::nlm::nlm4_stats;

use crate::state::lockmgr::{Lock, LockError, LockKind, LockOwner};
use crate::state::{delegations, FileKey, State4};

impl State4 {
    /// NLM4_LOCK: takes `kind` on `start..=end` of `file` for `owner`;
    /// during the grace period only a `reclaim` is granted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn nlm_lock(
        &self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
        reclaim: bool,
    ) -> nlm4_stats {
        if self.grace_refuses(reclaim) {
            return nlm4_stats::nlm4_denied_grace_period;
        }
        // The per-client cap does not apply (the lock manager only counts
        // v4 owners).
        match self.shards.of_file(file).locks.lock(file, owner, kind, start, end, usize::MAX) {
            Ok(()) => nlm4_stats::nlm4_granted,
            Err(LockError::Conflict(_)) => nlm4_stats::nlm4_denied,
            Err(LockError::TooMany) => nlm4_stats::nlm4_denied_nolocks,
        }
    }

    /// NLM4_TEST: the lock of another owner than `owner` that conflicts
    /// with `kind` on `start..=end` of `file`.
    pub(crate) fn nlm_test(
        &self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
    ) -> Option<Lock> {
        self.shards.of_file(file).locks.test(file, owner, kind, start, end)
    }

    /// NLM4_UNLOCK: releases `start..=end` of `file` for `owner`.
    pub(crate) fn nlm_unlock(&self, file: FileKey, owner: &LockOwner, start: u64, end: u64) {
        self.shards.of_file(file).locks.unlock(file, owner, start, end);
    }

    /// NLM4_FREE_ALL and SM_NOTIFY: the host `caller` restarted; every
    /// lock it held goes.
    pub(crate) fn nlm_free_all(&self, caller: &[u8]) {
        self.shards.release_locks_where(|o| matches!(o, LockOwner::Nlm { caller: c, .. } if c[..] == *caller));
    }

    /// Whether the grace period refuses an NLM request that takes state
    /// (NLM4_SHARE) and is no `reclaim`.
    pub(crate) fn nlm_grace_refuses(&self, reclaim: bool) -> bool {
        self.grace_refuses(reclaim)
    }

    /// Recalls the NFSv4 delegations on `file` that an NFSv3 request
    /// conflicts with: one that changes it (`for_write`) recalls all of
    /// them, a read the write delegations. NFS4ERR_DELAY while a recall
    /// is out.
    pub(crate) fn recall_for_v3(&self, file: FileKey, for_write: bool) -> Result<(), nfsstat4> {
        delegations::recall_conflicting(self, &mut self.lock_tables(), file, None, for_write)
    }
}

//! Byte-range locks as NLM (the NFSv3 side's lock protocol) takes, tests
//! and releases them, in the one lock table NFSv4 uses too, and the
//! NFSv4 delegations an NFSv3 request must recall (RFC 8881 10.4.4 asks
//! it of any conflicting access). NLM holders are hosts, not NFSv4
//! clients: they have no lease, no per-client cap and no owners in the
//! tables, so their locks take only the file's shard (and the tables only
//! while a grace period may be running).

use proto::nfs4::nfsstat4;
use proto::nlm::nlm4_stats;

use std::sync::Arc;

use crate::nlm::blocked::GrantTo;
use crate::state::lockmgr::{Granted, Lock, LockError, LockKind, LockOwner};
use crate::state::nlm_shares::NlmShare;
use crate::state::{delegations, FileKey, State4};

/// A blocking LOCK's wish to wait, and the caps on waiting.
pub(crate) struct Wait {
    pub grant: Arc<GrantTo>,
    pub max_blocked: usize,
    pub max_blocked_per_host: usize,
}

impl State4 {
    /// NLM4_LOCK: takes `kind` on `start..=end` of `file` for `owner`;
    /// during the grace period only a `reclaim` is granted. On a conflict
    /// a request that may `wait` is queued (`nlm4_blocked`), to be
    /// granted when the range comes free.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn nlm_lock(
        &self,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
        reclaim: bool,
        wait: Option<Wait>,
    ) -> nlm4_stats {
        if self.grace_refuses(reclaim) {
            return nlm4_stats::nlm4_denied_grace_period;
        }
        let mut shard = self.shards.of_file(file);
        // The per-client cap does not apply (the lock manager only counts
        // v4 owners).
        match shard.locks.lock(file, owner, kind, start, end, usize::MAX) {
            Ok(()) => nlm4_stats::nlm4_granted,
            Err(LockError::Conflict(_)) => {
                let Some(w) = wait else { return nlm4_stats::nlm4_denied };
                match shard.locks.enqueue(file, owner, kind, start, end, w.grant, w.max_blocked, w.max_blocked_per_host)
                {
                    Ok(()) => nlm4_stats::nlm4_blocked,
                    Err(full) => {
                        tracing::debug!(?full, "too many blocked NLM requests; refused");
                        nlm4_stats::nlm4_denied_nolocks
                    }
                }
            }
            Err(LockError::TooMany) => nlm4_stats::nlm4_denied_nolocks,
        }
    }

    /// NLM4_CANCEL: removes `owner`'s blocked request for `kind` on
    /// `start..=end` of `file`; whether there was one.
    pub(crate) fn nlm_cancel(&self, file: FileKey, owner: &LockOwner, kind: LockKind, start: u64, end: u64) -> bool {
        self.shards.of_file(file).locks.cancel(file, owner, kind, start, end)
    }

    /// Blocked requests granted since the last call, for NLM to tell
    /// their owners; one atomic load when there are none.
    pub(crate) fn take_grants(&self) -> Vec<Granted> {
        self.shards.lock_book.take_grants()
    }

    /// Blocked NLM requests waiting now.
    pub(crate) fn nlm_blocked(&self) -> usize {
        self.shards.lock_book.blocked()
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
    /// lock it held goes, and every request it had waiting.
    pub(crate) fn nlm_free_all(&self, caller: &[u8]) {
        let of_host = |o: &LockOwner| matches!(o, LockOwner::Nlm { caller: c, .. } if c[..] == *caller);
        if self.nlm_blocked() > 0 {
            self.shards.drop_waiters_where(of_host);
        }
        self.shards.release_locks_where(of_host);
        self.shards.nlm_unshare_where(|s| s.caller[..] == *caller);
        self.nsm.unmonitor(&*self.store, caller);
    }

    /// A lock or share was granted to `caller`, calling from `addr`: NSM
    /// monitors it from now on, durably, so that it hears of a restart.
    pub(crate) fn nsm_monitor(&self, caller: &bytes::Bytes, addr: std::net::IpAddr, local: std::net::IpAddr) {
        self.nsm.monitor(&*self.store, caller, addr, local);
    }

    /// Stops monitoring `caller` (told of our restart, or never reached).
    pub(crate) fn nsm_unmonitor(&self, caller: &[u8]) {
        self.nsm.unmonitor(&*self.store, caller);
    }

    /// The hosts monitored before the restart, to be told of it (once).
    pub(crate) fn nsm_take_before(&self) -> Vec<crate::NsmHost> {
        std::mem::take(&mut *self.nsm.before.lock())
    }

    /// Hosts monitored now.
    pub(crate) fn nsm_monitored(&self) -> usize {
        self.nsm.count()
    }

    /// The monitored hosts whose lock calls came from `addr`.
    pub(crate) fn nsm_hosts_at(&self, addr: std::net::IpAddr) -> Vec<bytes::Bytes> {
        self.nsm.named_at(addr)
    }

    /// This run's NSM state number.
    pub(crate) fn nsm_state(&self) -> i32 {
        self.nsm.state
    }

    /// NLM4_SHARE: reserves `share`'s access and deny modes on `file`,
    /// unless another owner's share or an NFSv4 open stands in the way
    /// (`denied`); the owner's earlier share on the file is replaced.
    /// Only the file's shard is taken: NFSv4 opens are recorded there.
    pub(crate) fn nlm_share(&self, file: FileKey, share: NlmShare, reclaim: bool) -> nlm4_stats {
        if self.grace_refuses(reclaim) {
            return nlm4_stats::nlm4_denied_grace_period;
        }
        let mut shard = self.shards.of_file(file);
        let me = Some((&share.caller[..], &share.oh[..]));
        if shard.nlm_share_conflicts(file, me, share.access, share.deny)
            || shard.v4_open_conflicts(file, share.access, share.deny)
        {
            return nlm4_stats::nlm4_denied;
        }
        if shard.nlm_share(file, share) {
            nlm4_stats::nlm4_granted
        } else {
            nlm4_stats::nlm4_denied_nolocks
        }
    }

    /// NLM4_UNSHARE: drops the share of `caller`'s owner `oh` on `file`.
    pub(crate) fn nlm_unshare(&self, file: FileKey, caller: &[u8], oh: &[u8]) {
        self.shards.of_file(file).nlm_unshare_where(Some(file), |s| s.owned_by(caller, oh));
    }

    /// Recalls the NFSv4 delegations on `file` that an NFSv3 request
    /// conflicts with: one that changes it (`for_write`) recalls all of
    /// them, a read the write delegations. NFS4ERR_DELAY while a recall
    /// is out.
    pub(crate) fn recall_for_v3(&self, file: FileKey, for_write: bool) -> Result<(), nfsstat4> {
        delegations::recall_conflicting(self, &mut self.lock_tables(), file, None, for_write)
    }
}

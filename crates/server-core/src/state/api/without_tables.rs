//! NFSv4.1 operations done without the tables' lock, in the file's shard
//! and the client's own part of the stateids: OPEN, CLOSE, DELEGRETURN,
//! and LOCK, LOCKU and LOCKT of a lock-owner that already holds a lock
//! stateid on the file.
//! SEQUENCE renewed the session's client, the only one its stateids
//! serve; 4.1 has no seqids to keep; a file's open, lock stateids and
//! byte-range locks sit in one shard. What these paths cannot settle goes
//! the tables' way (`locks.rs`, `opens.rs`), which gives the same answer
//! as before: any error, a grace period, a new lock-owner, a conflict
//! with a client whose lease may have run out (courtesy), a delegation to
//! recall, a file other servers share, the per-client caps.

use proto::nfs4::*;

use std::sync::Arc;

use super::locks::{needed_access, LockRange};
use super::opens::{OpenRecorded, OpenRequest};
use crate::state::delegations::{conflicting, Ask};
use crate::state::lease::Lease;
use crate::state::lockmgr::{Lock, LockError, LockKind, LockOwner};
use crate::state::opens::{upgraded_modes, OpenModes};
use crate::state::stateids::{
    find_entry, invalid_stateid, next_seqid, resource_error, v4_lock_owner, Entry, Kind, LockState, OwnerKey, OwnerSort,
};
use crate::state::{callback, FileKey, State4};

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
        if shard.ids.get(&l.open)?.open()?.access & needed_access(range.kind) == 0 {
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

    /// LOCK of a 4.1 lock-owner new on the file (`open_to_lock_owner4`),
    /// of session client `client`, under its open `open`: the owner, its
    /// lock stateid and the range in one hold of the client's part and
    /// then the file's shard. `None` for the tables' path: a grace period,
    /// any error, a conflict with another client's lock (whose lease may
    /// have run out), the client gone.
    pub(super) fn lock_new_in_shard(
        &self,
        client: u64,
        open: &stateid4,
        owner: &OwnerKey,
        range: &LockRange,
    ) -> Option<LOCK4res> {
        if range.reclaim || owner.client != client || self.may_be_in_grace() {
            return None;
        }
        let (ids, file) = (&self.stateids, range.file);
        let mut c = ids.clients.lock(client)?;
        ids.ensure_owner_in(&mut c, OwnerSort::Lock, owner, self.settings.max_owners_per_client, 1).ok()?;
        let mut shard = ids.shards.of_file(file);
        let lease = {
            let e = find_entry(&shard, self.boot, 1, Some(client), open).ok()?;
            let access = e.open()?.access;
            if e.file != file || e.lease.is_gone() || access & needed_access(range.kind) == 0 {
                return None;
            }
            e.lease.clone()
        };
        let lock_owner = v4_lock_owner(client, &owner.owner);
        match shard.locks.test(file, &lock_owner, range.kind, range.start, range.end) {
            None => {}
            // An NLM holder has no lease that could have run out.
            Some(c) if matches!(c.owner, LockOwner::Nlm { .. }) => return Some(LOCK4res::NFS4ERR_DENIED(c.denied())),
            Some(_) => return None,
        }
        let lock_other = match c.locks_by.get(&(owner.clone(), file)) {
            Some(other) => *other,
            None => {
                let kind = Kind::Lock(LockState { owner: owner.owner.clone(), open: open.other });
                let entry = Entry { seqid: 0, client, file, lease, kind };
                ids.insert_held(&mut c, &mut shard, self.boot, self.settings.max_stateids_per_client, 1, entry).ok()?
            }
        };
        let max = self.settings.max_locks_per_client;
        match shard.locks.lock(file, &lock_owner, range.kind, range.start, range.end, max) {
            Ok(()) => {
                let e = shard.ids.get_mut(&lock_other)?;
                e.seqid = next_seqid(e.seqid);
                Some(LOCK4res::NFS4_OK(LOCK4resok { lock_stateid: e.stateid(lock_other) }))
            }
            Err(err) => {
                // A lock stateid made for this request and left without
                // locks is not kept.
                let fresh = shard.ids.get(&lock_other).is_some_and(|e| e.seqid == 0);
                let fresh = fresh && !shard.locks.holds_on(file, &lock_owner);
                drop(shard);
                if fresh {
                    ids.remove_in(&mut c, &lock_other);
                }
                Some(match err {
                    LockError::Conflict(c) => LOCK4res::NFS4ERR_DENIED(c.denied()),
                    LockError::TooMany => LOCK4res::default(resource_error(1)),
                })
            }
        }
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

    /// DELEGRETURN of 4.1 delegation `sid` of session client `client` on
    /// `file` without the tables: `None` for the tables' path (which gives
    /// the error: a revoked delegation, another file, a stateid gone).
    pub(super) fn delegreturn_in_shard(&self, client: u64, sid: &stateid4, file: FileKey) -> Option<()> {
        {
            let shard = self.shards.of_other(&sid.other);
            let e = find_entry(&shard, self.boot, 1, Some(client), sid).ok()?;
            if !matches!(e.kind, Kind::Deleg(_)) || e.file != file {
                return None;
            }
        }
        // Returned meanwhile by another of the client's requests: the
        // tables' path gives the error.
        self.stateids.remove(&sid.other).map(drop)
    }

    /// OPEN (CLAIM_NULL or CLAIM_FH, no delegation claimed) of a 4.1
    /// session's client outside a grace period, on a file no other server
    /// shares, in one hold of the client's part and then the file's shard:
    /// the share check, the open recorded and the delegation decided
    /// together. `lease`: the client's, from its session. `None` sends the
    /// OPEN to the tables: another open in the way (its client may be a
    /// courtesy client to expire), another client's delegation to recall,
    /// the client gone, a per-client cap reached.
    pub(super) fn open_in_shard(
        &self,
        req: &OpenRequest,
        lease: &Arc<Lease>,
    ) -> Option<Result<OpenRecorded, nfsstat4>> {
        let (client, file, minor) = (req.client, req.file, req.minor);
        let ask = Ask::new(self, minor, req.share_access);
        // Asked before the client's part is held: it takes the sessions'
        // locks.
        let backchannel = ask.is_ok() && callback::has_backchannel(self, client);
        let ids = &self.stateids;
        let mut c = ids.clients.lock_or_new(client);
        if lease.is_gone() {
            drop(c);
            ids.clients.forget_if_empty(client);
            return None;
        }
        // May take a shard for a moment (an idle owner's kept CLOSE).
        ids.ensure_owner_in(&mut c, OwnerSort::Open, req.owner, self.settings.max_owners_per_client, minor).ok()?;
        let mut shard = ids.shards.of_file(file);
        let write = req.access & OPEN4_SHARE_ACCESS_WRITE != 0;
        if shard.on_file(file).any(|(_, e)| e.client != client && conflicting(e, write)) {
            return None;
        }
        let existing = c.opens_by.get(&(req.owner.clone(), file)).copied();
        let mine = existing.and_then(|o| shard.ids.get(&o)?.open().map(|o| (o.access, o.deny)));
        let (access, deny) = match upgraded_modes(mine, req.access, req.deny) {
            Ok(modes) => modes,
            Err(e) => return Some(Err(e)),
        };
        let in_the_way = shard.on_file(file).any(|(o, e)| {
            e.open().is_some_and(|e| e.deny & access != 0 || e.access & deny != 0) && Some(o) != existing.as_ref()
        });
        if in_the_way || shard.nlm_share_conflicts(file, None, access, deny) {
            return None;
        }
        let max = self.settings.max_stateids_per_client;
        let modes = OpenModes { access: req.access, deny: req.deny, confirmed: true, store_key: 0 };
        let opened = ids.open_held(&mut c, &mut shard, self.boot, max, minor, req.owner, file, modes, lease.clone());
        let stateid = opened.ok()?.stateid;
        let delegation = match ask {
            Err(none) => none,
            Ok(ask) if ask.blocked(client, shard.on_file(file)) || (ask.write && req.parent.dir_delegated) => {
                ask.none(open_none_delegation4::WND4_CONTENTION(false))
            }
            Ok(ask) if !backchannel || c.delegs >= self.settings.max_delegations_per_client => {
                ask.none(open_none_delegation4::WND4_RESOURCE(false))
            }
            Ok(ask) => {
                let entry = ask.entry(client, file, req.fh, lease.clone(), req.parent.dir);
                match ids.insert_held(&mut c, &mut shard, self.boot, max, minor, entry) {
                    Ok(other) => ask.granted(stateid4 { seqid: 1, other }),
                    Err(_) => ask.none(open_none_delegation4::WND4_RESOURCE(false)),
                }
            }
        };
        Some(Ok(OpenRecorded { stateid, confirmed: true, delegation }))
    }
}

//! Byte-range locks as NFSv4's LOCK, LOCKT, LOCKU and RELEASE_LOCKOWNER
//! take, test and release them (RFC 8881 sections 9.4, 18.10-18.12; RFC
//! 7530 16.37). Each method takes the tables' lock once, unless an
//! NFSv4.1 lock-owner's request is settled in its client's part and the
//! file's shard (`without_tables.rs`); LOCK's shared store is asked by the operation
//! around them.

use proto::nfs4::*;

use super::opens::{expire_courtesy, record, Answer};
use crate::state::lockmgr::{Lock, LockError, LockKind, LockOwner};
use crate::state::stateids::{
    resource_error, v4_lock_owner, Kind, LockState, Other, OwnerKey, OwnerSort, Replay, SeqCheck,
};
use crate::state::{FileKey, State4, Tables};

/// Whose lock a LOCK takes (RFC 8881 18.10's `locker4`), its stateids
/// resolved.
pub(crate) enum Locker {
    /// `open_to_lock_owner4`: the first lock of lock-owner `owner` on the
    /// file, under open stateid `open`, which creates the lock stateid.
    New { open: stateid4, open_seqid: seqid4, owner: OwnerKey, lock_seqid: seqid4 },
    /// `exist_lock_owner4`: a later lock of the owner of lock stateid `lock`.
    Existing { lock: stateid4, lock_seqid: seqid4 },
}

/// A LOCK's range and kind.
pub(crate) struct LockRange {
    pub file: FileKey,
    pub kind: LockKind,
    pub start: u64,
    pub end: u64,
    /// A reclaim (in the grace period).
    pub reclaim: bool,
}

impl Lock {
    /// The LOCK4denied that reports this lock as the conflict.
    pub(crate) fn denied(&self) -> LOCK4denied {
        let owner = match &self.owner {
            LockOwner::V4 { client, owner } => lock_owner4 { clientid: *client, owner: owner.clone() },
            LockOwner::Nlm { oh, .. } => lock_owner4 { clientid: 0, owner: oh.clone() },
        };
        let locktype = match self.kind {
            LockKind::Read => nfs_lock_type4::READ_LT,
            LockKind::Write => nfs_lock_type4::WRITE_LT,
        };
        LOCK4denied { offset: self.start, length: self.length(), locktype, owner }
    }
}

/// The share access a lock of `kind` needs of its open (RFC 8881
/// 18.10.4: NFS4ERR_OPENMODE otherwise).
pub(super) fn needed_access(kind: LockKind) -> u32 {
    match kind {
        LockKind::Write => OPEN4_SHARE_ACCESS_WRITE,
        LockKind::Read => OPEN4_SHARE_ACCESS_READ,
    }
}

fn status_of(r: &LOCK4res) -> nfsstat4 {
    match r {
        LOCK4res::NFS4_OK(_) => nfsstat4::NFS4_OK,
        LOCK4res::NFS4ERR_DENIED(_) => nfsstat4::NFS4ERR_DENIED,
        LOCK4res::default(s) => *s,
    }
}

/// The grace period's rule for LOCK and LOCKT (RFC 8881 8.4.2): reclaims
/// only in grace (and only by clients that may reclaim), new locks only
/// outside it.
pub(super) fn check_grace(st: &State4, t: &mut Tables, client: u64, reclaim: bool) -> Result<(), nfsstat4> {
    let in_grace = t.grace.in_grace(st.now());
    if reclaim && (!in_grace || !t.clients.may_reclaim(client)) {
        return Err(nfsstat4::NFS4ERR_NO_GRACE);
    }
    if !reclaim && in_grace {
        return Err(nfsstat4::NFS4ERR_GRACE);
    }
    Ok(())
}

/// A LOCK's NFSv4.0 seqid check for `key`: `Some` with the answer to
/// give at once (refused, or the kept reply of a retransmission).
fn lock_seqid(t: &Tables, sort: OwnerSort, key: &OwnerKey, seqid: seqid4) -> Option<Result<LOCK4res, nfsstat4>> {
    match t.stateids.seqid_check(sort, key, seqid) {
        Err(e) => Some(Err(e)),
        Ok(SeqCheck::Replay(Replay::Lock(r))) => Some(Ok(r)),
        Ok(SeqCheck::Replay(_)) => Some(Err(nfsstat4::NFS4ERR_BAD_SEQID)),
        Ok(SeqCheck::Go) => None,
    }
}

/// The client and state of lock stateid `other`, if it is one.
fn lock_of(ids: &crate::state::stateids::Stateids, other: &Other) -> Option<(u64, LockState)> {
    let e = ids.get(other)?;
    match &e.kind {
        Kind::Lock(l) => Some((e.client, l.clone())),
        _ => None,
    }
}

impl State4 {
    /// The lock-owner of lock stateid `sid`, if it is one.
    pub(crate) fn lock_owner_of(&self, sid: &stateid4) -> Option<LockOwner> {
        let t = self.lock_tables();
        let e = t.stateids.get(&sid.other)?;
        match &e.kind {
            Kind::Lock(l) => Some(v4_lock_owner(e.client, &l.owner)),
            _ => None,
        }
    }

    /// LOCK (RFC 8881 18.10; RFC 7530 16.10): takes `range` for `locker`,
    /// replacing what the owner held there (POSIX), creating the lock
    /// stateid with the owner's first lock on the file. `remote_conflict`:
    /// the lock another server's client holds in a shared store, which
    /// refuses this one as a conflict here would.
    pub(crate) fn lock4(
        &self,
        minor: u32,
        io_client: Option<u64>,
        locker: &Locker,
        range: &LockRange,
        remote_conflict: Option<Lock>,
    ) -> Answer<LOCK4res, ()> {
        if let (Some(client), None) = (io_client, &remote_conflict) {
            let settled = match locker {
                Locker::Existing { lock, .. } => self.lock_in_shard(client, lock, range),
                Locker::New { open, owner, .. } => self.lock_new_in_shard(client, open, owner, range),
            };
            if let Some(r) = settled {
                return Answer::Done(Ok(r), ());
            }
        }
        let mut t = self.lock_tables();
        // NFSv4.0 owners whose seqids this request advances.
        let mut seq: Vec<(OwnerSort, OwnerKey, u32)> = Vec::new();
        let (open_other, lock_owner_key, existing_lock) = match locker {
            Locker::New { open, open_seqid, owner, .. } => {
                if minor == 0 {
                    let found = t.stateids.get(&open.other).and_then(|e| Some((e.client, e.open()?.owner.clone())));
                    let Some((client, owner)) = found else {
                        let e = t.stateids.find(self.boot, 0, None, open).err();
                        return Answer::Early(Err(e.unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID)));
                    };
                    let okey = OwnerKey { client, owner };
                    if let Err(e) = t.clients.renew(okey.client, self.now()) {
                        return Answer::Early(Err(e));
                    }
                    if let Some(early) = lock_seqid(&t, OwnerSort::Open, &okey, *open_seqid) {
                        return Answer::Early(early);
                    }
                    seq.push((OwnerSort::Open, okey, *open_seqid));
                }
                (open.clone(), owner.clone(), None)
            }
            Locker::Existing { lock, lock_seqid: seqid } => {
                let Some((client, l)) = lock_of(&t.stateids, &lock.other) else {
                    let e = t.stateids.find(self.boot, minor, io_client, lock).err();
                    return Answer::Early(Err(e.unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID)));
                };
                let lkey = OwnerKey { client, owner: l.owner };
                let open = stateid4 { seqid: 0, other: l.open };
                if minor == 0 {
                    if let Err(e) = t.clients.renew(client, self.now()) {
                        return Answer::Early(Err(e));
                    }
                    if let Some(early) = lock_seqid(&t, OwnerSort::Lock, &lkey, *seqid) {
                        return Answer::Early(early);
                    }
                    seq.push((OwnerSort::Lock, lkey.clone(), *seqid));
                }
                (open, lkey, Some(lock.clone()))
            }
        };
        let r = (|| -> Result<LOCK4res, nfsstat4> {
            let client = match &existing_lock {
                None => {
                    // The open stateid as given (its seqid checked).
                    let e = t.stateids.find(self.boot, minor, io_client, &open_other)?;
                    let Some(o) = e.open() else { return Err(nfsstat4::NFS4ERR_BAD_STATEID) };
                    if e.file != range.file || !o.confirmed || e.client != lock_owner_key.client {
                        return Err(nfsstat4::NFS4ERR_BAD_STATEID);
                    }
                    e.client
                }
                Some(ls) => {
                    let e = t.stateids.find(self.boot, minor, io_client, ls)?;
                    if e.file != range.file {
                        return Err(nfsstat4::NFS4ERR_BAD_STATEID);
                    }
                    e.client
                }
            };
            t.clients.renew(client, self.now())?;
            check_grace(self, &mut t, client, range.reclaim)?;
            let access = t.stateids.get(&open_other.other).and_then(|e| e.open().map(|o| o.access)).unwrap_or(0);
            let (file, kind, start, end) = (range.file, range.kind, range.start, range.end);
            if access & needed_access(kind) == 0 {
                return Err(nfsstat4::NFS4ERR_OPENMODE);
            }
            let lock_other: Other = match &existing_lock {
                Some(ls) => ls.other,
                None => {
                    let max_owners = self.settings.max_owners_per_client;
                    t.stateids.ensure_owner(OwnerSort::Lock, &lock_owner_key, max_owners, minor)?;
                    let max = self.settings.max_stateids_per_client;
                    match t.stateids.lock_stateid(self.boot, max, minor, &lock_owner_key.owner, &open_other.other) {
                        Ok(o) => o,
                        Err(e) => {
                            t.stateids.forget_idle_owner(OwnerSort::Lock, &lock_owner_key);
                            return Err(e);
                        }
                    }
                }
            };
            let owner = v4_lock_owner(client, &lock_owner_key.owner);
            let max = self.settings.max_locks_per_client;
            let mut res = match remote_conflict {
                Some(c) => Err(LockError::Conflict(c)),
                None => t.stateids.lock_range(&lock_other, file, &owner, kind, start, end, max)?,
            };
            if let Err(LockError::Conflict(c)) = &res {
                if let Some(holder) = c.owner.client() {
                    if expire_courtesy(self, &mut t, client, &[holder]) {
                        res = t.stateids.lock_range(&lock_other, file, &owner, kind, start, end, max)?;
                    }
                }
            }
            match res {
                Ok(()) => Ok(LOCK4res::NFS4_OK(LOCK4resok { lock_stateid: t.stateids.bump(&lock_other) })),
                Err(e) => {
                    // A lock stateid made for this request and left without
                    // locks is not kept.
                    let fresh = t.stateids.get(&lock_other).is_some_and(|e| e.seqid == 0);
                    if fresh && !t.stateids.shards.of_file(file).locks.holds_on(file, &owner) {
                        t.stateids.remove(&lock_other);
                    }
                    match e {
                        LockError::Conflict(c) => Ok(LOCK4res::NFS4ERR_DENIED(c.denied())),
                        LockError::TooMany => Err(resource_error(minor)),
                    }
                }
            }
        })();
        let r = r.unwrap_or_else(LOCK4res::default);
        if minor == 0 {
            let status = status_of(&r);
            if let (Locker::New { lock_seqid, .. }, LOCK4res::NFS4_OK(_)) = (locker, &r) {
                // The new lock-owner's seqid stream starts here.
                seq.push((OwnerSort::Lock, lock_owner_key.clone(), *lock_seqid));
            }
            for (sort, key, seqid) in seq {
                t.stateids.seqid_record(sort, &key, seqid, status, Replay::Lock(r.clone()));
            }
        }
        Answer::Done(Ok(r), ())
    }

    /// LOCKT (RFC 8881 18.11): the lock of another owner than `owner`
    /// that conflicts with `kind` on `start..=end` of `file`, renewing
    /// `client`'s lease; creates no state. `minor` 1 or more: `client` is
    /// the session's, which SEQUENCE renewed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn lockt(
        &self,
        minor: u32,
        client: u64,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
    ) -> Result<Option<Lock>, nfsstat4> {
        if minor >= 1 {
            if let Some(found) = self.lockt_in_shard(file, owner, kind, start, end) {
                return Ok(found);
            }
        }
        let mut t = self.lock_tables();
        t.clients.renew(client, self.now())?;
        check_grace(self, &mut t, client, false)?;
        Ok(self.shards.of_file(file).locks.test(file, owner, kind, start, end))
    }

    /// LOCKU (RFC 8881 18.12): releases `start..=end` of `file` for the
    /// lock-owner of lock stateid `sid`, which stays valid. `Done`
    /// carries that owner, whose locks a shared store is to match.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn locku(
        &self,
        minor: u32,
        io_client: Option<u64>,
        sid: &stateid4,
        file: FileKey,
        seqid: seqid4,
        start: u64,
        end: u64,
    ) -> Answer<stateid4, LockOwner> {
        if let Some(client) = io_client {
            if let Some((stateid, owner)) = self.locku_in_shard(client, sid, file, start, end) {
                return Answer::Done(Ok(stateid), owner);
            }
        }
        let mut t = self.lock_tables();
        let Some((client, l)) = lock_of(&t.stateids, &sid.other) else {
            let e = t.stateids.find(self.boot, minor, io_client, sid).err();
            return Answer::Early(Err(e.unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID)));
        };
        let key = OwnerKey { client, owner: l.owner };
        if minor == 0 {
            if let Err(e) = t.clients.renew(client, self.now()) {
                return Answer::Early(Err(e));
            }
            match t.stateids.seqid_check(OwnerSort::Lock, &key, seqid) {
                Err(e) => return Answer::Early(Err(e)),
                Ok(SeqCheck::Replay(Replay::Locku(r))) => return Answer::Early(r),
                Ok(SeqCheck::Replay(_)) => return Answer::Early(Err(nfsstat4::NFS4ERR_BAD_SEQID)),
                Ok(SeqCheck::Go) => {}
            }
        }
        let owner = v4_lock_owner(client, &key.owner);
        let r = (|| {
            if t.stateids.find(self.boot, minor, io_client, sid)?.file != file {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
            t.clients.renew(client, self.now())?;
            t.stateids.shards.of_file(file).locks.unlock(file, &owner, start, end);
            Ok(t.stateids.bump(&sid.other))
        })();
        if minor == 0 {
            record(&mut t, OwnerSort::Lock, &key, seqid, &r, Replay::Locku);
        }
        Answer::Done(r, owner)
    }

    /// RELEASE_LOCKOWNER (RFC 7530 16.37): forgets `client`'s lock-owner
    /// `owner` and its lock stateids, unless it still holds locks
    /// (NFS4ERR_LOCKS_HELD).
    pub(crate) fn release_lockowner(&self, client: u64, owner: &bytes::Bytes) -> Result<(), nfsstat4> {
        let mut t = self.lock_tables();
        t.clients.renew(client, self.now())?;
        if self.shards.holds_any_lock(&v4_lock_owner(client, owner)) {
            return Err(nfsstat4::NFS4ERR_LOCKS_HELD);
        }
        let key = OwnerKey { client, owner: owner.clone() };
        for o in t.stateids.locks_of_owner(&key) {
            t.stateids.remove(&o);
        }
        t.stateids.drop_owner(OwnerSort::Lock, &key);
        Ok(())
    }
}

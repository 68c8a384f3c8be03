//! LOCK (RFC 8881 section 18.10; RFC 7530 16.10).
//!
//! POSIX semantics: a lock-owner's new lock replaces what it held in the
//! range (upgrade, downgrade, split, merge). The first lock of a
//! lock-owner on a file comes with the open stateid (open_to_lock_owner)
//! and creates the lock stateid; later ones name that stateid. Blocking
//! types (READW/WRITEW) are answered like the non-blocking ones.

use proto::nfs4::*;

use std::sync::Arc;

use super::open::{check_regular, client_of, expire_courtesy, file_key, io_client};
use super::status::stat4;
use super::Compound;
use crate::shared_locks;
use crate::state::lockmgr::{range_of, Lock, LockError, LockKind, LockOwner};
use crate::state::stateids::{resource_error, v4_lock_owner, Kind, OwnerKey, OwnerSort, Replay, SeqCheck};
use crate::state::{FileKey, Tables};

pub(super) fn lock_kind(t: nfs_lock_type4) -> LockKind {
    match t {
        nfs_lock_type4::READ_LT | nfs_lock_type4::READW_LT => LockKind::Read,
        nfs_lock_type4::WRITE_LT | nfs_lock_type4::WRITEW_LT => LockKind::Write,
    }
}

/// The LOCK4denied of a conflicting lock.
pub(super) fn denied(l: &Lock) -> LOCK4denied {
    let owner = match &l.owner {
        LockOwner::V4 { client, owner } => lock_owner4 { clientid: *client, owner: owner.clone() },
        LockOwner::Nlm { oh, .. } => lock_owner4 { clientid: 0, owner: oh.clone() },
    };
    let locktype = match l.kind {
        LockKind::Read => nfs_lock_type4::READ_LT,
        LockKind::Write => nfs_lock_type4::WRITE_LT,
    };
    LOCK4denied { offset: l.start, length: l.length(), locktype, owner }
}

/// Checks the grace period for LOCK and LOCKT: reclaims only in grace
/// (and only by clients that may reclaim), new locks only outside it.
pub(super) fn check_grace(cx: &Compound, t: &mut Tables, client: u64, reclaim: bool) -> Result<(), nfsstat4> {
    let in_grace = t.grace.in_grace(cx.state().now());
    if reclaim && (!in_grace || !t.clients.may_reclaim(client)) {
        return Err(nfsstat4::NFS4ERR_NO_GRACE);
    }
    if !reclaim && in_grace {
        return Err(nfsstat4::NFS4ERR_GRACE);
    }
    Ok(())
}

pub(super) fn run(cx: &mut Compound, args: LOCK4args) -> LOCK4res {
    let shared = match take_shared(cx, &args) {
        Ok(s) => s,
        Err(s) => return LOCK4res::default(s),
    };
    let remote_conflict = shared.as_ref().and_then(|s| s.conflict.clone());
    let r = run_inner(cx, args, remote_conflict).unwrap_or_else(LOCK4res::default);
    if let Some(s) = shared {
        if s.conflict.is_none() && !matches!(r, LOCK4res::NFS4_OK(_)) {
            // Taken in the store but refused here: give the store back
            // what this server's table holds.
            shared_locks::sync(&*s.fs, cx.state(), s.file, &s.owner, s.start, s.end);
        }
    }
    r
}

/// A LOCK on a file system other servers share, as taken in the store.
struct Shared {
    fs: Arc<dyn vfs::Vfs>,
    file: FileKey,
    owner: LockOwner,
    start: u64,
    end: u64,
    /// Another server's client holds a conflicting lock there.
    conflict: Option<Lock>,
}

/// On a shared file system, takes the lock in the store first, where the
/// locks other servers granted are (see `shared_locks`). `None` where no
/// other server shares the file system, or the request is malformed (the
/// checks that follow answer it).
fn take_shared(cx: &mut Compound, args: &LOCK4args) -> Result<Option<Shared>, nfsstat4> {
    let Some((start, end)) = range_of(args.offset, args.length) else { return Ok(None) };
    let Ok(obj) = cx.cobj(nfsstat4::NFS4ERR_ISDIR) else { return Ok(None) };
    if obj.fs().shared_store().is_none() {
        return Ok(None);
    }
    let (fs, file, id) = (obj.export.fs.clone(), file_key(&obj), obj.id);
    let owner = match &args.locker {
        locker4::TRUE(otl) => v4_lock_owner(client_of(cx, otl.lock_owner.clientid), &otl.lock_owner.owner),
        locker4::FALSE(el) => {
            let Ok(sid) = cx.resolve_stateid(&el.lock_stateid) else { return Ok(None) };
            let t = cx.state().lock_tables();
            match t.stateids.ids.get(&sid.other).map(|e| (e.client, &e.kind)) {
                Some((client, Kind::Lock(l))) => v4_lock_owner(client, &l.owner),
                _ => return Ok(None),
            }
        }
    };
    let kind = lock_kind(args.locktype);
    let conflict = match shared_locks::take(&*fs, id, &owner, kind, start, end).map_err(stat4)? {
        true => None,
        // Report the holder's range where the store tells it.
        false => Some(shared_locks::test(&*fs, id, &owner, kind, start, end).ok().flatten().unwrap_or(Lock {
            owner: shared_locks::another_server(),
            kind,
            start,
            end,
        })),
    };
    Ok(Some(Shared { fs, file, owner, start, end, conflict }))
}

fn status_of(r: &LOCK4res) -> nfsstat4 {
    match r {
        LOCK4res::NFS4_OK(_) => nfsstat4::NFS4_OK,
        LOCK4res::NFS4ERR_DENIED(_) => nfsstat4::NFS4ERR_DENIED,
        LOCK4res::default(s) => *s,
    }
}

/// `remote_conflict`: the lock another server's client holds in a shared
/// store, which refuses this one as a conflict here would.
fn run_inner(cx: &mut Compound, args: LOCK4args, remote_conflict: Option<Lock>) -> Result<LOCK4res, nfsstat4> {
    let st = cx.state();
    let minor = cx.minor;
    let (start, end) = range_of(args.offset, args.length).ok_or(nfsstat4::NFS4ERR_INVAL)?;
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    check_regular(cx, &obj)?;
    let file = file_key(&obj);
    let mut t = st.lock_tables();
    // NFSv4.0 owners whose seqids this request advances.
    let mut seq: Vec<(OwnerSort, OwnerKey, u32)> = Vec::new();
    let (open_other, lock_owner_key, existing_lock) = match &args.locker {
        locker4::TRUE(otl) => {
            let open_sid = cx.resolve_stateid(&otl.open_stateid)?;
            let e = t.stateids.ids.get(&open_sid.other);
            if minor == 0 {
                let Some(Kind::Open(o)) = e.map(|e| &e.kind) else {
                    return Err(t
                        .stateids
                        .find(st.boot, 0, None, &open_sid)
                        .err()
                        .unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID));
                };
                let okey = OwnerKey { client: e.map(|e| e.client).unwrap_or(0), owner: o.owner.clone() };
                t.clients.renew(okey.client, st.now())?;
                match t.stateids.seqid_check(OwnerSort::Open, &okey, otl.open_seqid)? {
                    SeqCheck::Replay(Replay::Lock(r)) => return Ok(r),
                    SeqCheck::Replay(_) => return Err(nfsstat4::NFS4ERR_BAD_SEQID),
                    SeqCheck::Go => {}
                }
                seq.push((OwnerSort::Open, okey, otl.open_seqid));
            }
            let client = client_of(cx, otl.lock_owner.clientid);
            let lkey = OwnerKey { client, owner: otl.lock_owner.owner.clone() };
            (open_sid, lkey, None)
        }
        locker4::FALSE(el) => {
            let lock_sid = cx.resolve_stateid(&el.lock_stateid)?;
            let Some((client, Kind::Lock(l))) = t.stateids.ids.get(&lock_sid.other).map(|e| (e.client, &e.kind)) else {
                return Err(t
                    .stateids
                    .find(st.boot, minor, io_client(cx), &lock_sid)
                    .err()
                    .unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID));
            };
            let lkey = OwnerKey { client, owner: l.owner.clone() };
            let open = stateid4 { seqid: 0, other: l.open };
            if minor == 0 {
                t.clients.renew(client, st.now())?;
                match t.stateids.seqid_check(OwnerSort::Lock, &lkey, el.lock_seqid)? {
                    SeqCheck::Replay(Replay::Lock(r)) => return Ok(r),
                    SeqCheck::Replay(_) => return Err(nfsstat4::NFS4ERR_BAD_SEQID),
                    SeqCheck::Go => {}
                }
                seq.push((OwnerSort::Lock, lkey.clone(), el.lock_seqid));
            }
            (open, lkey, Some(lock_sid))
        }
    };
    let r = (|| -> Result<LOCK4res, nfsstat4> {
        let client = match &existing_lock {
            None => {
                // The open stateid as given (its seqid checked).
                let e = t.stateids.find(st.boot, minor, io_client(cx), &open_other)?;
                let Some(o) = e.open() else { return Err(nfsstat4::NFS4ERR_BAD_STATEID) };
                if e.file != file || !o.confirmed || e.client != lock_owner_key.client {
                    return Err(nfsstat4::NFS4ERR_BAD_STATEID);
                }
                e.client
            }
            Some(ls) => {
                let e = t.stateids.find(st.boot, minor, io_client(cx), ls)?;
                if e.file != file {
                    return Err(nfsstat4::NFS4ERR_BAD_STATEID);
                }
                e.client
            }
        };
        t.clients.renew(client, st.now())?;
        check_grace(cx, &mut t, client, args.reclaim)?;
        let access = t.stateids.ids.get(&open_other.other).and_then(|e| e.open()).map(|o| o.access).unwrap_or(0);
        let kind = lock_kind(args.locktype);
        let needed = if kind == LockKind::Write { OPEN4_SHARE_ACCESS_WRITE } else { OPEN4_SHARE_ACCESS_READ };
        if access & needed == 0 {
            return Err(nfsstat4::NFS4ERR_OPENMODE);
        }
        let lock_other = match &existing_lock {
            Some(ls) => ls.other,
            None => {
                t.stateids.ensure_owner(OwnerSort::Lock, &lock_owner_key, st.settings.max_owners_per_client, minor)?;
                let r = t.stateids.lock_stateid(
                    st.boot,
                    st.settings.max_stateids_per_client,
                    minor,
                    &lock_owner_key.owner,
                    &open_other.other,
                );
                match r {
                    Ok(o) => o,
                    Err(e) => {
                        forget_idle_owner(&mut t, &lock_owner_key);
                        return Err(e);
                    }
                }
            }
        };
        let owner = v4_lock_owner(client, &lock_owner_key.owner);
        let max = st.settings.max_locks_per_client;
        let mut res = match remote_conflict {
            Some(c) => Err(LockError::Conflict(c)),
            None => t.locks.lock(file, &owner, kind, start, end, max),
        };
        if let Err(LockError::Conflict(c)) = &res {
            if let Some(holder) = c.owner.client() {
                if expire_courtesy(cx, &mut t, client, &[holder]) {
                    res = t.locks.lock(file, &owner, kind, start, end, max);
                }
            }
        }
        match res {
            Ok(()) => {
                let stateid = t.stateids.bump(&lock_other);
                Ok(LOCK4res::NFS4_OK(LOCK4resok { lock_stateid: stateid }))
            }
            Err(e) => {
                // A lock stateid made for this request and left without
                // locks is not kept.
                let fresh = t.stateids.ids.get(&lock_other).is_some_and(|e| e.seqid == 0);
                if fresh && !t.locks.holds_on(file, &owner) {
                    t.stateids.remove(&lock_other);
                }
                match e {
                    LockError::Conflict(c) => Ok(LOCK4res::NFS4ERR_DENIED(denied(&c))),
                    LockError::TooMany => Err(resource_error(minor)),
                }
            }
        }
    })();
    let r = r.unwrap_or_else(LOCK4res::default);
    if minor == 0 {
        let status = status_of(&r);
        if let (locker4::TRUE(otl), LOCK4res::NFS4_OK(_)) = (&args.locker, &r) {
            // The new lock-owner's seqid stream starts here.
            seq.push((OwnerSort::Lock, lock_owner_key.clone(), otl.lock_seqid));
        }
        for (sort, key, seqid) in seq {
            t.stateids.seqid_record(sort, &key, seqid, status, Replay::Lock(r.clone()));
        }
    }
    if let LOCK4res::NFS4_OK(ok) = &r {
        cx.current_stateid = Some(ok.lock_stateid.clone());
    }
    Ok(r)
}

fn forget_idle_owner(t: &mut Tables, key: &OwnerKey) {
    if t.stateids.lock_owners.get(key).is_some_and(|o| o.stateids == 0 && o.last.is_none()) {
        t.stateids.lock_owners.remove(key);
    }
}

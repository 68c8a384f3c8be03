//! LOCK (RFC 8881 section 18.10; RFC 7530 16.10).
//!
//! POSIX semantics: a lock-owner's new lock replaces what it held in the
//! range (upgrade, downgrade, split, merge). The first lock of a
//! lock-owner on a file comes with the open stateid (open_to_lock_owner)
//! and creates the lock stateid; later ones name that stateid. Blocking
//! types (READW/WRITEW) are answered like the non-blocking ones.

use proto::nfs4::*;

use std::sync::Arc;

use super::open::{check_regular, client_of, file_key, io_client};
use super::status::stat4;
use super::Compound;
use crate::shared_locks;
use crate::state::lockmgr::{range_of, Lock, LockKind, LockOwner};
use crate::state::stateids::{v4_lock_owner, OwnerKey};
use crate::state::{Answer, FileKey, LockRange, Locker};

pub(super) fn lock_kind(t: nfs_lock_type4) -> LockKind {
    match t {
        nfs_lock_type4::READ_LT | nfs_lock_type4::READW_LT => LockKind::Read,
        nfs_lock_type4::WRITE_LT | nfs_lock_type4::WRITEW_LT => LockKind::Write,
    }
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
            let Some(owner) = cx.state().lock_owner_of(&sid) else { return Ok(None) };
            owner
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

/// `remote_conflict`: the lock another server's client holds in a shared
/// store, which refuses this one as a conflict here would.
fn run_inner(cx: &mut Compound, args: LOCK4args, remote_conflict: Option<Lock>) -> Result<LOCK4res, nfsstat4> {
    let st = cx.state();
    let minor = cx.minor;
    let (start, end) = range_of(args.offset, args.length).ok_or(nfsstat4::NFS4ERR_INVAL)?;
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    check_regular(cx, &obj)?;
    let file = file_key(&obj);
    let locker = match &args.locker {
        locker4::TRUE(otl) => Locker::New {
            open: cx.resolve_stateid(&otl.open_stateid)?,
            open_seqid: otl.open_seqid,
            owner: OwnerKey { client: client_of(cx, otl.lock_owner.clientid), owner: otl.lock_owner.owner.clone() },
            lock_seqid: otl.lock_seqid,
        },
        locker4::FALSE(el) => {
            Locker::Existing { lock: cx.resolve_stateid(&el.lock_stateid)?, lock_seqid: el.lock_seqid }
        }
    };
    let range = LockRange { file, kind: lock_kind(args.locktype), start, end, reclaim: args.reclaim };
    let r = match st.lock4(minor, io_client(cx), &locker, &range, remote_conflict) {
        Answer::Early(r) => return r,
        Answer::Done(r, ()) => r?,
    };
    if let LOCK4res::NFS4_OK(ok) = &r {
        cx.current_stateid = Some(ok.lock_stateid.clone());
    }
    Ok(r)
}

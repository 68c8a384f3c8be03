//! The stateid check of I/O (READ, WRITE, SETATTR of the size): in the
//! file's shard alone where it can be settled there, else under the
//! tables ([`check_io`]).

use bytes::Bytes;
use proto::nfs4::*;

use super::{special, v4_lock_owner, Entry, IoKind, Kind, Special};
use crate::state::lockmgr::{LockKind, LockOwner};
use crate::state::shards::{shard_of_file, shard_of_other, FileShard, FileShards};
use crate::state::{FileKey, State4, Tables};

/// The rules of RFC 8881 8.2.4 for an ordinary stateid, in the shard it
/// names: stale (4.0) or bad (4.1) from another server instance, bad when
/// another client's, DELEG_REVOKED (4.1) for revoked delegations, and the
/// seqid rules (in 4.1 seqid 0 means "the current one"). `Err(None)` when
/// the shard does not hold it (the caller tells an expired one from a bad
/// one).
pub(in crate::state) fn find_entry<'a>(
    shard: &'a FileShard,
    boot: u32,
    minor: u32,
    client: Option<u64>,
    s: &stateid4,
) -> Result<&'a Entry, Option<nfsstat4>> {
    // The special stateids name no state: an operation that needs
    // state gets BAD_STATEID for them, not STALE.
    if s.other == [0; 12] || s.other == [0xff; 12] {
        return Err(Some(nfsstat4::NFS4ERR_BAD_STATEID));
    }
    let stamp = u32::from_be_bytes([s.other[0], s.other[1], s.other[2], s.other[3]]);
    if stamp != boot {
        // Only an earlier instance can have handed it out; a stamp
        // from after our boot is forged.
        let stale = minor == 0 && stamp < boot;
        return Err(Some(if stale { nfsstat4::NFS4ERR_STALE_STATEID } else { nfsstat4::NFS4ERR_BAD_STATEID }));
    }
    let e = shard.ids.get(&s.other).ok_or(None)?;
    if client.is_some_and(|c| c != e.client) {
        return Err(Some(nfsstat4::NFS4ERR_BAD_STATEID));
    }
    if let Kind::Deleg(d) = &e.kind {
        if d.revoked {
            return Err(Some(if minor == 0 { nfsstat4::NFS4ERR_BAD_STATEID } else { nfsstat4::NFS4ERR_DELEG_REVOKED }));
        }
    }
    if minor >= 1 && s.seqid == 0 {
        return Ok(e);
    }
    if s.seqid > e.seqid {
        return Err(Some(nfsstat4::NFS4ERR_BAD_STATEID));
    }
    if s.seqid < e.seqid {
        return Err(Some(nfsstat4::NFS4ERR_OLD_STATEID));
    }
    Ok(e)
}

/// The part of the stateid check of I/O that the file's shard answers
/// alone: the stateid itself, its open's access (OPENMODE) and other
/// opens' deny modes (LOCKED). The stateid's entry, `None` for a special
/// stateid; `Err(None)` when the shard does not hold the stateid.
fn check_in_shard<'a>(
    shard: &'a FileShard,
    boot: u32,
    client: Option<u64>,
    stateid: &stateid4,
    sp: Option<Special>,
    file: FileKey,
    write: bool,
) -> Result<Option<&'a Entry>, Option<nfsstat4>> {
    let minor = if client.is_some() { 1 } else { 0 };
    if let Some(sp) = sp {
        let bypass = sp == Special::Bypass && !write;
        if !bypass {
            let deny = if write { OPEN4_SHARE_DENY_WRITE } else { OPEN4_SHARE_DENY_READ };
            if shard.on_file(file).any(|(_, e)| e.open().is_some_and(|o| o.deny & deny != 0)) {
                return Err(Some(nfsstat4::NFS4ERR_LOCKED));
            }
        }
        return Ok(None);
    }
    let e = find_entry(shard, boot, minor, client, stateid)?;
    if e.file != file {
        return Err(Some(nfsstat4::NFS4ERR_BAD_STATEID));
    }
    let (access, open_other) = match &e.kind {
        Kind::Open(o) => {
            if !o.confirmed {
                return Err(Some(nfsstat4::NFS4ERR_BAD_STATEID));
            }
            (o.access, Some(stateid.other))
        }
        Kind::Lock(l) => {
            // A lock stateid's open is on the same file, so in this shard.
            let o = shard.ids.get(&l.open).and_then(|e| e.open()).ok_or(Some(nfsstat4::NFS4ERR_BAD_STATEID))?;
            (o.access, Some(l.open))
        }
        Kind::Deleg(d) => (if d.write { OPEN4_SHARE_ACCESS_BOTH } else { OPEN4_SHARE_ACCESS_READ }, None),
    };
    if write && access & OPEN4_SHARE_ACCESS_WRITE == 0 {
        return Err(Some(nfsstat4::NFS4ERR_OPENMODE));
    }
    if !write && access & OPEN4_SHARE_ACCESS_READ == 0 {
        // Reading through a write-only open is allowed (clients read to
        // fill partial pages), but not past another open's DENY_READ.
        let denied = shard
            .on_file(file)
            .any(|(o, e)| Some(*o) != open_other && e.open().is_some_and(|x| x.deny & OPEN4_SHARE_DENY_READ != 0));
        if denied {
            return Err(Some(nfsstat4::NFS4ERR_LOCKED));
        }
    }
    Ok(Some(e))
}

/// The stateid check of I/O made on the file's shard alone, without the
/// tables: true when the I/O may go on. `client` is the session's (4.1)
/// or `None` (4.0). False sends the caller to [`check_io`] under the
/// tables, which gives the error or does what the shard cannot: recalling
/// another client's delegation, telling an expired stateid from a bad
/// one, giving LOCKED for another owner's byte-range lock
/// (`mandatory_locks`). In 4.1
/// the compound's SEQUENCE renewed the session's client, the only one a
/// 4.1 stateid is usable by; in 4.0 the stateid's client's lease is
/// renewed here, through the entry, unless its record is gone.
pub(in crate::state) fn io_allowed_by_shard(
    st: &State4,
    shards: &FileShards,
    client: Option<u64>,
    stateid: &stateid4,
    file: FileKey,
    kind: IoKind,
    range: (u64, u64),
) -> bool {
    let Ok(sp) = special(stateid) else { return false };
    let i = shard_of_file(file);
    if sp.is_none() && shard_of_other(&stateid.other) != i {
        return false;
    }
    let write = kind == IoKind::Write;
    let shard = shards.lock(i);
    let Ok(entry) = check_in_shard(&shard, st.boot, client, stateid, sp, file, write) else { return false };
    if locked_out(st, &shard, file, entry, write, range) {
        return false;
    }
    // Whose I/O it is: the stateid's client, or the session's for a
    // special stateid (`None`, as for NFSv3: every delegation is another's).
    let requester = entry.map(|e| e.client).or(client);
    let in_the_way = shard
        .on_file(file)
        .any(|(_, e)| Some(e.client) != requester && crate::state::delegations::conflicting(e, write));
    if in_the_way {
        return false;
    }
    match entry {
        // NFSv4.0: the stateid's client renews here, unless its record is
        // gone (the tables give the error).
        Some(e) if client.is_none() => {
            if e.lease.is_gone() {
                return false;
            }
            e.lease.renew(st.now());
            true
        }
        _ => true,
    }
}

/// Checks the stateid of READ, WRITE or SETATTR(size) on `file`
/// (RFC 8881 8.2 and 9.1.4): the special stateids, the seqid rules, share
/// reservations (OPENMODE for the stateid's own access, LOCKED for other
/// opens' deny modes against special stateids), and other clients'
/// delegations (recalled, then DELAY), and, with `mandatory_locks`,
/// other lock-owners' byte-range locks over `range` (offset, length).
/// `client` is the session's client (4.1) or `None` (4.0). The
/// stateid's client's lease is renewed.
pub(in crate::state) fn check_io(
    st: &State4,
    t: &mut Tables,
    client: Option<u64>,
    stateid: &stateid4,
    file: FileKey,
    kind: IoKind,
    range: (u64, u64),
) -> Result<(), nfsstat4> {
    let now = st.now();
    let write = kind == IoKind::Write;
    let sp = special(stateid)?;
    if sp.is_some() {
        if let Some(c) = client {
            t.clients.renew(c, now)?;
        }
    }
    // The stateid's client and the lock-owner doing the I/O (only a lock
    // stateid names one), taken out before the shard is let go.
    let found = {
        let i = if sp.is_some() { shard_of_file(file) } else { shard_of_other(&stateid.other) };
        let shard = t.stateids.shards.lock(i);
        check_in_shard(&shard, st.boot, client, stateid, sp, file, write).and_then(|e| {
            // The stateid's file is the shard's (`check_in_shard`), and so
            // are its locks.
            if locked_out(st, &shard, file, e, write, range) {
                return Err(Some(nfsstat4::NFS4ERR_LOCKED));
            }
            Ok(e.map(|e| e.client))
        })
    };
    let owner = match found {
        Ok(owner) => owner,
        Err(Some(e)) => return Err(e),
        Err(None) => {
            return Err(t.stateids.unknown(&stateid.other));
        }
    };
    if let Some(owner) = owner {
        t.clients.renew(owner, now)?;
    }
    crate::state::delegations::recall_conflicting(st, t, file, owner.or(client), write)
}

/// The lock-owner whose I/O a stateid's is: only a lock stateid names one.
fn lock_owner_of(e: &Entry) -> Option<LockOwner> {
    match &e.kind {
        Kind::Lock(l) => Some(v4_lock_owner(e.client, &l.owner)),
        _ => None,
    }
}

/// With `mandatory_locks`, whether a lock-owner other than the one of
/// `entry` (the I/O's stateid; none for I/O under an open, delegation or
/// special stateid, which no lock belongs to) holds a lock over `range`
/// that the I/O conflicts with (NFS4ERR_LOCKED): any lock for a write, a
/// write lock for a read. `shard` is the file's. Without
/// `mandatory_locks` it costs one test of a setting.
fn locked_out(
    st: &State4,
    shard: &FileShard,
    file: FileKey,
    entry: Option<&Entry>,
    write: bool,
    (offset, length): (u64, u64),
) -> bool {
    if !st.settings.mandatory_locks || length == 0 {
        return false;
    }
    let owner = entry.and_then(lock_owner_of);
    let owner = owner.as_ref();
    let (start, end) = crate::state::lockmgr::range_of(offset, length).unwrap_or((offset, u64::MAX));
    let nobody = LockOwner::V4 { client: u64::MAX, owner: Bytes::new() };
    let kind = if write { LockKind::Write } else { LockKind::Read };
    shard.locks.test(file, owner.unwrap_or(&nobody), kind, start, end).is_some()
}

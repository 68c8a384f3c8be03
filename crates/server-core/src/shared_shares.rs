//! Share reservations (OPEN's deny modes) on a file system other servers
//! share (several heads over one store, [`vfs::Vfs::shared`]).
//!
//! This server's open table only knows the opens it granted, so on such a
//! file system every open's access and deny modes are also held in the
//! store ([`vfs::Vfs::share_reserve`]), where the other servers' are. An
//! OPEN takes them there once its own table found no conflict, before it
//! is recorded, and an OPEN that fails after that puts the store back; a
//! CLOSE releases an open's denials there before it answers, so that an
//! open another client makes right after is not refused by them;
//! OPEN_DOWNGRADE narrows them; the rest (a CLOSE's accesses, the opens
//! that go all at once when a lease expires or clients are handed to
//! another head) are queued by the table and released after the request,
//! as byte-range locks are.

use proto::nfs4::nfsstat4;
use vfs::{FileId, Vfs};

use crate::ops::v4::status::stat4;
use crate::state::stateids::{Other, Stateids};

/// A reservation taken in the store for an OPEN not yet recorded.
pub(crate) struct Reserved {
    /// The open's store key (0: the file system is not shared).
    pub key: u64,
    /// What the owner's open held there before (0, 0 for a new open).
    before: (u32, u32),
}

/// Holds `access`/`deny` in the store for the open `existing` upgrades
/// (or a new one), with the tables locked: NFS4ERR_SHARE_DENIED when
/// another server's open conflicts.
pub(crate) fn reserve(
    fs: &dyn Vfs,
    id: FileId,
    ids: &mut Stateids,
    boot: u32,
    existing: Option<&Other>,
    access: u32,
    deny: u32,
) -> Result<Reserved, nfsstat4> {
    if !fs.shared() {
        return Ok(Reserved { key: 0, before: (0, 0) });
    }
    let held = existing.and_then(|o| ids.ids.get(o)).and_then(|e| e.open()).map(|o| (o.store_key, o.access, o.deny));
    match held {
        Some((key, held_access, held_deny)) if key != 0 => {
            reserve_new(fs, id, key, access, deny).map(|r| Reserved { before: (held_access, held_deny), ..r })
        }
        _ => reserve_new(fs, id, ids.new_store_key(boot), access, deny),
    }
}

/// Holds `access`/`deny` in the store for a new open with store key
/// `key`: NFS4ERR_SHARE_DENIED when another server's open conflicts.
pub(crate) fn reserve_new(fs: &dyn Vfs, id: FileId, key: u64, access: u32, deny: u32) -> Result<Reserved, nfsstat4> {
    match fs.share_reserve(id, key, access, deny) {
        Ok(true) => Ok(Reserved { key, before: (0, 0) }),
        Ok(false) => Err(nfsstat4::NFS4ERR_SHARE_DENIED),
        Err(e) => Err(stat4(e)),
    }
}

/// Puts the store back as it was before [`reserve`], for an OPEN that
/// failed after it.
pub(crate) fn undo(fs: &dyn Vfs, id: FileId, r: &Reserved) {
    if r.key != 0 {
        set(fs, id, r.key, r.before.0, r.before.1);
    }
}

/// Makes the store hold `access`/`deny` for the open with store key
/// `key` (both 0: none); a failure is logged: it leaves the store holding
/// more than the table, which refuses more, never less.
pub(crate) fn set(fs: &dyn Vfs, id: FileId, key: u64, access: u32, deny: u32) {
    if key == 0 {
        return;
    }
    if let Err(e) = fs.share_reserve(id, key, access, deny) {
        tracing::warn!(file = id, error = %e, "could not bring the shared store's share reservation in line with this server's");
    }
}

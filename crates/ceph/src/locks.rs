//! Byte-range locks taken in CephFS itself, so that the MDS arbitrates
//! between heads: a lock one head grants conflicts with what a client of
//! another head asks for.
//!
//! libcephfs ties a lock to the open file it was taken through and drops
//! every lock of that file when it is closed, so a file with locks is kept
//! referenced (with its open file) outside the bounded inode cache until
//! its owners have released all of them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use vfs::{FileId, RangeLock, VfsResult};

use crate::fs::CephFs;
use crate::mount::error;
use crate::nodes::Node;
use crate::shares::{ShareModes, SHARE_BYTES};

/// A file with locks, kept open, and the owners that hold some.
type Locking = (Arc<Node>, HashSet<u64>);

/// Files with locks.
#[derive(Default)]
pub(crate) struct Locked {
    files: Mutex<HashMap<FileId, Locking>>,
    /// Share reservations held (see `shares`), per (file, owner).
    pub(crate) shares: Mutex<HashMap<(FileId, u64), ShareModes>>,
}

impl Locked {
    pub fn len(&self) -> usize {
        self.files.lock().len()
    }

    /// Keeps file `id` (node `n`) open while `owner` holds a lock on it.
    pub(crate) fn hold(&self, id: FileId, n: &Arc<Node>, owner: u64) {
        self.files.lock().entry(id).or_insert_with(|| (n.clone(), HashSet::new())).1.insert(owner);
    }

    /// The node of file `id` while some owner holds a lock on it: still
    /// there when the file has been removed meanwhile.
    pub(crate) fn node(&self, id: FileId) -> Option<Arc<Node>> {
        self.files.lock().get(&id).map(|(n, _)| n.clone())
    }

    /// `owner` holds no lock on `id` any more.
    pub(crate) fn release(&self, id: FileId, owner: u64) {
        let mut files = self.files.lock();
        if let Some((_, owners)) = files.get_mut(&id) {
            owners.remove(&owner);
            if owners.is_empty() {
                files.remove(&id);
            }
        }
    }
}

/// The CephFS `flock` of `lock` on `start..=end` (NFS ranges, `end`
/// inclusive), or `None` when the range starts at or beyond the bytes that
/// carry share reservations ([`SHARE_BYTES`], just below the end of
/// CephFS's signed 64-bit offsets): no real file reaches there, so such a
/// lock is not taken in the store. A range ending beyond them stops short
/// of them, so that a whole-file lock never meets a share reservation.
fn flock_of(lock: RangeLock, start: u64, end: u64) -> Option<libc::flock> {
    let l_start = i64::try_from(start).ok().filter(|s| *s < SHARE_BYTES)?;
    let l_end = i64::try_from(end).map_or(SHARE_BYTES - 1, |e| e.min(SHARE_BYTES - 1));
    Some(flock(lock, l_start, l_end - l_start + 1))
}

/// A CephFS `flock` of `lock` on `len` bytes from `l_start`.
pub(crate) fn flock(lock: RangeLock, l_start: i64, l_len: i64) -> libc::flock {
    // SAFETY: a plain C struct, for which all-zero is valid.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = match lock {
        RangeLock::Read => libc::F_RDLCK,
        RangeLock::Write => libc::F_WRLCK,
        RangeLock::Unlock => libc::F_UNLCK,
    } as i16;
    fl.l_whence = libc::SEEK_SET as i16;
    fl.l_start = l_start;
    fl.l_len = l_len;
    fl
}

impl CephFs {
    pub(crate) fn do_range_lock(
        &self,
        id: FileId,
        owner: u64,
        lock: RangeLock,
        start: u64,
        end: u64,
    ) -> VfsResult<bool> {
        let Some(mut fl) = flock_of(lock, start, end) else { return Ok(true) };
        let whole_file = fl.l_start == 0 && fl.l_len == SHARE_BYTES;
        let n = self.node(id)?;
        let fh = n.fh()?;
        // SAFETY: an open file of this mount and a valid flock; no sleep.
        let rc = unsafe { (self.m.api.ceph_ll_setlk)(self.m.cm, fh, &mut fl, owner, 0) };
        match -rc {
            0 => {}
            libc::EAGAIN | libc::EACCES => return Ok(false),
            e => return Err(error(e)),
        }
        match lock {
            RangeLock::Read | RangeLock::Write => self.locked.hold(id, &n, owner),
            // Only a release of the whole file says the owner holds none;
            // a partial one keeps the file referenced (harmless).
            RangeLock::Unlock if whole_file => self.locked.release(id, owner),
            RangeLock::Unlock => {}
        }
        Ok(true)
    }

    /// Asks the MDS (F_GETLK) for a lock of another owner, on any head,
    /// that conflicts with `lock` on `start..=end`.
    pub(crate) fn do_range_test(
        &self,
        id: FileId,
        owner: u64,
        lock: RangeLock,
        start: u64,
        end: u64,
    ) -> VfsResult<Option<(RangeLock, u64, u64)>> {
        let Some(mut fl) = flock_of(lock, start, end) else { return Ok(None) };
        let n = self.node(id)?;
        let fh = n.fh()?;
        // SAFETY: an open file of this mount and a valid flock.
        let rc = unsafe { (self.m.api.ceph_ll_getlk)(self.m.cm, fh, &mut fl, owner) };
        if rc < 0 {
            return Err(error(-rc));
        }
        let kind = match i32::from(fl.l_type) {
            libc::F_RDLCK => RangeLock::Read,
            libc::F_WRLCK => RangeLock::Write,
            _ => return Ok(None),
        };
        let held_start = u64::try_from(fl.l_start).unwrap_or(0);
        // A lock that runs up to the share bytes was taken to the end.
        let held_end = match u64::try_from(fl.l_len) {
            Ok(len) if len > 0 && fl.l_start.saturating_add(fl.l_len) < SHARE_BYTES => held_start + len - 1,
            _ => u64::MAX,
        };
        Ok(Some((kind, held_start, held_end)))
    }
}

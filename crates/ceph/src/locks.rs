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

/// A file with locks, kept open, and the owners that hold some.
type Held = (Arc<Node>, HashSet<u64>);

/// Files with locks.
#[derive(Default)]
pub(crate) struct Locked {
    files: Mutex<HashMap<FileId, Held>>,
}

impl Locked {
    pub fn len(&self) -> usize {
        self.files.lock().len()
    }
}

/// The CephFS `flock` of `lock` on `start..=end` (NFS ranges, `end`
/// inclusive), or `None` when the range starts beyond CephFS's signed
/// 64-bit offsets: no real file reaches there, so such a lock is not
/// taken in the store. A range ending beyond them runs to the end of the
/// file (`l_len` 0), as the NFS range does in practice.
fn flock_of(lock: RangeLock, start: u64, end: u64) -> Option<libc::flock> {
    let l_start = i64::try_from(start).ok()?;
    let l_len = match i64::try_from(end) {
        Ok(e) if e < i64::MAX => e - l_start + 1,
        _ => 0,
    };
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
    Some(fl)
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
        let whole_file = fl.l_start == 0 && fl.l_len == 0;
        let n = self.node(id)?;
        let fh = n.fh()?;
        // SAFETY: an open file of this mount and a valid flock; no sleep.
        let rc = unsafe { (self.m.api.ceph_ll_setlk)(self.m.cm, fh, &mut fl, owner, 0) };
        match -rc {
            0 => {}
            libc::EAGAIN | libc::EACCES => return Ok(false),
            e => return Err(error(e)),
        }
        let mut files = self.locked.files.lock();
        match lock {
            RangeLock::Read | RangeLock::Write => {
                files.entry(id).or_insert_with(|| (n.clone(), HashSet::new())).1.insert(owner);
            }
            // Only a release of the whole file says the owner holds none;
            // a partial one keeps the file referenced (harmless).
            RangeLock::Unlock if whole_file => {
                if let Some((_, owners)) = files.get_mut(&id) {
                    owners.remove(&owner);
                    if owners.is_empty() {
                        files.remove(&id);
                    }
                }
            }
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
        let held_end = match u64::try_from(fl.l_len) {
            Ok(len) if len > 0 => held_start.saturating_add(len - 1),
            _ => u64::MAX,
        };
        Ok(Some((kind, held_start, held_end)))
    }
}

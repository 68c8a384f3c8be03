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

impl CephFs {
    pub(crate) fn do_range_lock(
        &self,
        id: FileId,
        owner: u64,
        lock: RangeLock,
        start: u64,
        end: u64,
    ) -> VfsResult<bool> {
        // CephFS ranges are signed 64-bit: a lock starting beyond them
        // cannot be taken there (no real file reaches it); one ending
        // beyond them runs to the end of the file, as the NFS range does
        // in practice.
        let Ok(l_start) = i64::try_from(start) else { return Ok(true) };
        let l_len = match i64::try_from(end) {
            Ok(e) if e < i64::MAX => e - l_start + 1,
            _ => 0,
        };
        let n = self.node(id)?;
        let fh = n.fh()?;
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
            RangeLock::Unlock if start == 0 && l_len == 0 => {
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
}

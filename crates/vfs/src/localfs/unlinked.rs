//! Files kept by id after their last name is removed ([`KeepUnlinked`]).
//!
//! A removed file lives on while an fd holds it, and `/proc/self/fd/N` of
//! an O_PATH fd reopens even an unlinked file: holding the object's O_PATH
//! fd is all it takes. The handle cache cannot be that hold (it evicts,
//! and drops fds whose files have no links left, which is right for files
//! removed behind the server's back), so kept files have a table of their
//! own, consulted only where a resolve would otherwise fail.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use parking_lot::Mutex;

use super::resolve::Obj;
use super::{sys, LocalFs};
use crate::{FileId, KeepUnlinked, Kept, VfsResult};

struct Entry {
    generation: u64,
    fd: Arc<OwnedFd>,
    /// How many [`Kept`] values hold it.
    holders: usize,
}

/// The kept files of one LocalFs, by id.
#[derive(Default)]
pub(crate) struct KeptFiles(Mutex<HashMap<FileId, Entry>>);

/// One hold on a kept file; the last one dropped closes the fd, which
/// frees the file's space if it has no name left.
struct Hold {
    files: Arc<KeptFiles>,
    id: FileId,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut map = self.files.0.lock();
        let last = map.get_mut(&self.id).is_some_and(|e| {
            e.holders -= 1;
            e.holders == 0
        });
        if last {
            // Closed outside the lock: closing the last fd of an unlinked
            // file frees its blocks, which can take a while.
            let gone = map.remove(&self.id);
            drop(map);
            drop(gone);
        }
    }
}

impl KeptFiles {
    /// The kept object `id`, if one is kept.
    pub(crate) fn get(&self, id: FileId) -> VfsResult<Option<Obj>> {
        let fd = match self.0.lock().get(&id) {
            Some(e) => e.fd.clone(),
            None => return Ok(None),
        };
        let stx = sys::statx_fd(fd.as_fd())?;
        Ok(Some(Obj { fd, stx }))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.lock().is_empty()
    }
}

impl KeepUnlinked for LocalFs {
    fn keep_unlinked(&self, id: FileId) -> VfsResult<Kept> {
        let o = self.resolve(id)?;
        let generation = sys::birth_generation(&o.stx);
        let mut map = self.kept.0.lock();
        let e = map.entry(id).or_insert(Entry { generation, fd: o.fd.clone(), holders: 0 });
        if e.generation != generation {
            // Only after the old object's last hold went (an inode number
            // is not reused while an fd holds it): start afresh.
            *e = Entry { generation, fd: o.fd, holders: 0 };
        }
        e.holders += 1;
        Ok(Kept::new(Hold { files: self.kept.clone(), id }))
    }
}

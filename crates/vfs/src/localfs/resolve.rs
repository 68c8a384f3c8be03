//! From an id to an O_PATH fd of the object, beneath the root.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{OFlags, Statx};
use rustix::io::Errno;

use super::ids::Change;
use super::sys;
use super::LocalFs;
use crate::{Attrs, FileId, FileType, VfsError, VfsResult};

/// A resolved object: an O_PATH fd (shared with the handle cache) and
/// what statx said about it.
pub(crate) struct Obj {
    pub(crate) fd: Arc<OwnedFd>,
    pub(crate) stx: Statx,
}

impl Obj {
    pub(crate) fn ftype(&self) -> FileType {
        sys::file_type(&self.stx)
    }
}

/// Errors that say the remembered place is wrong, as opposed to the
/// system being short of something right now.
fn definitive(e: Errno) -> bool {
    !matches!(e, Errno::MFILE | Errno::NFILE | Errno::NOMEM | Errno::IO | Errno::AGAIN | Errno::INTR)
}

impl LocalFs {
    pub(crate) fn attrs_of(&self, stx: &Statx) -> Attrs {
        sys::attrs(stx, self.fsid, sys::birth_generation(stx))
    }

    /// The object `id` names: what this request resolved last if that was
    /// `id` (see [`super::recent`]), else one statx of its cached fd, else
    /// a walk of its remembered names.
    pub(crate) fn resolve(&self, id: FileId) -> VfsResult<Obj> {
        if let Some((stx, Some(fd))) = self.take_recent(id, true) {
            return Ok(Obj { fd, stx });
        }
        self.resolve_fresh(id)
    }

    /// [`Self::resolve`] without what the request kept.
    fn resolve_fresh(&self, id: FileId) -> VfsResult<Obj> {
        match self.resolve_depth(id, 0) {
            // Perhaps a place the id journal lost in a crash.
            Err(VfsError::Stale) if self.recover() => self.resolve_depth(id, 0),
            r => r,
        }
    }

    /// Resolves a directory; `NotDir` if `id` is something else.
    pub(crate) fn resolve_dir(&self, id: FileId) -> VfsResult<Obj> {
        let o = self.resolve(id)?;
        if o.ftype() != FileType::Directory {
            return Err(VfsError::NotDir);
        }
        Ok(o)
    }

    /// Whether `id` resolves from the handle cache (one statx on an open
    /// fd, no walk and no disk).
    pub(crate) fn is_cached(&self, id: FileId) -> bool {
        id == self.root_id || self.handles.contains(id)
    }

    fn resolve_depth(&self, id: FileId, depth: usize) -> VfsResult<Obj> {
        if id == self.root_id {
            let stx = sys::statx_fd(self.root_fd.as_fd())?;
            return Ok(Obj { fd: self.root_fd.clone(), stx });
        }
        if let Some(h) = self.handles.get(id) {
            let stx = sys::statx_fd(h.fd.as_fd())?;
            // No links left: removed behind our back. Walk the names, which
            // finds a new object under the id or says Stale, and let the fd
            // go so the removed file's space is freed.
            if stx.stx_nlink > 0 {
                return Ok(Obj { fd: h.fd.clone(), stx });
            }
            drop(self.handles.remove(id, h.generation));
        }
        // Removed while kept: no name leads to it any more.
        if !self.kept.is_empty() {
            if let Some(o) = self.kept.get(id)? {
                return Ok(o);
            }
        }
        // One openat2 along the remembered names.
        let path = self.ids.read().path(id, self.settings.max_depth);
        let found = match path {
            Some(path) => {
                let comps: Vec<&[u8]> = path.iter().map(|c| &c[..]).collect();
                self.opened_as(id, sys::open_chain(self.root_fd.as_fd(), &comps))?
            }
            None => None,
        };
        let o = match found {
            Some(o) => o,
            None => self.resolve_slow(id, depth)?,
        };
        drop(self.handles.insert(id, o.fd.clone(), sys::birth_generation(&o.stx)));
        Ok(o)
    }

    /// LOOKUP of an entry whose object the handle cache already holds:
    /// one statx by name, instead of opening the entry (openat2), a statx
    /// of the new fd and the close of the fd it displaces in the cache.
    /// `name` is one component, never `.` or `..`, not followed if a
    /// symlink: it cannot lead out of `dir` except into a file system
    /// mounted on it, which the mount comparison sends to the open (and
    /// its XDev). `None`: not held, or held for another object (same inode
    /// number, other generation); open it.
    pub(crate) fn lookup_resident(&self, dir: &Obj, dir_id: FileId, name: &[u8]) -> VfsResult<Option<Obj>> {
        let stx = match sys::statx_entry(dir.fd.as_fd(), name) {
            Ok(stx) => stx,
            // The answer the open would give, one system call sooner.
            Err(VfsError::NotFound) => return Err(VfsError::NotFound),
            Err(_) => return Ok(None),
        };
        if !sys::same_mount(&dir.stx, &stx) {
            return Ok(None);
        }
        let id = stx.stx_ino as FileId;
        let generation = sys::birth_generation(&stx);
        let Some(fd) = self.handles.held(id, generation) else {
            return Ok(None);
        };
        self.note(id, generation, dir_id, name);
        Ok(Some(Obj { fd, stx }))
    }

    /// The object opened along a remembered name, if it is still inode
    /// `id`. `None` when the name is gone or now names another inode (try
    /// elsewhere); an error that is not [`definitive`] is passed on, as the
    /// remembered place may well be right.
    fn opened_as(&self, id: FileId, opened: Result<OwnedFd, Errno>) -> VfsResult<Option<Obj>> {
        match opened {
            Ok(fd) => {
                let stx = sys::statx_fd(fd.as_fd())?;
                if stx.stx_ino != id {
                    return Ok(None);
                }
                self.seen(id, &stx);
                Ok(Some(Obj { fd: Arc::new(fd), stx }))
            }
            Err(e) if !definitive(e) => Err(sys::errno(e)),
            Err(_) => Ok(None),
        }
    }

    /// Keeps the remembered generation current, so that names learnt for
    /// an earlier object with this inode number are dropped.
    fn seen(&self, id: FileId, stx: &Statx) {
        let generation = sys::birth_generation(stx);
        let stale_gen = {
            let m = self.ids.read();
            m.get(id).and_then(|e| (e.generation != generation).then(|| e.locs.first().cloned()).flatten())
        };
        if let Some(loc) = stale_gen {
            self.record(&[Change::Add { id, generation, parent: loc.parent, name: loc.name }], false);
        }
    }

    /// Component by component: resolve each remembered parent, look for the
    /// name there, and failing that for the inode under any name.
    fn resolve_slow(&self, id: FileId, depth: usize) -> VfsResult<Obj> {
        if depth >= self.settings.max_depth {
            return Err(VfsError::Stale);
        }
        let (generation, locs) = match self.ids.read().get(id) {
            Some(e) => (e.generation, e.locs.clone()),
            None => return Err(VfsError::Stale),
        };
        for loc in locs {
            let parent = match self.resolve_depth(loc.parent, depth + 1) {
                Ok(p) => p,
                // The parent itself is lost; this object may still exist,
                // so keep its name for when the parent is found again.
                Err(VfsError::Stale) => continue,
                Err(e) => return Err(e),
            };
            if parent.ftype() == FileType::Directory {
                let opened = sys::open_beneath(parent.fd.as_fd(), &loc.name, OFlags::PATH);
                if let Some(o) = self.opened_as(id, opened)? {
                    return Ok(o);
                }
                if let Some(name) = self.rescan(&parent, id)? {
                    if let Ok(fd) = sys::open_beneath(parent.fd.as_fd(), &name, OFlags::PATH) {
                        let stx = sys::statx_fd(fd.as_fd())?;
                        if stx.stx_ino == id {
                            let found = sys::birth_generation(&stx);
                            self.record(
                                &[
                                    Change::Unlink { id, generation, parent: loc.parent, name: loc.name.clone() },
                                    Change::Add { id, generation: found, parent: loc.parent, name: name.into() },
                                ],
                                false,
                            );
                            return Ok(Obj { fd: Arc::new(fd), stx });
                        }
                    }
                }
            }
            self.record(&[Change::Unlink { id, generation, parent: loc.parent, name: loc.name }], false);
        }
        Err(VfsError::Stale)
    }

    /// Looks for inode `id` among the entries of directory `dir`.
    fn rescan(&self, dir: &Obj, id: FileId) -> VfsResult<Option<Vec<u8>>> {
        let limit = self.settings.stale_rescan_limit;
        if limit == 0 {
            return Ok(None);
        }
        let fd = sys::open_dir(dir.fd.as_fd())?;
        let mut found = None;
        let mut seen = 0usize;
        sys::scan_dir(fd.as_fd(), self.settings.readdir_buffer, |e| {
            seen += 1;
            if e.ino == id {
                found = Some(e.name);
                return false;
            }
            seen < limit
        })?;
        Ok(found)
    }
}

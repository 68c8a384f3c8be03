//! Making new objects in a [`LocalFs`] directory: the directory and name
//! checked, the object finished (owner, exact mode, attributes), its name
//! remembered and made durable; and CREATE of a name that already exists.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use bytes::Bytes;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::ids::Change;
use super::ops::Place;
use super::resolve::Obj;
use super::sys::{self, errno};
use super::LocalFs;
use crate::names::check_entry_name;
use crate::verifier_times;
use crate::{Attrs, CreateHow, FileId, FileType, Owner, SetAttrs, Timespec, VfsError, VfsResult};

impl LocalFs {
    /// Finishes a new object (`fd` is its O_PATH or open fd): owner, the
    /// exact mode (the process umask may have masked it), other attributes;
    /// then remembers its name and makes it durable.
    pub(super) fn finish_new(
        &self,
        at: Place<'_>,
        fd: BorrowedFd<'_>,
        mode: Option<u32>,
        set: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        let Place { dir, dir_id, name } = at;
        let made = sys::statx_fd(fd)?;
        let id = made.stx_ino as FileId;
        let ftype = sys::file_type(&made);
        // Only what differs from what the create made is changed, and the
        // object is examined again only if something was: a new file of
        // the server's own owner and exact mode costs no chown, chmod or
        // second statx.
        let mut changed = false;
        if self.chown_new && (made.stx_uid, made.stx_gid) != (owner.uid, owner.gid) {
            sys::chown_fd(fd, Some(owner.uid), Some(owner.gid))?;
            changed = true;
        }
        if let Some(mode) = mode {
            // A chown may have cleared set-id bits: set the mode again then.
            if ftype != FileType::Symlink && (changed || u32::from(made.stx_mode) & 0o7777 != mode) {
                sys::chmod_fd(fd, mode)?;
                changed = true;
            }
        }
        let rest = SetAttrs { mode: None, ..set.clone() };
        if rest != SetAttrs::default() {
            self.apply(id, fd, ftype, &rest, Some(fd).filter(|_| ftype == FileType::Regular))?;
            changed = true;
        }
        let stx = if changed { sys::statx_fd(fd)? } else { made };
        self.record(
            &[Change::Add {
                id,
                generation: sys::birth_generation(&stx),
                parent: dir_id,
                name: Bytes::copy_from_slice(name),
            }],
            self.journal_sync(),
        );
        if self.settings.sync_metadata {
            match ftype {
                // CREATE passes the file's own read-write fd; where that
                // fsync also makes the new entry durable, the directory
                // needs none of its own.
                FileType::Regular => {
                    self.sync_fd(fd)?;
                    if self.file_sync_covers_entry {
                        return Ok((id, self.attrs_of(&stx)));
                    }
                }
                // The same holds for a new directory's own fsync (the
                // file systems named there treat any new inode alike).
                FileType::Directory => {
                    self.sync_fd(sys::open_dir(fd)?.as_fd())?;
                    if self.file_sync_covers_entry {
                        return Ok((id, self.attrs_of(&stx)));
                    }
                }
                // Nothing to open; the directory fsync covers the inode on
                // journalling file systems.
                _ => {}
            }
        }
        self.sync_dirs(&[dir])?;
        Ok((id, self.attrs_of(&stx)))
    }

    /// The checked directory for a new non-regular object (mkdir, mknod),
    /// which has no size to set. (Symlink checks its target in between.)
    pub(super) fn dir_for_new(&self, dir: FileId, name: &[u8], ftype: FileType, attrs: &SetAttrs) -> VfsResult<Obj> {
        check_entry_name(name, self.settings.max_name_len)?;
        if attrs.size.is_some() {
            return Err(VfsError::Invalid);
        }
        Self::validate(ftype, attrs)?;
        self.resolve_dir(dir)
    }

    /// [`finish_new`](Self::finish_new) for an object made by name (mkdir,
    /// symlink, mknod): it is opened again, O_PATH, beneath its directory.
    pub(super) fn finish_named(
        &self,
        at: Place<'_>,
        mode: Option<u32>,
        set: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        let fd = self.open_entry(at.dir, at.name)?;
        self.finish_new(at, fd.as_fd(), mode, set, owner)
    }

    pub(super) fn open_entry(&self, dir: &Obj, name: &[u8]) -> VfsResult<OwnedFd> {
        sys::open_beneath(dir.fd.as_fd(), name, OFlags::PATH).map_err(|e| match e {
            Errno::XDEV => VfsError::XDev,
            e => errno(e),
        })
    }

    /// CREATE when the name is taken: a retransmitted exclusive create, or
    /// an unchecked create of an existing file (only its size is applied).
    pub(super) fn create_existing(
        &self,
        dir: &Obj,
        dir_id: FileId,
        name: &[u8],
        how: &CreateHow,
    ) -> VfsResult<(FileId, Attrs)> {
        let fd = self.open_entry(dir, name)?;
        let stx = sys::statx_fd(fd.as_fd())?;
        if sys::file_type(&stx) != FileType::Regular {
            return Err(VfsError::Exists);
        }
        let id = stx.stx_ino as FileId;
        match how {
            CreateHow::Guarded(_) => return Err(VfsError::Exists),
            CreateHow::Exclusive(v) => {
                let (a, m) = verifier_times(v);
                let at = Timespec { seconds: stx.stx_atime.tv_sec, nanos: stx.stx_atime.tv_nsec };
                let mt = Timespec { seconds: stx.stx_mtime.tv_sec, nanos: stx.stx_mtime.tv_nsec };
                if (at, mt) != (a, m) {
                    return Err(VfsError::Exists);
                }
            }
            CreateHow::Unchecked(set) => {
                if let Some(size) = set.size {
                    Self::validate(FileType::Regular, set)?;
                    let io = sys::reopen(fd.as_fd(), OFlags::RDWR).map_err(errno)?;
                    rustix::fs::ftruncate(&io, size).map_err(errno)?;
                }
            }
        }
        let stx = sys::statx_fd(fd.as_fd())?;
        self.note(id, sys::birth_generation(&stx), dir_id, name);
        Ok((id, self.attrs_of(&stx)))
    }

    /// The object named `name` in `dir` (not following a final symlink;
    /// `name` is one checked component), opened O_PATH. While a change about
    /// an object being removed is recorded, such an fd is held: as long as
    /// it is open the file system cannot give the object's inode number to
    /// a new object, so a CREATE reusing the number records the new object
    /// after the removal, not before it.
    pub(super) fn hold_entry(dir: &Obj, name: &[u8]) -> VfsResult<Obj> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = Arc::new(rustix::fs::openat(dir.fd.as_fd(), name, flags, Mode::empty()).map_err(errno)?);
        let stx = sys::statx_fd(fd.as_fd())?;
        Ok(Obj { fd, stx })
    }
}

//! The [`Vfs`] operations of [`LocalFs`].

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use bytes::Bytes;
use rustix::fs::{AtFlags, Mode, OFlags, SeekFrom};
use rustix::io::{Errno, ReadWriteFlags};

use super::cache::OpenFile;
use super::flush;
use super::ids::{same_object, Change};
use super::resolve::Obj;
use super::sys::{self, errno};
use super::LocalFs;
use crate::names::{check_entry_name, classify_lookup, LookupName};
use crate::{
    Attrs, CopyResult, CreateHow, DirEntry, DirEntryPlus, FileId, FileRegion, FileType, FsStat, NodeKind, Owner,
    ReadDir, ReadDirPlus, ReadResult, SeekResult, SeekWhat, Segment, SetAttrs, SetTime, Stability, Timespec, Vfs,
    VfsError, VfsResult, WriteResult, XattrSet,
};

/// Largest offset the kernel takes (off_t is signed).
pub(super) const MAX_OFFSET: u64 = i64::MAX as u64;
/// Longest symlink target (PATH_MAX).
const MAX_SYMLINK: usize = 4095;

/// Where a new object was made: its directory (resolved and by id) and name.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub dir: &'a Obj,
    pub dir_id: FileId,
    pub name: &'a [u8],
}

impl LocalFs {
    /// An open file for I/O on `id`, from the cache or freshly opened.
    pub(super) fn file(&self, id: FileId, write: bool) -> VfsResult<Arc<OpenFile>> {
        // I/O may change the object: attributes kept from before must not
        // answer a GETATTR after it.
        super::forget_recent();
        if let Some(f) = self.cache.get(id) {
            if f.writable || !write {
                return Ok(f);
            }
        }
        let obj = self.resolve(id)?;
        match obj.ftype() {
            FileType::Regular => {}
            FileType::Directory => return Err(VfsError::IsDir),
            _ => return Err(VfsError::Invalid),
        }
        // Reopened through the O_PATH fd: the very inode just checked to
        // be a regular file, so no device or FIFO is ever opened here.
        let (fd, writable) = match sys::reopen(obj.fd.as_fd(), OFlags::RDWR) {
            Ok(fd) => (fd, true),
            Err(Errno::ACCESS | Errno::ROFS | Errno::PERM | Errno::TXTBSY) if !write => {
                (sys::reopen(obj.fd.as_fd(), OFlags::RDONLY).map_err(errno)?, false)
            }
            Err(e) => return Err(errno(e)),
        };
        // Should the inode number have been reused meanwhile, the cache
        // keeps the new object and this one serves only this request.
        let f = Arc::new(OpenFile::new(fd, writable, sys::birth_generation(&obj.stx)));
        self.evicted(self.cache.insert(id, f.clone()));
        Ok(f)
    }

    /// The size of an open file for a READ's eof, from a statx taken after
    /// reading, which is kept for the reply's post-operation attributes
    /// (they describe the data returned).
    fn size_after_read(&self, id: FileId, f: &OpenFile) -> VfsResult<u64> {
        let stx = sys::statx_fd(f.fd.as_fd())?;
        if stx.stx_nlink > 0 {
            self.keep_recent(id, &stx, None);
        }
        Ok(stx.stx_size)
    }

    fn evicted(&self, files: Vec<(FileId, Arc<OpenFile>)>) {
        super::close_evicted(&self.pending, files);
    }

    pub(super) fn sync_fd(&self, fd: BorrowedFd<'_>) -> VfsResult<()> {
        rustix::fs::fsync(fd).map_err(errno)
    }

    /// Makes a namespace change in `dirs` durable (when configured),
    /// sharing each directory's flush with the changes made in it at the
    /// same time.
    pub(super) fn sync_dirs(&self, dirs: &[&Obj]) -> VfsResult<()> {
        if self.settings.sync_metadata {
            for d in dirs {
                let key = (d.stx.stx_ino, sys::birth_generation(&d.stx));
                self.dir_flushes.sync(key, d.fd.as_fd()).map_err(errno)?;
            }
        }
        Ok(())
    }

    /// Checks `set` against the object type before anything is changed.
    pub(super) fn validate(ftype: FileType, set: &SetAttrs) -> VfsResult<()> {
        crate::check_setattrs(ftype, set, MAX_OFFSET)
    }

    /// Applies validated attributes to the object behind `fd` (O_PATH or
    /// open). Order matters: size before times (truncate sets mtime),
    /// owner before mode (chown clears set-id bits).
    pub(super) fn apply(
        &self,
        id: FileId,
        fd: BorrowedFd<'_>,
        ftype: FileType,
        set: &SetAttrs,
        io: Option<BorrowedFd<'_>>,
    ) -> VfsResult<()> {
        if let Some(size) = set.size {
            match io {
                Some(io) => rustix::fs::ftruncate(io, size).map_err(errno)?,
                None => rustix::fs::ftruncate(&self.file(id, true)?.fd, size).map_err(errno)?,
            }
        }
        if set.uid.is_some() || set.gid.is_some() {
            sys::chown_fd(fd, set.uid, set.gid)?;
        }
        // Linux cannot change a symbolic link's mode and never reads it:
        // a mode for one is ignored, as the kernel NFS server does, rather
        // than failing the whole SETATTR.
        if let Some(mode) = set.mode.filter(|_| ftype != FileType::Symlink) {
            sys::chmod_fd(fd, mode)?;
        }
        if set.atime != SetTime::DontChange || set.mtime != SetTime::DontChange {
            sys::set_times(fd, set.atime, set.mtime)?;
        }
        Ok(())
    }

    /// Up to `max_entries` entries of `dir` after `cookie`, with the
    /// directory opened for the scan and whether the end was reached.
    fn scan(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<(Obj, OwnedFd, Vec<sys::Scanned>, bool)> {
        let d = self.resolve_dir(dir)?;
        let fd = sys::open_dir(d.fd.as_fd())?;
        if cookie != 0 {
            let pos = i64::try_from(cookie).map_err(|_| VfsError::BadCookie)?;
            rustix::fs::seek(&fd, SeekFrom::Start(pos as u64)).map_err(|_| VfsError::BadCookie)?;
        }
        let mut found = Vec::new();
        let mut more = false;
        sys::scan_dir(fd.as_fd(), self.settings.readdir_buffer, |e| {
            if found.len() < max_entries {
                found.push(e);
                true
            } else {
                more = true;
                false
            }
        })?;
        Ok((d, fd, found, !more))
    }

    fn remove_entry(&self, dir_id: FileId, name: &[u8], want_dir: bool) -> VfsResult<()> {
        let (dir, held, change) = self.unlink_entry(dir_id, name, want_dir)?;
        self.record(&[change], self.journal_sync());
        drop(held);
        self.sync_dirs(&[&dir])
    }

    /// The unlink of REMOVE and RMDIR, up to the change to record: the
    /// directory, the removed object (held, see [`Self::hold_entry`]) and
    /// that change. Should the number be reused before the change is
    /// recorded anyway (another name of the object was held elsewhere, or
    /// the change is recorded without the hold), the change names the
    /// removed object's generation, which leaves a newer object's entry
    /// alone.
    pub(super) fn unlink_entry(&self, dir_id: FileId, name: &[u8], want_dir: bool) -> VfsResult<(Obj, Obj, Change)> {
        check_entry_name(name, self.settings.max_name_len)?;
        let dir = self.resolve_dir(dir_id)?;
        let held = Self::hold_entry(&dir, name)?;
        let stx = held.stx;
        let is_dir = sys::file_type(&stx) == FileType::Directory;
        match (is_dir, want_dir) {
            (true, false) => return Err(VfsError::IsDir),
            (false, true) => return Err(VfsError::NotDir),
            _ => {}
        }
        let flags = if want_dir { AtFlags::REMOVEDIR } else { AtFlags::empty() };
        rustix::fs::unlinkat(dir.fd.as_fd(), name, flags).map_err(|e| match e {
            Errno::EXIST | Errno::NOTEMPTY => VfsError::NotEmpty,
            e => errno(e),
        })?;
        let id = stx.stx_ino as FileId;
        let generation = sys::birth_generation(&stx);
        // (Another name may have been put in place between the statx and
        // the unlink; the map heals on the next resolve of either id.)
        let change = if is_dir || stx.stx_nlink <= 1 {
            self.forget(id, generation)
        } else {
            Change::Unlink { id, generation, parent: dir_id, name: Bytes::copy_from_slice(name) }
        };
        Ok((dir, held, change))
    }
}

impl Vfs for LocalFs {
    fn root(&self) -> FileId {
        self.root_id
    }

    fn fsid(&self) -> u64 {
        self.fsid
    }

    /// The statx is kept for the request's next call, which is usually
    /// about the same object (see [`super::recent`]).
    fn getattr(&self, id: FileId) -> VfsResult<Attrs> {
        if let Some((stx, fd)) = self.take_recent(id, false) {
            self.keep_recent(id, &stx, fd.as_ref());
            return Ok(self.attrs_of(&stx));
        }
        let o = self.resolve(id)?;
        self.keep_recent(id, &o.stx, Some(&o.fd));
        Ok(self.attrs_of(&o.stx))
    }

    fn keeps_unlinked(&self) -> Option<&dyn crate::KeepUnlinked> {
        Some(self)
    }

    /// inotify, where an instance could be had.
    fn dir_events(&self) -> Option<&dyn crate::DirEvents> {
        self.watcher.is_some().then_some(self as &dyn crate::DirEvents)
    }

    fn fast_paths(&self) -> Option<&dyn crate::FastPaths> {
        Some(self)
    }

    /// Only where the export's file system keeps `user.` attributes.
    fn xattrs(&self) -> Option<&dyn crate::Xattrs> {
        self.xattr_support_impl().then_some(self)
    }

    fn data_ops(&self) -> Option<&dyn crate::DataOps42> {
        Some(self)
    }

    fn counters(&self) -> Vec<crate::Counter> {
        self.stats()
    }

    /// The change attribute is the host's ctime.
    fn change_is_ctime(&self) -> bool {
        true
    }

    /// The guard is compared against a fresh statx and then the changes
    /// are applied: another writer can slip in between (a window of a few
    /// system calls), which the NFSv3 guard cannot fully exclude without a
    /// kernel-side compare-and-set.
    fn setattr(&self, id: FileId, set: &SetAttrs, guard_ctime: Option<Timespec>) -> VfsResult<Attrs> {
        let o = self.resolve(id)?;
        if guard_ctime.is_some_and(|g| g != sys::ctime(&o.stx)) {
            return Err(VfsError::NotSync);
        }
        Self::validate(o.ftype(), set)?;
        self.apply(id, o.fd.as_fd(), o.ftype(), set, None)?;
        let stx = sys::statx_fd(o.fd.as_fd())?;
        // Taken after the change: the reply's post-operation attributes.
        self.keep_recent(id, &stx, Some(&o.fd));
        Ok(self.attrs_of(&stx))
    }

    fn lookup(&self, dir: FileId, name: &[u8]) -> VfsResult<(FileId, Attrs)> {
        match classify_lookup(name, self.settings.max_name_len)? {
            // `.` and `..` change nothing: the directory's statx stays
            // kept for the request's next call (READDIRPLUS lists `..`
            // before it reads the directory).
            LookupName::Dot => {
                let d = self.resolve_dir(dir)?;
                self.keep_recent(dir, &d.stx, Some(&d.fd));
                Ok((dir, self.attrs_of(&d.stx)))
            }
            LookupName::DotDot if dir == self.root_id => {
                let d = self.resolve_dir(dir)?;
                self.keep_recent(dir, &d.stx, Some(&d.fd));
                Ok((dir, self.attrs_of(&d.stx)))
            }
            LookupName::DotDot => {
                let d = self.resolve_dir(dir)?;
                self.keep_recent(dir, &d.stx, Some(&d.fd));
                // `dir` lies beneath the root and is not the root, so its
                // parent is the root or beneath it: statx of ".." is safe.
                let p = sys::statx_at(d.fd.as_fd(), b"..")?;
                let pid = p.stx_ino as FileId;
                if pid != self.root_id && self.ids.read().get(pid).is_none() {
                    // A parent we never named (moved behind our back).
                    return Err(VfsError::Stale);
                }
                Ok((pid, self.attrs_of(&p)))
            }
            LookupName::Entry(n) => {
                let d = self.resolve_dir(dir)?;
                // The client's next call is about this object (GETATTR,
                // ACCESS, READ; in NFSv4 often in the same compound): the
                // handle cache holds its fd so it resolves without a walk,
                // and the request keeps its statx.
                let (id, found) = match self.lookup_resident(&d, dir, n)? {
                    Some(o) => (o.stx.stx_ino as FileId, o),
                    None => {
                        let fd = Arc::new(self.open_entry(&d, n)?);
                        let stx = sys::statx_fd(fd.as_fd())?;
                        let id = stx.stx_ino as FileId;
                        let generation = sys::birth_generation(&stx);
                        self.note(id, generation, dir, n);
                        drop(self.handles.insert(id, fd.clone(), generation));
                        (id, Obj { fd, stx })
                    }
                };
                self.keep_recent(id, &found.stx, Some(&found.fd));
                Ok((id, self.attrs_of(&found.stx)))
            }
        }
    }

    fn readlink(&self, id: FileId) -> VfsResult<Bytes> {
        let o = self.resolve(id)?;
        if o.ftype() != FileType::Symlink {
            return Err(VfsError::BadType);
        }
        let target = rustix::fs::readlinkat(o.fd.as_fd(), "", Vec::new()).map_err(errno)?;
        Ok(Bytes::from(target.into_bytes()))
    }

    fn read(&self, id: FileId, offset: u64, count: u32) -> VfsResult<ReadResult> {
        let f = self.file(id, false)?;
        if offset > MAX_OFFSET {
            return Ok(ReadResult { data: Bytes::new(), eof: true });
        }
        let count = count.min(self.settings.max_read) as usize;
        let data = sys::pread_full(f.fd.as_fd(), offset, count)?;
        let size = self.size_after_read(id, &f)?;
        let eof = offset + data.len() as u64 >= size;
        Ok(ReadResult { data: Bytes::from(data), eof })
    }

    fn write(&self, id: FileId, offset: u64, data: &[u8], stable: Stability) -> VfsResult<WriteResult> {
        let count = u32::try_from(data.len()).map_err(|_| VfsError::Invalid)?;
        match offset.checked_add(data.len() as u64) {
            Some(end) if end <= MAX_OFFSET => {}
            _ => return Err(VfsError::FBig),
        }
        let f = self.file(id, true)?;
        // Taken before writing: a flush of the file that fails between
        // the write and its own flush may have carried (and lost) it.
        let since = match stable {
            Stability::Unstable => 0,
            Stability::DataSync => f.fdatasyncs.ticket(),
            Stability::FileSync => f.fsyncs.ticket(),
        };
        if stable == Stability::Unstable {
            // Marked before writing: an eviction racing with this write
            // must not skip the flush that keeps its errors.
            f.mark_dirty();
        }
        for (i, piece) in data.chunks(self.write_piece).enumerate() {
            // i * write_piece < data.len(), a u32 count.
            sys::pwrite_all(f.fd.as_fd(), offset + (i * self.write_piece) as u64, piece, ReadWriteFlags::empty())?;
        }
        match stable {
            Stability::Unstable => {
                let s = &self.settings;
                if let Some((from, len)) =
                    f.sequential.note(offset, u64::from(count), s.sequential_window, s.writeback_chunk)
                {
                    flush::start_writeback(f.fd.as_fd(), from, len);
                }
            }
            // Stable writes arriving together share one flush (see flush).
            Stability::DataSync => {
                let gather = self.gather_max();
                f.fdatasyncs.sync_since(since, f.fd.as_fd(), false, &self.flush_counts, gather).map_err(errno)?
            }
            Stability::FileSync => {
                let gather = self.gather_max();
                f.fsyncs.sync_since(since, f.fd.as_fd(), true, &self.flush_counts, gather).map_err(errno)?
            }
        }
        Ok(WriteResult { count, committed: stable })
    }

    fn commit(&self, id: FileId, _offset: u64, _count: u32) -> VfsResult<()> {
        // The range is not used: fsync covers the whole file, and
        // sync_file_range would not make metadata (e.g. size) durable.
        let pending = self.pending.lock().remove(&id);
        let f = match self.file(id, false) {
            Ok(f) => f,
            Err(e) => return Err(pending.map_or(e, |p| p.1)),
        };
        // An error met on an earlier object with this inode number is not
        // this one's.
        let pending = pending.filter(|(g, _)| same_object(*g, f.generation)).map(|p| p.1);
        f.take_dirty();
        if let Err(e) = f.fsyncs.sync(f.fd.as_fd(), true, &self.flush_counts, self.gather_max()) {
            f.mark_dirty();
            return Err(sys::write_back(e));
        }
        pending.map_or(Ok(()), Err)
    }

    fn create(&self, dir: FileId, name: &[u8], how: &CreateHow, owner: Owner) -> VfsResult<(FileId, Attrs)> {
        check_entry_name(name, self.settings.max_name_len)?;
        let d = self.resolve_dir(dir)?;
        let (mode, set) = match how {
            CreateHow::Unchecked(set) | CreateHow::Guarded(set) => {
                Self::validate(FileType::Regular, set)?;
                (set.mode.unwrap_or(self.settings.default_file_mode) & 0o7777, set.clone())
            }
            CreateHow::Exclusive(v) => {
                let (a, m) = crate::verifier_times(v);
                let set = SetAttrs { atime: SetTime::Client(a), mtime: SetTime::Client(m), ..SetAttrs::default() };
                (self.settings.default_file_mode, set)
            }
        };
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // Always O_EXCL: an existing name is examined through an O_PATH fd
        // instead, so an unchecked create never opens a device or FIFO.
        let fd = match rustix::fs::openat(d.fd.as_fd(), name, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => fd,
            Err(Errno::EXIST) => return self.create_existing(&d, dir, name, how),
            Err(e) => return Err(errno(e)),
        };
        let (id, attrs) = self.finish_new(Place { dir: &d, dir_id: dir, name }, fd.as_fd(), Some(mode), &set, owner)?;
        // The client's next call is about the new file (LOOKUP, SETATTR,
        // WRITE): the handle cache holds it too, on the same fd, so that
        // costs no open.
        let fd = Arc::new(fd);
        drop(self.handles.insert(id, fd.clone(), attrs.generation));
        self.evicted(self.cache.insert(id, Arc::new(OpenFile::shared(fd, true, attrs.generation))));
        Ok((id, attrs))
    }

    fn mkdir(&self, dir: FileId, name: &[u8], attrs: &SetAttrs, owner: Owner) -> VfsResult<(FileId, Attrs)> {
        let d = self.dir_for_new(dir, name, FileType::Directory, attrs)?;
        let mode = attrs.mode.unwrap_or(self.settings.default_dir_mode) & 0o7777;
        rustix::fs::mkdirat(d.fd.as_fd(), name, Mode::from_raw_mode(mode)).map_err(errno)?;
        let at = Place { dir: &d, dir_id: dir, name };
        self.finish_named(at, Some(mode), attrs, owner)
    }

    fn symlink(
        &self,
        dir: FileId,
        name: &[u8],
        target: &[u8],
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        check_entry_name(name, self.settings.max_name_len)?;
        if target.is_empty() || target.contains(&0) || attrs.size.is_some() {
            return Err(VfsError::Invalid);
        }
        if target.len() > MAX_SYMLINK {
            return Err(VfsError::NameTooLong);
        }
        Self::validate(FileType::Symlink, attrs)?;
        let d = self.resolve_dir(dir)?;
        rustix::fs::symlinkat(target, d.fd.as_fd(), name).map_err(errno)?;
        let at = Place { dir: &d, dir_id: dir, name };
        // A symlink's mode is fixed on Linux; a requested one is ignored.
        self.finish_named(at, None, attrs, owner)
    }

    fn mknod(
        &self,
        dir: FileId,
        name: &[u8],
        kind: NodeKind,
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        let d = self.dir_for_new(dir, name, FileType::Fifo, attrs)?;
        let (ft, dev) = match kind {
            NodeKind::BlockDevice(ma, mi) => (rustix::fs::FileType::BlockDevice, rustix::fs::makedev(ma, mi)),
            NodeKind::CharDevice(ma, mi) => (rustix::fs::FileType::CharacterDevice, rustix::fs::makedev(ma, mi)),
            NodeKind::Socket => (rustix::fs::FileType::Socket, 0),
            NodeKind::Fifo => (rustix::fs::FileType::Fifo, 0),
        };
        let mode = attrs.mode.unwrap_or(self.settings.default_file_mode) & 0o7777;
        rustix::fs::mknodat(d.fd.as_fd(), name, ft, Mode::from_raw_mode(mode), dev).map_err(errno)?;
        let at = Place { dir: &d, dir_id: dir, name };
        self.finish_named(at, Some(mode), attrs, owner)
    }

    fn remove(&self, dir: FileId, name: &[u8]) -> VfsResult<()> {
        self.remove_entry(dir, name, false)
    }

    fn rmdir(&self, dir: FileId, name: &[u8]) -> VfsResult<()> {
        self.remove_entry(dir, name, true)
    }

    fn rename(&self, from_dir: FileId, from: &[u8], to_dir: FileId, to: &[u8]) -> VfsResult<()> {
        check_entry_name(from, self.settings.max_name_len)?;
        check_entry_name(to, self.settings.max_name_len)?;
        let fd = self.resolve_dir(from_dir)?;
        let td = self.resolve_dir(to_dir)?;
        // Both held until the changes are recorded (see hold_entry).
        let src_obj = Self::hold_entry(&fd, from)?;
        let tgt_obj = match Self::hold_entry(&td, to) {
            Ok(t) => Some(t),
            Err(VfsError::NotFound) => None,
            Err(e) => return Err(e),
        };
        let src = src_obj.stx;
        let tgt = tgt_obj.as_ref().map(|t| t.stx);
        rustix::fs::renameat(fd.fd.as_fd(), from, td.fd.as_fd(), to).map_err(|e| match e {
            Errno::EXIST | Errno::NOTEMPTY => VfsError::NotEmpty,
            e => errno(e),
        })?;
        let id = src.stx_ino as FileId;
        let mut changes = Vec::new();
        match tgt {
            // Two names of one object: the kernel did nothing.
            Some(t) if t.stx_ino == src.stx_ino => return Ok(()),
            Some(t) if sys::file_type(&t) == FileType::Directory || t.stx_nlink <= 1 => {
                changes.push(self.forget(t.stx_ino as FileId, sys::birth_generation(&t)));
            }
            Some(t) => changes.push(Change::Unlink {
                id: t.stx_ino as FileId,
                generation: sys::birth_generation(&t),
                parent: to_dir,
                name: Bytes::copy_from_slice(to),
            }),
            None => {}
        }
        changes.push(Change::Unlink {
            id,
            generation: sys::birth_generation(&src),
            parent: from_dir,
            name: Bytes::copy_from_slice(from),
        });
        changes.push(Change::Add {
            id,
            generation: sys::birth_generation(&src),
            parent: to_dir,
            name: Bytes::copy_from_slice(to),
        });
        self.record(&changes, self.journal_sync());
        drop((src_obj, tgt_obj));
        if from_dir == to_dir {
            self.sync_dirs(&[&td])
        } else {
            self.sync_dirs(&[&fd, &td])
        }
    }

    fn link(&self, id: FileId, dir: FileId, name: &[u8]) -> VfsResult<()> {
        check_entry_name(name, self.settings.max_name_len)?;
        let o = self.resolve(id)?;
        if o.ftype() == FileType::Directory {
            return Err(VfsError::IsDir);
        }
        let d = self.resolve_dir(dir)?;
        if self.chown_new {
            // AT_EMPTY_PATH links the fd's own inode (needs CAP_DAC_READ_SEARCH).
            rustix::fs::linkat(o.fd.as_fd(), "", d.fd.as_fd(), name, AtFlags::EMPTY_PATH).map_err(errno)?;
        } else {
            let p = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&o.fd));
            rustix::fs::linkat(rustix::fs::CWD, p.as_str(), d.fd.as_fd(), name, AtFlags::SYMLINK_FOLLOW)
                .map_err(errno)?;
        }
        let c = Change::Add {
            id,
            generation: sys::birth_generation(&o.stx),
            parent: dir,
            name: Bytes::copy_from_slice(name),
        };
        self.record(&[c], self.journal_sync());
        self.sync_dirs(&[&d])
    }

    /// Cookies are the directory's own getdents64 offsets (d_off), which
    /// the file system keeps valid across calls and restarts (ext4: hash
    /// positions; tmpfs: stable per-entry offsets), so a client continues
    /// with an lseek to exactly where it stopped. (On ext4 two names whose
    /// 63-bit hashes collide share a position; a page boundary falling
    /// between them could repeat one. That needs a full hash collision.)
    fn readdir(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDir> {
        let (_, _, found, eof) = self.scan(dir, cookie, max_entries)?;
        let new: Vec<Change> = {
            let m = self.ids.read();
            found
                .iter()
                .filter(|e| !m.knows(e.ino, 0, dir, &e.name))
                .map(|e| Change::Add { id: e.ino, generation: 0, parent: dir, name: Bytes::copy_from_slice(&e.name) })
                .collect()
        };
        self.record(&new, false);
        let entries = found
            .into_iter()
            .map(|e| DirEntry { fileid: e.ino, name: Bytes::from(e.name), cookie: e.next_cookie })
            .collect();
        Ok(ReadDir { entries, eof })
    }

    /// One `statx` per entry at the open directory instead of a LOOKUP's
    /// open, statx and handle-cache insert: a listing of thousands of
    /// entries neither churns the handle cache nor opens a file.
    fn readdir_plus(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDirPlus> {
        // `fd` is `d` opened for reading: the same directory, mount and all.
        let (d, fd, found, eof) = self.scan(dir, cookie, max_entries)?;
        let here = d.stx;
        // Straight to the reply's entries: an intermediate list of whole
        // statx results (256 bytes each) was a malloc large enough to make
        // glibc consolidate its free lists on every READDIRPLUS.
        // Each name is a single component from getdents, never `.` or `..`,
        // not followed if a symlink: it cannot lead outside `dir`, except
        // into a file system mounted on it, which LOOKUP refuses too.
        let entries: Vec<DirEntryPlus> = found
            .into_iter()
            .map(|e| {
                let obj = sys::statx_entry(fd.as_fd(), &e.name).and_then(|stx| {
                    if sys::same_mount(&here, &stx) {
                        Ok((stx.stx_ino as FileId, self.attrs_of(&stx)))
                    } else {
                        Err(VfsError::XDev)
                    }
                });
                DirEntryPlus {
                    obj,
                    entry: DirEntry { fileid: e.ino, name: Bytes::from(e.name), cookie: e.next_cookie },
                }
            })
            .collect();
        // Names the map does not know yet (a tree listed again knows them
        // all, and then nothing here allocates).
        let new: Vec<Change> = {
            let m = self.ids.read();
            entries
                .iter()
                .filter_map(|e| {
                    let (id, a) = e.obj.as_ref().ok()?;
                    (!m.knows(*id, a.generation, dir, &e.entry.name)).then(|| Change::Add {
                        id: *id,
                        generation: a.generation,
                        parent: dir,
                        name: e.entry.name.clone(),
                    })
                })
                .collect()
        };
        self.record(&new, false);
        Ok(ReadDirPlus { entries, eof })
    }

    fn fsstat(&self, id: FileId) -> VfsResult<FsStat> {
        let o = self.resolve(id)?;
        let s = rustix::fs::fstatvfs(&o.fd).map_err(errno)?;
        let unit = s.f_frsize.max(1);
        Ok(FsStat {
            total_bytes: s.f_blocks.saturating_mul(unit),
            free_bytes: s.f_bfree.saturating_mul(unit),
            avail_bytes: s.f_bavail.saturating_mul(unit),
            total_files: s.f_files,
            free_files: s.f_ffree,
            avail_files: s.f_favail,
        })
    }
}

// See v42.rs.
impl crate::DataOps42 for LocalFs {
    fn seek(&self, id: FileId, offset: u64, what: SeekWhat) -> VfsResult<SeekResult> {
        self.seek_impl(id, offset, what)
    }

    fn read_sparse(&self, id: FileId, offset: u64, count: u32) -> VfsResult<(Vec<Segment>, bool)> {
        self.read_sparse_impl(id, offset, count)
    }

    fn allocate(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        self.allocate_impl(id, offset, length)
    }

    fn deallocate(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        self.deallocate_impl(id, offset, length)
    }

    fn copy_range(
        &self,
        src: FileId,
        src_offset: u64,
        dst: FileId,
        dst_offset: u64,
        count: u64,
        stable: Stability,
    ) -> VfsResult<CopyResult> {
        self.copy_range_impl(src, src_offset, dst, dst_offset, count, stable)
    }

    fn clone_range(&self, src: FileId, src_offset: u64, dst: FileId, dst_offset: u64, count: u64) -> VfsResult<()> {
        self.clone_range_impl(src, src_offset, dst, dst_offset, count)
    }

    fn clone_blksize(&self) -> Option<u32> {
        self.clone_blksize_impl()
    }

    fn advise(&self, id: FileId, offset: u64, len: u64, advice: crate::Advice) -> VfsResult<bool> {
        self.advise_impl(id, offset, len, advice)
    }
}

impl crate::FastPaths for LocalFs {
    fn resident(&self, id: FileId) -> bool {
        self.is_cached(id)
    }

    fn read_cached(&self, id: FileId, offset: u64, count: u32) -> VfsResult<Option<ReadResult>> {
        // Only a file already open: opening one may wait on the disk.
        let Some(f) = self.cache.get(id) else {
            return Ok(None);
        };
        if offset > MAX_OFFSET {
            return Ok(Some(ReadResult { data: Bytes::new(), eof: true }));
        }
        let count = count.min(self.settings.max_read) as usize;
        let buf = match crate::uninit::preadv2_once(f.fd.as_fd(), offset, count, ReadWriteFlags::NOWAIT) {
            Ok(buf) => buf,
            // tmpfs refuses RWF_NOWAIT; its data is all in memory.
            Err(Errno::OPNOTSUPP) if self.memory_backed => {
                crate::uninit::pread_up_to(f.fd.as_fd(), offset, count).map_err(errno)?
            }
            // Not all cached (AGAIN), or a kernel without RWF_NOWAIT.
            Err(Errno::AGAIN | Errno::OPNOTSUPP | Errno::NOSYS | Errno::INVAL) => return Ok(None),
            Err(e) => return Err(errno(e)),
        };
        let size = self.size_after_read(id, &f)?;
        let eof = offset + buf.len() as u64 >= size;
        if buf.len() < count && !eof {
            // Stopped at a page that is not cached: the rest needs a wait.
            return Ok(None);
        }
        Ok(Some(ReadResult { data: Bytes::from(buf), eof }))
    }

    fn read_region(&self, id: FileId, offset: u64, count: u32) -> VfsResult<Option<(FileRegion, bool)>> {
        let f = self.file(id, false)?;
        let size = self.size_after_read(id, &f)?;
        if offset >= size || offset > MAX_OFFSET {
            return Ok(None);
        }
        let len = u64::from(count.min(self.settings.max_read)).min(size - offset);
        // len <= count, a u32.
        let len = u32::try_from(len).unwrap_or(count);
        let eof = offset + u64::from(len) >= size;
        Ok(Some((FileRegion { fd: f, offset, len }, eof)))
    }

    fn read_data_region(&self, id: FileId, offset: u64, count: u32) -> VfsResult<Option<(FileRegion, bool)>> {
        self.read_data_region_impl(id, offset, count)
    }
}

// See xattr.rs.
impl crate::Xattrs for LocalFs {
    fn getxattr(&self, id: FileId, name: &[u8]) -> VfsResult<Bytes> {
        self.getxattr_impl(id, name)
    }

    fn setxattr(&self, id: FileId, name: &[u8], value: &[u8], how: XattrSet) -> VfsResult<Attrs> {
        self.setxattr_impl(id, name, value, how)
    }

    fn listxattrs(&self, id: FileId) -> VfsResult<Vec<Bytes>> {
        self.listxattrs_impl(id)
    }

    fn removexattr(&self, id: FileId, name: &[u8]) -> VfsResult<Attrs> {
        self.removexattr_impl(id, name)
    }
}

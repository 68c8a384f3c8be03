//! The [`Vfs`] operations of [`MemFs`].

use bytes::Bytes;

use super::data::FileData;
use super::node::{lock_all, order, Body, Dir, Meta, Node};
use super::{MemFs, ROOT};
use crate::names::{check_entry_name, classify_lookup, LookupName};
use crate::{
    Attrs, CopyResult, CreateHow, DirEntry, FileId, FileType, FsStat, NodeKind, Owner, ReadDir, ReadResult, SeekResult,
    SeekWhat, Segment, SetAttrs, Stability, Timespec, Vfs, VfsError, VfsResult, WriteResult, XattrSet,
};

/// Bound on optimistic retries when the tree changes between looking an
/// entry up and locking it; only a pathological stream of concurrent
/// renames of the same names can exhaust it, and then the client retries.
const MAX_RETRIES: usize = 1000;

impl MemFs {
    fn entry_id(&self, dir: FileId, name: &[u8]) -> VfsResult<FileId> {
        let d = self.node(dir)?;
        let g = d.state.read();
        g.dir()?.get(name).ok_or(VfsError::NotFound)
    }

    fn new_node(&self, meta: Meta, body: Body, set: &SetAttrs) -> VfsResult<Node> {
        let mut n = Node { meta, body, live: true };
        self.apply_setattrs(&mut n, set)?;
        // Creating is one change, whatever the attributes.
        n.meta.change = 1;
        Ok(n)
    }

    fn create_existing(&self, dir: FileId, name: &[u8], how: &CreateHow) -> VfsResult<Option<(FileId, Attrs)>> {
        let id = match self.entry_id(dir, name) {
            Ok(id) => id,
            // Removed since our insert failed: the caller tries again.
            Err(VfsError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        let nref = match self.node(id) {
            Ok(n) => n,
            Err(VfsError::Stale) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut g = nref.state.write();
        if !g.live {
            return Ok(None);
        }
        if !matches!(g.body, Body::File(_)) {
            return Err(VfsError::Exists);
        }
        match how {
            CreateHow::Guarded(_) => Err(VfsError::Exists),
            CreateHow::Exclusive(v) if g.meta.verifier == Some(*v) => Ok(Some((id, self.attrs(id, &g)))),
            CreateHow::Exclusive(_) => Err(VfsError::Exists),
            CreateHow::Unchecked(set) => {
                // An existing file keeps its attributes except the size.
                if let Some(size) = set.size {
                    let only_size = SetAttrs { size: Some(size), ..SetAttrs::default() };
                    self.apply_setattrs(&mut g, &only_size)?;
                }
                Ok(Some((id, self.attrs(id, &g))))
            }
        }
    }

    /// Checks that moving directory `moving` into `to_dir` does not put it
    /// inside itself. Called with the rename mutex held, which freezes every
    /// parent pointer.
    fn check_not_ancestor(&self, moving: FileId, to_dir: FileId) -> VfsResult<()> {
        let mut cur = to_dir;
        // Depth bound: a tree cannot be deeper than it has objects.
        for _ in 0..=self.settings.max_files {
            if cur == moving {
                return Err(VfsError::Invalid);
            }
            if cur == ROOT {
                return Ok(());
            }
            cur = self.node(cur)?.state.read().dir()?.parent;
        }
        Err(VfsError::Invalid)
    }

    fn remove_common(&self, dir: FileId, name: &[u8], want_dir: bool) -> VfsResult<()> {
        check_entry_name(name, self.settings.max_name_len)?;
        for _ in 0..MAX_RETRIES {
            let child = self.entry_id(dir, name)?;
            let dref = self.node(dir)?;
            let Ok(cref) = self.node(child) else { continue };
            let set = order(vec![dref, cref]);
            let mut locked = lock_all(&set);
            if locked.get(dir)?.dir()?.get(name) != Some(child) {
                continue;
            }
            self.drop_link(child, locked.get(child)?, want_dir)?;
            let d = locked.get(dir)?;
            remove_name(d, name, want_dir)?;
            d.meta.touch_content();
            return Ok(());
        }
        Err(VfsError::Delay)
    }

    /// Takes away the link a name gave `node` (locked, id `id`), for REMOVE
    /// and RMDIR (`as_dir`) and for the target a rename replaces (`as_dir`:
    /// the source is a directory). A directory goes only as a directory
    /// and only when empty; anything else goes with its last link.
    fn drop_link(&self, id: FileId, node: &mut Node, as_dir: bool) -> VfsResult<()> {
        match (&node.body, as_dir) {
            (Body::Dir(d), true) if !d.is_empty() => return Err(VfsError::NotEmpty),
            (Body::Dir(_), true) => self.free(id, node),
            (Body::Dir(_), false) => return Err(VfsError::IsDir),
            (_, true) => return Err(VfsError::NotDir),
            (_, false) => {
                node.meta.nlink = node.meta.nlink.saturating_sub(1);
                node.meta.touch_ctime();
                if node.meta.nlink == 0 {
                    self.free(id, node);
                }
            }
        }
        Ok(())
    }

    fn rename_once(&self, from_dir: FileId, from: &[u8], to_dir: FileId, to: &[u8]) -> VfsResult<bool> {
        let src = self.entry_id(from_dir, from)?;
        let tgt = match self.entry_id(to_dir, to) {
            Ok(id) => Some(id),
            Err(VfsError::NotFound) => None,
            Err(e) => return Err(e),
        };
        let Ok(sref) = self.node(src) else {
            return Ok(false);
        };
        let src_is_dir = matches!(sref.state.read().body, Body::Dir(_));
        if src_is_dir && from_dir != to_dir {
            self.check_not_ancestor(src, to_dir)?;
        }
        let mut refs = vec![self.node(from_dir)?, self.node(to_dir)?, sref];
        if let Some(t) = tgt {
            match self.node(t) {
                Ok(r) => refs.push(r),
                Err(_) => return Ok(false),
            }
        }
        let set = order(refs);
        let mut l = lock_all(&set);
        if l.get(from_dir)?.dir()?.get(from) != Some(src) || l.get(to_dir)?.dir()?.get(to) != tgt {
            return Ok(false);
        }
        if tgt == Some(src) {
            // Two names of one object: POSIX says do nothing.
            return Ok(true);
        }
        if let Some(t) = tgt {
            // The target is replaced only by an object of its own kind.
            self.drop_link(t, l.get(t)?, src_is_dir)?;
            remove_name(l.get(to_dir)?, to, src_is_dir)?;
        }
        let fd = l.get(from_dir)?;
        remove_name(fd, from, src_is_dir)?;
        fd.meta.touch_content();
        let td = l.get(to_dir)?;
        td.dir_mut()?.insert(to, src);
        if src_is_dir {
            td.meta.nlink = td.meta.nlink.saturating_add(1);
        }
        td.meta.touch_content();
        let s = l.get(src)?;
        if let Body::Dir(d) = &mut s.body {
            d.parent = to_dir;
        }
        s.meta.touch_ctime();
        Ok(true)
    }
}

/// Takes `name` out of directory `dir` (locked); a subdirectory's `..`
/// (`was_dir`) stops counting as a link of `dir`. The caller touches the
/// directory: a rename that also adds a name to it does that once.
fn remove_name(dir: &mut Node, name: &[u8], was_dir: bool) -> VfsResult<()> {
    dir.dir_mut()?.remove(name);
    if was_dir {
        dir.meta.nlink = dir.meta.nlink.saturating_sub(1);
    }
    Ok(())
}

impl Vfs for MemFs {
    fn root(&self) -> FileId {
        ROOT
    }

    fn fast_paths(&self) -> Option<&dyn crate::FastPaths> {
        Some(self)
    }

    fn xattrs(&self) -> Option<&dyn crate::Xattrs> {
        Some(self)
    }

    fn data_ops(&self) -> Option<&dyn crate::DataOps42> {
        Some(self)
    }

    fn fsid(&self) -> u64 {
        self.settings.fsid
    }

    fn getattr(&self, id: FileId) -> VfsResult<Attrs> {
        let n = self.node(id)?;
        let g = n.state.read();
        g.live()?;
        Ok(self.attrs(id, &g))
    }

    fn setattr(&self, id: FileId, set: &SetAttrs, guard_ctime: Option<Timespec>) -> VfsResult<Attrs> {
        let n = self.node(id)?;
        let mut g = n.state.write();
        g.live()?;
        // Compared and applied under one lock: no window here.
        if guard_ctime.is_some_and(|c| c != g.meta.ctime) {
            return Err(VfsError::NotSync);
        }
        self.apply_setattrs(&mut g, set)?;
        Ok(self.attrs(id, &g))
    }

    fn lookup(&self, dir: FileId, name: &[u8]) -> VfsResult<(FileId, Attrs)> {
        let id = match classify_lookup(name, self.settings.max_name_len)? {
            LookupName::Dot => {
                self.node(dir)?.state.read().dir()?;
                dir
            }
            LookupName::DotDot => self.node(dir)?.state.read().dir()?.parent,
            LookupName::Entry(n) => self.entry_id(dir, n)?,
        };
        match self.getattr(id) {
            // Removed between reading the entry and reading the object.
            Err(VfsError::Stale) if id != dir => Err(VfsError::NotFound),
            r => r.map(|a| (id, a)),
        }
    }

    fn readlink(&self, id: FileId) -> VfsResult<Bytes> {
        let n = self.node(id)?;
        let g = n.state.read();
        g.live()?;
        match &g.body {
            Body::Symlink(t) => Ok(t.clone()),
            _ => Err(VfsError::BadType),
        }
    }

    fn read(&self, id: FileId, offset: u64, count: u32) -> VfsResult<ReadResult> {
        let n = self.node(id)?;
        let g = n.state.read();
        g.live()?;
        match &g.body {
            Body::File(f) => {
                let count = count.min(self.settings.max_read);
                let data = f.read(offset, u64::from(count), self.chunk);
                let eof = offset.saturating_add(data.len() as u64) >= f.size();
                Ok(ReadResult { data: Bytes::from(data), eof })
            }
            Body::Dir(_) => Err(VfsError::IsDir),
            _ => Err(VfsError::Invalid),
        }
    }

    fn write(&self, id: FileId, offset: u64, data: &[u8], stable: Stability) -> VfsResult<WriteResult> {
        let count = u32::try_from(data.len()).map_err(|_| VfsError::Invalid)?;
        let end = offset.checked_add(data.len() as u64).ok_or(VfsError::FBig)?;
        if end > self.settings.max_file_size {
            return Err(VfsError::FBig);
        }
        let n = self.node(id)?;
        let mut g = n.state.write();
        g.live()?;
        match &mut g.body {
            Body::File(f) => f.write(offset, data, self.chunk, &self.budget)?,
            Body::Dir(_) => return Err(VfsError::IsDir),
            _ => return Err(VfsError::Invalid),
        }
        g.meta.touch_content();
        // Nothing here is durable, but reporting the requested level keeps
        // the protocol path (COMMIT after UNSTABLE) what it is on a disk.
        Ok(WriteResult { count, committed: stable })
    }

    fn commit(&self, id: FileId, _offset: u64, _count: u32) -> VfsResult<()> {
        let n = self.node(id)?;
        let g = n.state.read();
        g.live()?;
        match g.body {
            Body::File(_) => Ok(()),
            Body::Dir(_) => Err(VfsError::IsDir),
            _ => Err(VfsError::Invalid),
        }
    }

    fn create(&self, dir: FileId, name: &[u8], how: &CreateHow, owner: Owner) -> VfsResult<(FileId, Attrs)> {
        let s = &self.settings;
        for _ in 0..MAX_RETRIES {
            let meta = Meta::new(s.default_file_mode, owner.uid, owner.gid, 1);
            let node = match how {
                CreateHow::Unchecked(set) | CreateHow::Guarded(set) => {
                    self.new_node(meta, Body::File(FileData::default()), set)?
                }
                CreateHow::Exclusive(v) => {
                    let mut n = Node { meta, body: Body::File(FileData::default()), live: true };
                    n.meta.verifier = Some(*v);
                    n
                }
            };
            match self.insert_entry(dir, name, node) {
                Err(VfsError::Exists) => {
                    if let Some(found) = self.create_existing(dir, name, how)? {
                        return Ok(found);
                    }
                }
                r => return r,
            }
        }
        Err(VfsError::Delay)
    }

    fn mkdir(&self, dir: FileId, name: &[u8], attrs: &SetAttrs, owner: Owner) -> VfsResult<(FileId, Attrs)> {
        if attrs.size.is_some() {
            return Err(VfsError::Invalid);
        }
        let meta = Meta::new(self.settings.default_dir_mode, owner.uid, owner.gid, 2);
        let node = self.new_node(meta, Body::Dir(Dir::new(dir)), attrs)?;
        self.insert_entry(dir, name, node)
    }

    fn symlink(
        &self,
        dir: FileId,
        name: &[u8],
        target: &[u8],
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        if target.is_empty() || target.contains(&0) || attrs.size.is_some() {
            return Err(VfsError::Invalid);
        }
        if target.len() > self.settings.max_symlink_len {
            return Err(VfsError::NameTooLong);
        }
        let meta = Meta::new(0o777, owner.uid, owner.gid, 1);
        let node = self.new_node(meta, Body::Symlink(Bytes::copy_from_slice(target)), attrs)?;
        self.insert_entry(dir, name, node)
    }

    fn mknod(
        &self,
        dir: FileId,
        name: &[u8],
        kind: NodeKind,
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        if attrs.size.is_some() {
            return Err(VfsError::Invalid);
        }
        let (ftype, rdev) = match kind {
            NodeKind::BlockDevice(ma, mi) => (FileType::BlockDevice, (ma, mi)),
            NodeKind::CharDevice(ma, mi) => (FileType::CharDevice, (ma, mi)),
            NodeKind::Socket => (FileType::Socket, (0, 0)),
            NodeKind::Fifo => (FileType::Fifo, (0, 0)),
        };
        let mut meta = Meta::new(self.settings.default_file_mode, owner.uid, owner.gid, 1);
        meta.rdev = rdev;
        let node = self.new_node(meta, Body::Special(ftype), attrs)?;
        self.insert_entry(dir, name, node)
    }

    fn remove(&self, dir: FileId, name: &[u8]) -> VfsResult<()> {
        self.remove_common(dir, name, false)
    }

    fn rmdir(&self, dir: FileId, name: &[u8]) -> VfsResult<()> {
        self.remove_common(dir, name, true)
    }

    fn rename(&self, from_dir: FileId, from: &[u8], to_dir: FileId, to: &[u8]) -> VfsResult<()> {
        check_entry_name(from, self.settings.max_name_len)?;
        check_entry_name(to, self.settings.max_name_len)?;
        let _cross = (from_dir != to_dir).then(|| self.rename_lock.lock());
        for _ in 0..MAX_RETRIES {
            if self.rename_once(from_dir, from, to_dir, to)? {
                return Ok(());
            }
        }
        Err(VfsError::Delay)
    }

    fn link(&self, id: FileId, dir: FileId, name: &[u8]) -> VfsResult<()> {
        check_entry_name(name, self.settings.max_name_len)?;
        let set = order(vec![self.node(id)?, self.node(dir)?]);
        let mut l = lock_all(&set);
        let t = l.get(id)?;
        t.live()?;
        match t.body {
            Body::Dir(_) => return Err(VfsError::IsDir),
            _ if t.meta.nlink == u32::MAX => return Err(VfsError::MLink),
            _ => {}
        }
        let d = l.get(dir)?;
        if d.dir()?.get(name).is_some() {
            return Err(VfsError::Exists);
        }
        d.dir_mut()?.insert(name, id);
        d.meta.touch_content();
        let t = l.get(id)?;
        t.meta.nlink += 1;
        t.meta.touch_ctime();
        Ok(())
    }

    fn readdir(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDir> {
        let n = self.node(dir)?;
        let g = n.state.read();
        let (list, eof) = g.dir()?.list(cookie, max_entries)?;
        let entries = list.into_iter().map(|(cookie, name, fileid)| DirEntry { fileid, name, cookie }).collect();
        Ok(ReadDir { entries, eof })
    }

    /// Attributes live beside the entries, not in them: each is looked up.
    fn readdir_plus(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<crate::ReadDirPlus> {
        crate::readdir_plus_by_lookup(self, dir, cookie, max_entries)
    }

    fn fsstat(&self, id: FileId) -> VfsResult<FsStat> {
        self.getattr(id)?;
        let total = self.budget.limit();
        let free = total.saturating_sub(self.budget.used());
        let files = self.settings.max_files;
        let free_files = files.saturating_sub(self.objects.load(std::sync::atomic::Ordering::Relaxed));
        Ok(FsStat {
            total_bytes: total,
            free_bytes: free,
            avail_bytes: free,
            total_files: files,
            free_files,
            avail_files: free_files,
        })
    }

    /// MemFs counts changes (`Meta::change`) rather than using the ctime.
    fn change_is_ctime(&self) -> bool {
        false
    }

    /// Nothing is cached or flushed.
    fn counters(&self) -> Vec<crate::Counter> {
        Vec::new()
    }
}

// See v42.rs.
impl crate::DataOps42 for MemFs {
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
        Some(super::v42::CLONE_BLKSIZE)
    }

    /// Memory has no access pattern to tune.
    fn advise(&self, _id: FileId, _offset: u64, _len: u64, _advice: crate::Advice) -> VfsResult<bool> {
        Ok(false)
    }
}

/// Everything is in memory: every request on it can run on the
/// connection's own thread, reads included, and there is no open file to
/// send a region of.
impl crate::FastPaths for MemFs {
    fn resident(&self, _id: FileId) -> bool {
        true
    }

    fn read_cached(&self, _id: FileId, _offset: u64, _count: u32) -> VfsResult<Option<ReadResult>> {
        Ok(None)
    }

    fn read_region(&self, _id: FileId, _offset: u64, _count: u32) -> VfsResult<Option<(crate::FileRegion, bool)>> {
        Ok(None)
    }

    fn read_data_region(&self, _id: FileId, _offset: u64, _count: u32) -> VfsResult<Option<(crate::FileRegion, bool)>> {
        Ok(None)
    }
}

// See xattr.rs.
impl crate::Xattrs for MemFs {
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

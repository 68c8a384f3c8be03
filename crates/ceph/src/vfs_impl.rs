//! The backend interface, each operation in the file of its kind.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use vfs::*;

use crate::fs::CephFs;
use crate::mount::check;

impl Vfs for CephFs {
    fn root(&self) -> FileId {
        self.root
    }

    fn fsid(&self) -> u64 {
        self.fsid
    }

    fn getattr(&self, id: FileId) -> VfsResult<Attrs> {
        self.guarded(|| self.attrs(&*self.node(id)?))
    }

    fn setattr(&self, id: FileId, set: &SetAttrs, guard_ctime: Option<Timespec>) -> VfsResult<Attrs> {
        self.guarded(|| self.do_setattr(id, set, guard_ctime))
    }

    fn lookup(&self, dir: FileId, name: &[u8]) -> VfsResult<(FileId, Attrs)> {
        self.guarded(|| self.do_lookup(dir, name))
    }

    fn readlink(&self, id: FileId) -> VfsResult<Bytes> {
        self.guarded(|| self.do_readlink(id))
    }

    fn read(&self, id: FileId, offset: u64, count: u32) -> VfsResult<ReadResult> {
        self.guarded(|| self.do_read(id, offset, count))
    }

    fn write(&self, id: FileId, offset: u64, data: &[u8], stable: Stability) -> VfsResult<WriteResult> {
        self.guarded(|| self.do_write(id, offset, data, stable))
    }

    fn commit(&self, id: FileId, _offset: u64, _count: u32) -> VfsResult<()> {
        self.guarded(|| self.do_commit(id))
    }

    fn create(&self, dir: FileId, name: &[u8], how: &CreateHow, owner: Owner) -> VfsResult<(FileId, Attrs)> {
        self.guarded(|| self.do_create(dir, name, how, owner))
    }

    fn mkdir(&self, dir: FileId, name: &[u8], attrs: &SetAttrs, owner: Owner) -> VfsResult<(FileId, Attrs)> {
        self.guarded(|| self.do_mkdir(dir, name, attrs, owner))
    }

    fn symlink(
        &self,
        dir: FileId,
        name: &[u8],
        target: &[u8],
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        self.guarded(|| self.do_symlink(dir, name, target, attrs, owner))
    }

    fn mknod(
        &self,
        dir: FileId,
        name: &[u8],
        kind: NodeKind,
        attrs: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        self.guarded(|| self.do_mknod(dir, name, kind, attrs, owner))
    }

    fn remove(&self, dir: FileId, name: &[u8]) -> VfsResult<()> {
        self.guarded(|| self.do_unlink(dir, name, false))
    }

    fn rmdir(&self, dir: FileId, name: &[u8]) -> VfsResult<()> {
        self.guarded(|| self.do_unlink(dir, name, true))
    }

    fn rename(&self, from_dir: FileId, from: &[u8], to_dir: FileId, to: &[u8]) -> VfsResult<()> {
        self.guarded(|| self.do_rename(from_dir, from, to_dir, to))
    }

    fn link(&self, id: FileId, dir: FileId, name: &[u8]) -> VfsResult<()> {
        self.guarded(|| self.do_link(id, dir, name))
    }

    fn readdir(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDir> {
        self.guarded(|| {
            let rd = self.do_readdir_plus(dir, cookie, max_entries)?;
            Ok(ReadDir { entries: rd.entries.into_iter().map(|e| e.entry).collect(), eof: rd.eof })
        })
    }

    fn readdir_plus(&self, dir: FileId, cookie: u64, max_entries: usize) -> VfsResult<ReadDirPlus> {
        self.guarded(|| self.do_readdir_plus(dir, cookie, max_entries))
    }

    fn fsstat(&self, id: FileId) -> VfsResult<FsStat> {
        self.guarded(|| {
            let n = self.node(id)?;
            // SAFETY: a plain C struct, for which all-zero is valid.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: a referenced inode; `st` is written.
            check(unsafe { (self.m.api.ceph_ll_statfs)(self.m.cm, n.inode, &mut st) })?;
            let unit = st.f_frsize.max(1);
            Ok(FsStat {
                total_bytes: st.f_blocks.saturating_mul(unit),
                free_bytes: st.f_bfree.saturating_mul(unit),
                avail_bytes: st.f_bavail.saturating_mul(unit),
                // CephFS counts the files in use and calls every other inode
                // number free.
                total_files: st.f_files.max(st.f_ffree),
                free_files: st.f_ffree.min(st.f_files.max(st.f_ffree)),
                avail_files: st.f_favail.min(st.f_files.max(st.f_ffree)),
            })
        })
    }

    fn xattrs(&self) -> Option<&dyn Xattrs> {
        Some(self)
    }

    fn data_ops(&self) -> Option<&dyn DataOps42> {
        Some(self)
    }

    /// Other heads and Ceph clients change the same file system.
    fn shared_store(&self) -> Option<&dyn SharedStore> {
        Some(self)
    }

    fn change_is_ctime(&self) -> bool {
        false
    }

    fn counters(&self) -> Vec<Counter> {
        vec![
            Counter::total(
                "ceph_inode_cache_hits",
                "Handles resolved from kept inodes",
                self.nodes.hits.load(Ordering::Relaxed),
            ),
            Counter::total(
                "ceph_inode_cache_misses",
                "Handles asked of the metadata server",
                self.nodes.misses.load(Ordering::Relaxed),
            ),
            Counter::gauge("ceph_inodes_kept", "Inodes this head keeps referenced", self.nodes.len() as u64),
            Counter::total(
                "ceph_listings_served",
                "Directory listings answered from a kept whole listing, without the metadata server",
                self.listings.served(),
            ),
            Counter::gauge(
                "ceph_listing_entries_kept",
                "Entries of whole directory listings kept (dir_cache_entries bounds them)",
                self.listings.entries() as u64,
            ),
            Counter::total(
                "ceph_calls_refused",
                "Requests answered DELAY because a call had waited on the cluster past call_deadline_secs",
                self.health.refused.load(Ordering::Relaxed),
            ),
            Counter::gauge("ceph_calls_waiting", "Calls in libcephfs now", self.health.waiting() as u64),
            Counter::gauge(
                "ceph_locked_files",
                "Files with byte-range locks taken in CephFS",
                self.locked.len() as u64,
            ),
            Counter::gauge("ceph_delegations_held", "CephFS delegations this head holds", self.delegs.len() as u64),
            Counter::total(
                "ceph_delegations_taken",
                "CephFS delegations taken behind NFSv4 delegations",
                self.delegs.granted.load(Ordering::Relaxed),
            ),
            Counter::total(
                "ceph_delegations_recalled",
                "CephFS delegations the metadata server asked back",
                self.delegs.recalled.load(Ordering::Relaxed),
            ),
            Counter::gauge(
                "ceph_cluster_away",
                "1 while new calls are refused because the cluster stopped answering",
                u64::from(self.health.away()),
            ),
        ]
    }
}

impl Xattrs for CephFs {
    fn getxattr(&self, id: FileId, name: &[u8]) -> VfsResult<Bytes> {
        self.guarded(|| self.do_getxattr(id, name))
    }

    fn setxattr(&self, id: FileId, name: &[u8], value: &[u8], how: XattrSet) -> VfsResult<Attrs> {
        self.guarded(|| self.do_setxattr(id, name, value, how))
    }

    fn listxattrs(&self, id: FileId) -> VfsResult<Vec<Bytes>> {
        self.guarded(|| self.do_listxattrs(id))
    }

    fn removexattr(&self, id: FileId, name: &[u8]) -> VfsResult<Attrs> {
        self.guarded(|| self.do_removexattr(id, name))
    }
}

/// Of the NFSv4.2 data operations libcephfs offers hole punching; holes
/// are not reported, nor space reserved, copied or cloned inside the
/// cluster.
impl DataOps42 for CephFs {
    fn seek(&self, _id: FileId, _offset: u64, _what: SeekWhat) -> VfsResult<SeekResult> {
        Err(VfsError::NotSupported)
    }

    fn read_sparse(&self, id: FileId, offset: u64, count: u32) -> VfsResult<(Vec<Segment>, bool)> {
        read_unsparse(self, id, offset, count)
    }

    fn allocate(&self, _id: FileId, _offset: u64, _length: u64) -> VfsResult<Attrs> {
        Err(VfsError::NotSupported)
    }

    fn deallocate(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        self.guarded(|| self.do_deallocate(id, offset, length))
    }

    fn copy_range(
        &self,
        _src: FileId,
        _src_offset: u64,
        _dst: FileId,
        _dst_offset: u64,
        _count: u64,
        _stable: Stability,
    ) -> VfsResult<CopyResult> {
        Err(VfsError::NotSupported)
    }

    fn clone_range(
        &self,
        _src: FileId,
        _src_offset: u64,
        _dst: FileId,
        _dst_offset: u64,
        _count: u64,
    ) -> VfsResult<()> {
        Err(VfsError::NotSupported)
    }

    fn clone_blksize(&self) -> Option<u32> {
        None
    }

    fn advise(&self, _id: FileId, _offset: u64, _len: u64, _advice: Advice) -> VfsResult<bool> {
        Ok(false)
    }
}

impl SharedStore for CephFs {
    fn delegate(&self, id: FileId, write: bool) -> VfsResult<bool> {
        self.guarded(|| self.do_delegate(id, write))
    }

    fn undelegate(&self, id: FileId) {
        self.do_undelegate(id)
    }

    fn on_delegation_recall(&self, sink: DelegationRecallSink) {
        self.delegs.set_sink(sink)
    }

    fn delegation_return_deadline(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.settings.delegation_return_secs)
    }

    fn range_lock(&self, id: FileId, owner: u64, lock: RangeLock, start: u64, end: u64) -> VfsResult<bool> {
        self.guarded(|| self.do_range_lock(id, owner, lock, start, end))
    }

    fn range_test(
        &self,
        id: FileId,
        owner: u64,
        lock: RangeLock,
        start: u64,
        end: u64,
    ) -> VfsResult<Option<(RangeLock, u64, u64)>> {
        self.guarded(|| self.do_range_test(id, owner, lock, start, end))
    }

    fn share_reserve(&self, id: FileId, owner: u64, access: u32, deny: u32) -> VfsResult<bool> {
        if !self.settings.share_reservations {
            return Ok(true);
        }
        self.guarded(|| self.do_share_reserve(id, owner, access, deny))
    }

    fn open_shared(&self, id: FileId, write: bool) -> VfsResult<()> {
        self.guarded(|| {
            let n = self.node(id)?;
            match write {
                true => self.fh_write(&n, id),
                false => n.fh(),
            }
            .map(|_| ())
        })
    }

    fn watch_share_denials(&self, sink: ShareDenialSink) -> VfsResult<bool> {
        self.gate.watch(&self.settings, self.instance.as_deref(), sink)
    }

    fn share_denials_marked(&self) -> VfsResult<bool> {
        self.guarded(|| self.gate.marked())
    }

    fn unwatch_share_denials(&self) {
        self.gate.unwatch()
    }

    fn mark_share_denials(&self) -> VfsResult<()> {
        self.gate.mark(&self.settings, self.instance.as_deref())
    }
}

//! Names: LOOKUP, the creations, REMOVE, RENAME, LINK, READLINK, SETATTR.

use std::ffi::c_int;
use std::ptr;
use std::sync::Arc;

use bytes::Bytes;
use vfs::{
    check_entry_name, check_setattrs, classify_lookup, verifier_times, Attrs, CreateHow, FileId, FileType, LookupName,
    NodeKind, Owner, SetAttrs, SetTime, Timespec, VfsError, VfsResult,
};

use crate::attrs::{setattr_mask, to_attrs};
use crate::ffi::{ceph_statx, Inode, UserPerm, CEPH_STATX_ALL_STATS};
use crate::fs::{is_dir, stat, CephFs};
use crate::mount::{check, cstr, OwnerPerm};
use crate::nodes::Node;

/// Largest size CephFS takes (off_t is signed).
pub(crate) const MAX_OFFSET: u64 = i64::MAX as u64;
/// Longest symlink target (PATH_MAX).
const MAX_SYMLINK: usize = 4095;
/// CephFS's snapshot directory: its inodes share their numbers with the
/// live tree's, so it cannot be given handles of its own.
const SNAPDIR: &[u8] = b".snap";

impl CephFs {
    pub(crate) fn do_lookup(&self, dir: FileId, name: &[u8]) -> VfsResult<(FileId, Attrs)> {
        let which = classify_lookup(name, self.settings.max_name_len)?;
        let d = self.dir(dir)?;
        match which {
            LookupName::Dot => Ok((dir, self.attrs(&d)?)),
            LookupName::DotDot if dir == self.root => Ok((dir, self.attrs(&d)?)),
            LookupName::DotDot => {
                let (n, stx) = self.lookup_raw(&d, b"..")?;
                Ok(self.keep(n, &stx))
            }
            LookupName::Entry(n) if n == SNAPDIR => Err(VfsError::NotFound),
            LookupName::Entry(n) => {
                let (node, stx) = self.lookup_raw(&d, n)?;
                Ok(self.keep(node, &stx))
            }
        }
    }

    /// The directory a new entry `name` goes into, after the checks every
    /// creation shares.
    fn dir_for_new(&self, dir: FileId, name: &[u8], ftype: FileType, set: &SetAttrs) -> VfsResult<Arc<Node>> {
        check_entry_name(name, self.settings.max_name_len)?;
        if name == SNAPDIR {
            return Err(VfsError::Invalid);
        }
        check_setattrs(ftype, set, MAX_OFFSET)?;
        self.dir(dir)
    }

    /// Applies what the creation itself could not set, makes the entry
    /// durable, and keeps the new node.
    fn finish_new(&self, d: &Node, node: Arc<Node>, stx: ceph_statx, set: &SetAttrs) -> VfsResult<(FileId, Attrs)> {
        let rest = SetAttrs { mode: None, ..set.clone() };
        let stx = if rest == SetAttrs::default() { stx } else { self.apply(&node, &rest)? };
        self.sync_dir(d)?;
        Ok(self.keep(node, &stx))
    }

    /// `ceph_ll_setattr`, then the attributes it left.
    fn apply(&self, node: &Node, set: &SetAttrs) -> VfsResult<ceph_statx> {
        let (mut stx, mask) = setattr_mask(set);
        if mask != 0 {
            // SAFETY: a referenced inode; `stx` holds the values the mask names.
            check(unsafe { (self.m.api.ceph_ll_setattr)(self.m.cm, node.inode, &mut stx, mask, self.m.perms) })?;
        }
        stat(node)
    }

    pub(crate) fn do_setattr(&self, id: FileId, set: &SetAttrs, guard: Option<Timespec>) -> VfsResult<Attrs> {
        let n = self.node(id)?;
        let before = self.attrs(&n)?;
        check_setattrs(before.ftype, set, MAX_OFFSET)?;
        if guard.is_some_and(|g| g != before.ctime) {
            return Err(VfsError::NotSync);
        }
        if *set != SetAttrs::default() {
            self.recall_own(&[id])?;
        }
        Ok(to_attrs(&self.apply(&n, set)?, self.fsid))
    }

    pub(crate) fn do_create(
        &self,
        dir: FileId,
        name: &[u8],
        how: &CreateHow,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        let (mode, set) = match how {
            CreateHow::Unchecked(set) | CreateHow::Guarded(set) => {
                (set.mode.unwrap_or(self.settings.default_file_mode) & 0o7777, set.clone())
            }
            CreateHow::Exclusive(v) => {
                let (a, m) = verifier_times(v);
                (
                    self.settings.default_file_mode,
                    SetAttrs { atime: SetTime::Client(a), mtime: SetTime::Client(m), ..SetAttrs::default() },
                )
            }
        };
        let d = self.dir_for_new(dir, name, FileType::Regular, &set)?;
        let c = cstr(name)?;
        let perm = OwnerPerm::new(&self.m, owner);
        let (mut inode, mut fh) = (ptr::null_mut(), ptr::null_mut());
        let mut stx = ceph_statx::default();
        // Always O_EXCL: an existing name is examined instead, so an
        // unchecked create never opens a device or FIFO.
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_RDWR;
        // SAFETY: a referenced directory; `inode` and `fh` receive the new
        // file's reference and open file.
        let rc = unsafe {
            (self.m.api.ceph_ll_create)(
                self.m.cm,
                d.inode,
                c.as_ptr(),
                libc::S_IFREG | mode,
                flags,
                &mut inode,
                &mut fh,
                &mut stx,
                CEPH_STATX_ALL_STATS,
                0,
                perm.ptr,
            )
        };
        match check(rc) {
            Ok(_) => {}
            Err(VfsError::Exists) => return self.create_existing(&d, name, how),
            Err(e) => return Err(e),
        }
        let node = Node::adopt_open(&self.m, inode, fh);
        self.finish_new(&d, node, stx, &set)
    }

    /// CREATE when the name is taken: a retransmitted exclusive create, or
    /// an unchecked create of an existing file (only its size is applied).
    fn create_existing(&self, d: &Node, name: &[u8], how: &CreateHow) -> VfsResult<(FileId, Attrs)> {
        let (node, stx) = self.lookup_raw(d, name)?;
        let a = to_attrs(&stx, self.fsid);
        if a.ftype != FileType::Regular {
            return Err(VfsError::Exists);
        }
        let stx = match how {
            CreateHow::Guarded(_) => return Err(VfsError::Exists),
            CreateHow::Exclusive(v) => {
                if (a.atime, a.mtime) != verifier_times(v) {
                    return Err(VfsError::Exists);
                }
                stx
            }
            CreateHow::Unchecked(set) => match set.size {
                Some(size) => self.apply(&node, &SetAttrs { size: Some(size), ..SetAttrs::default() })?,
                None => stx,
            },
        };
        Ok(self.keep(node, &stx))
    }

    /// Runs one of libcephfs's creating calls as `owner` and takes the new
    /// object's reference: `call` gets the credentials, where to put the
    /// reference and the attributes.
    fn make(
        &self,
        owner: Owner,
        call: impl FnOnce(*const UserPerm, *mut *mut Inode, *mut ceph_statx) -> c_int,
    ) -> VfsResult<(Arc<Node>, ceph_statx)> {
        let perm = OwnerPerm::new(&self.m, owner);
        let mut out = ptr::null_mut();
        let mut stx = ceph_statx::default();
        check(call(perm.ptr, &mut out, &mut stx))?;
        Ok((Node::adopt(&self.m, out), stx))
    }

    pub(crate) fn do_mkdir(
        &self,
        dir: FileId,
        name: &[u8],
        set: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        let d = self.dir_for_new(dir, name, FileType::Directory, set)?;
        let mode = set.mode.unwrap_or(self.settings.default_dir_mode) & 0o7777;
        let c = cstr(name)?;
        let (m, w) = (&self.m, CEPH_STATX_ALL_STATS);
        // SAFETY: a referenced directory; `out` receives a reference.
        let (node, stx) = self.make(owner, |perm, out, stx| unsafe {
            (m.api.ceph_ll_mkdir)(m.cm, d.inode, c.as_ptr(), mode, out, stx, w, 0, perm)
        })?;
        self.finish_new(&d, node, stx, set)
    }

    pub(crate) fn do_symlink(
        &self,
        dir: FileId,
        name: &[u8],
        target: &[u8],
        set: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        let d = self.dir_for_new(dir, name, FileType::Symlink, set)?;
        if target.is_empty() || target.len() > MAX_SYMLINK {
            return Err(if target.is_empty() { VfsError::Invalid } else { VfsError::NameTooLong });
        }
        let (c, t) = (cstr(name)?, cstr(target)?);
        let (m, w) = (&self.m, CEPH_STATX_ALL_STATS);
        // SAFETY: a referenced directory; `out` receives a reference.
        let (node, stx) = self.make(owner, |perm, out, stx| unsafe {
            (m.api.ceph_ll_symlink)(m.cm, d.inode, c.as_ptr(), t.as_ptr(), out, stx, w, 0, perm)
        })?;
        // A symlink's mode is not the client's to choose.
        let set = SetAttrs { mode: None, ..set.clone() };
        self.finish_new(&d, node, stx, &set)
    }

    pub(crate) fn do_mknod(
        &self,
        dir: FileId,
        name: &[u8],
        kind: NodeKind,
        set: &SetAttrs,
        owner: Owner,
    ) -> VfsResult<(FileId, Attrs)> {
        let (ftype, fmt, rdev) = match kind {
            NodeKind::BlockDevice(ma, mi) => (FileType::BlockDevice, libc::S_IFBLK, libc::makedev(ma, mi)),
            NodeKind::CharDevice(ma, mi) => (FileType::CharDevice, libc::S_IFCHR, libc::makedev(ma, mi)),
            NodeKind::Socket => (FileType::Socket, libc::S_IFSOCK, 0),
            NodeKind::Fifo => (FileType::Fifo, libc::S_IFIFO, 0),
        };
        let d = self.dir_for_new(dir, name, ftype, set)?;
        let mode = set.mode.unwrap_or(self.settings.default_file_mode) & 0o7777;
        let c = cstr(name)?;
        let (m, w) = (&self.m, CEPH_STATX_ALL_STATS);
        // SAFETY: a referenced directory; `out` receives a reference.
        let (node, stx) = self.make(owner, |perm, out, stx| unsafe {
            (m.api.ceph_ll_mknod)(m.cm, d.inode, c.as_ptr(), fmt | mode, rdev, out, stx, w, 0, perm)
        })?;
        self.finish_new(&d, node, stx, set)
    }

    pub(crate) fn do_readlink(&self, id: FileId) -> VfsResult<Bytes> {
        let n = self.node(id)?;
        if self.ftype(&n)? != FileType::Symlink {
            return Err(VfsError::BadType);
        }
        let mut buf = vec![0u8; MAX_SYMLINK + 1];
        // SAFETY: a referenced inode; the buffer's length is passed.
        let len = check(unsafe {
            (self.m.api.ceph_ll_readlink)(self.m.cm, n.inode, buf.as_mut_ptr().cast(), buf.len(), self.m.perms)
        })?;
        buf.truncate(len as usize);
        Ok(Bytes::from(buf))
    }

    /// REMOVE (`dir_wanted` false) and RMDIR (true), with the type errors
    /// the protocols name.
    pub(crate) fn do_unlink(&self, dir: FileId, name: &[u8], dir_wanted: bool) -> VfsResult<()> {
        check_entry_name(name, self.settings.max_name_len)?;
        let d = self.dir(dir)?;
        let (victim, stx) = self.lookup_raw(&d, name)?;
        match (is_dir(&stx), dir_wanted) {
            (true, false) => return Err(VfsError::IsDir),
            (false, true) => return Err(VfsError::NotDir),
            _ => {}
        }
        self.recall_own(&[stx.stx_ino])?;
        let c = cstr(name)?;
        let call = if dir_wanted { self.m.api.ceph_ll_rmdir } else { self.m.api.ceph_ll_unlink };
        // SAFETY: a referenced directory and a C string.
        check(unsafe { call(self.m.cm, d.inode, c.as_ptr(), self.m.perms) })?;
        drop(victim);
        if stx.stx_nlink <= 1 || dir_wanted {
            self.nodes.remove(stx.stx_ino);
        }
        self.sync_dir(&d)
    }

    pub(crate) fn do_rename(&self, from_dir: FileId, from: &[u8], to_dir: FileId, to: &[u8]) -> VfsResult<()> {
        check_entry_name(from, self.settings.max_name_len)?;
        check_entry_name(to, self.settings.max_name_len)?;
        let (fd, td) = (self.dir(from_dir)?, self.dir(to_dir)?);
        let (_, moved) = self.lookup_raw(&fd, from)?;
        let replaced = self.lookup_raw(&td, to).ok().map(|(_, stx)| stx);
        // Two names of one object: POSIX makes this a no-op, CephFS would
        // drop the source name.
        if replaced.is_some_and(|r| r.stx_ino == moved.stx_ino) {
            return Ok(());
        }
        self.recall_own(&[moved.stx_ino, replaced.map_or(moved.stx_ino, |r| r.stx_ino)])?;
        let (f, t) = (cstr(from)?, cstr(to)?);
        // SAFETY: referenced directories and C strings.
        check(unsafe {
            (self.m.api.ceph_ll_rename)(self.m.cm, fd.inode, f.as_ptr(), td.inode, t.as_ptr(), self.m.perms)
        })?;
        if let Some(stx) = replaced.filter(|s| s.stx_nlink <= 1 || is_dir(s)) {
            self.nodes.remove(stx.stx_ino);
        }
        self.sync_dir(&fd)?;
        if from_dir != to_dir {
            self.sync_dir(&td)?;
        }
        Ok(())
    }

    pub(crate) fn do_link(&self, id: FileId, dir: FileId, name: &[u8]) -> VfsResult<()> {
        check_entry_name(name, self.settings.max_name_len)?;
        let n = self.node(id)?;
        if self.ftype(&n)? == FileType::Directory {
            return Err(VfsError::IsDir);
        }
        self.recall_own(&[id])?;
        let d = self.dir(dir)?;
        let c = cstr(name)?;
        // SAFETY: referenced inodes and a C string.
        check(unsafe { (self.m.api.ceph_ll_link)(self.m.cm, n.inode, d.inode, c.as_ptr(), self.m.perms) })?;
        self.sync_dir(&d)
    }
}

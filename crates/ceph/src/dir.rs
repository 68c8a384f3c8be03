//! READDIR and READDIRPLUS: one pass over the directory with
//! `ceph_readdirplus_r`, which gives every entry's attributes and inode
//! from the same reply of the metadata server.

use std::ffi::CStr;
use std::ptr;

use bytes::Bytes;
use vfs::{DirEntry, DirEntryPlus, FileId, ReadDirPlus, VfsError, VfsResult};

use crate::attrs::to_attrs;
use crate::ffi::{ceph_dir_result, ceph_statx, AT_SYMLINK_NOFOLLOW, CEPH_STATX_ALL_STATS};
use crate::fs::{is_dir, stat, CephFs};
use crate::listings::{Entry, Listing};
use crate::mount::{check, Mount};
use crate::nodes::Node;

/// The cookie of a directory's last entry: the largest the server hands
/// out (it keeps the two above for itself); libcephfs's positions stay
/// below 2^62.
const END_COOKIE: u64 = u64::MAX - 2;

/// libcephfs's position of a directory's first entry after "." (0) and
/// ".." (1), in the leftmost fragment (whose value is 0) of a hash-ordered
/// directory as of any other.
const FIRST_ENTRY: u64 = 2;

/// An open directory stream, released on drop.
struct DirStream<'a> {
    m: &'a Mount,
    d: *mut ceph_dir_result,
}

impl Drop for DirStream<'_> {
    fn drop(&mut self) {
        // SAFETY: opened by ceph_ll_opendir and not used after this.
        unsafe { (self.m.api.ceph_ll_releasedir)(self.m.cm, self.d) };
    }
}

impl CephFs {
    /// Entries after `cookie`, at most `max`. A cookie is the stream's
    /// position after the entry (`ceph_telldir`): CephFS orders a
    /// directory by name hash within its fragments, so positions survive
    /// entries being added or removed elsewhere in it.
    pub(crate) fn do_readdir_plus(&self, dir: FileId, cookie: u64, max: usize) -> VfsResult<ReadDirPlus> {
        let d = self.node(dir)?;
        let stx = stat(&d)?;
        if !is_dir(&stx) {
            return Err(VfsError::NotDir);
        }
        if cookie == END_COOKIE {
            return Ok(ReadDirPlus { entries: Vec::new(), eof: true });
        }
        if let Some(l) = self.listings.get(dir, stx.stx_version) {
            match self.serve_listing(&d, &l, cookie, max) {
                Some(r) => {
                    self.listings.count_served();
                    return Ok(r);
                }
                None => self.listings.forget(dir),
            }
        }
        let r = self.read_stream(&d, cookie, max)?;
        if cookie == 0 && r.eof && self.settings.dir_cache_entries > 0 {
            let entries = r
                .entries
                .iter()
                .map(|e| Entry { name: e.entry.name.clone(), ino: e.entry.fileid, cookie: e.entry.cookie })
                .collect();
            self.listings.put(dir, Listing { version: stx.stx_version, entries });
        }
        Ok(r)
    }

    /// Entries of a kept listing after `cookie`, each with attributes read
    /// now through its inode; `None` when the listing does not know the
    /// cookie or an entry is gone (the stream is read instead).
    fn serve_listing(&self, d: &Node, l: &Listing, cookie: u64, max: usize) -> Option<ReadDirPlus> {
        let start = match cookie {
            0 => 0,
            c => l.entries.iter().position(|e| e.cookie == c)? + 1,
        };
        let rest = &l.entries[start..];
        let mut entries = Vec::with_capacity(rest.len().min(max));
        for e in rest.iter().take(max) {
            let (id, attrs) = match self.nodes.get(e.ino) {
                Some(n) => (e.ino, to_attrs(&stat(&n).ok()?, self.fsid)),
                None => {
                    let (n, stx) = self.lookup_raw(d, &e.name).ok()?;
                    if stx.stx_ino != e.ino {
                        return None;
                    }
                    self.keep(n, &stx)
                }
            };
            if attrs.nlink == 0 {
                return None;
            }
            let entry = DirEntry { fileid: id, name: e.name.clone(), cookie: e.cookie };
            entries.push(DirEntryPlus { entry, obj: Ok((id, attrs)) });
        }
        Some(ReadDirPlus { eof: rest.len() <= max, entries })
    }

    /// Entries after `cookie` from libcephfs's directory stream.
    fn read_stream(&self, d: &Node, cookie: u64, max: usize) -> VfsResult<ReadDirPlus> {
        let mut stream = ptr::null_mut();
        // SAFETY: a referenced directory; `stream` receives the stream.
        check(unsafe { (self.m.api.ceph_ll_opendir)(self.m.cm, d.inode, &mut stream, self.m.perms) })?;
        let stream = DirStream { m: &self.m, d: stream };
        // A listing from the start begins past "." and "..", which the
        // reply leaves out anyway: libcephfs asks the metadata server for
        // each one's recursive statistics (a round trip apiece, caps or
        // not) when the stream passes them.
        let start = if cookie == 0 { FIRST_ENTRY } else { cookie };
        // SAFETY: an open stream.
        unsafe { (self.m.api.ceph_seekdir)(self.m.cm, stream.d, start as i64) };
        let mut entries: Vec<DirEntryPlus> = Vec::new();
        loop {
            // SAFETY: a plain C struct, for which all-zero is valid.
            let mut de: libc::dirent = unsafe { std::mem::zeroed() };
            let mut stx = ceph_statx::default();
            let mut inode = ptr::null_mut();
            // SAFETY: an open stream; `de`, `stx` and `inode` are written.
            let rc = check(unsafe {
                (self.m.api.ceph_readdirplus_r)(
                    self.m.cm,
                    stream.d,
                    &mut de,
                    &mut stx,
                    CEPH_STATX_ALL_STATS,
                    AT_SYMLINK_NOFOLLOW,
                    &mut inode,
                )
            })?;
            if rc == 0 {
                // After the last entry libcephfs reports one of several
                // end positions, depending on what it had cached; one
                // cookie of our own says "the end" every time.
                if let Some(last) = entries.last_mut() {
                    last.entry.cookie = END_COOKIE;
                }
                return Ok(ReadDirPlus { entries, eof: true });
            }
            let node = Node::adopt(&self.m, inode);
            // SAFETY: libcephfs NUL-terminates the name within `d_name`.
            let name = unsafe { CStr::from_ptr(de.d_name.as_ptr()) }.to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if entries.len() == max {
                // One entry more than asked for: not the end.
                return Ok(ReadDirPlus { entries, eof: false });
            }
            // SAFETY: an open stream.
            let next = unsafe { (self.m.api.ceph_telldir)(self.m.cm, stream.d) } as u64;
            let (id, attrs) = self.keep(node, &stx);
            let entry = DirEntry { fileid: id, name: Bytes::copy_from_slice(name), cookie: next };
            entries.push(DirEntryPlus { entry, obj: Ok((id, attrs)) });
        }
    }
}

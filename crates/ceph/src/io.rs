//! READ, WRITE, COMMIT and the NFSv4.2 data operations CephFS offers.

use std::ffi::c_int;

use bytes::Bytes;
use vfs::{Attrs, Errno, FileId, FileType, ReadResult, Stability, VfsError, VfsResult, WriteResult};

use crate::fs::CephFs;
use crate::mount::{check, write_back_error};
use crate::namespace::MAX_OFFSET;
use crate::nodes::Node;
use std::sync::Arc;

/// The largest single `ceph_ll_read`/`ceph_ll_write` (its return is an int).
const MAX_IO: u64 = 1 << 30;

impl CephFs {
    /// The regular file `id`, with the type errors READ and WRITE name.
    fn file(&self, id: FileId) -> VfsResult<(Arc<Node>, Attrs)> {
        let n = self.node(id)?;
        let a = self.attrs(&n)?;
        match a.ftype {
            FileType::Regular => Ok((n, a)),
            FileType::Directory => Err(VfsError::IsDir),
            _ => Err(VfsError::Invalid),
        }
    }

    pub(crate) fn do_read(&self, id: FileId, offset: u64, count: u32) -> VfsResult<ReadResult> {
        let (n, a) = self.file(id)?;
        if offset >= a.size || count == 0 {
            return Ok(ReadResult { data: Bytes::new(), eof: offset >= a.size });
        }
        let want = u64::from(count).min(a.size - offset).min(MAX_IO) as usize;
        // Not zeroed first: libcephfs fills it, and only what it filled is
        // kept (zeroing a 1 MiB buffer per READ costs as much as the copy).
        let mut buf: Vec<u8> = Vec::with_capacity(want);
        let fh = n.fh()?;
        let mut got = 0usize;
        // A short read is retried: the cluster may return one object's worth.
        while got < want {
            // SAFETY: an open file of this mount; `want - got` bytes from
            // `got` lie inside the buffer's capacity.
            let r = check(unsafe {
                (self.m.api.ceph_ll_read)(
                    self.m.cm,
                    fh,
                    (offset + got as u64) as i64,
                    (want - got) as u64,
                    buf.as_mut_ptr().add(got).cast(),
                )
            })? as usize;
            if r == 0 {
                break;
            }
            got += r.min(want - got);
        }
        // SAFETY: libcephfs wrote the first `got` bytes.
        unsafe { buf.set_len(got) };
        let eof = offset + got as u64 >= a.size;
        Ok(ReadResult { data: Bytes::from(buf), eof })
    }

    pub(crate) fn do_write(&self, id: FileId, offset: u64, data: &[u8], stable: Stability) -> VfsResult<WriteResult> {
        let (n, _) = self.file(id)?;
        if offset.checked_add(data.len() as u64).is_none_or(|end| end > MAX_OFFSET) {
            return Err(VfsError::FBig);
        }
        let fh = self.fh_write(&n, id)?;
        let mut done = 0usize;
        while done < data.len() {
            let chunk = (data.len() - done).min(MAX_IO as usize);
            // SAFETY: an open file of this mount; `data[done..]` is readable.
            let w = check(unsafe {
                (self.m.api.ceph_ll_write)(
                    self.m.cm,
                    fh,
                    (offset + done as u64) as i64,
                    chunk as u64,
                    data[done..].as_ptr().cast(),
                )
            })? as usize;
            if w == 0 {
                tracing::error!(fileid = id, offset = offset + done as u64, "CephFS accepted no bytes of a write");
                return Err(VfsError::Io(Errno::EIO));
            }
            done += w;
        }
        if stable != Stability::Unstable {
            self.flush(&n, stable == Stability::DataSync)?;
        }
        Ok(WriteResult { count: done as u32, committed: stable })
    }

    /// Waits until the OSDs hold what this head wrote to `n` (and, unless
    /// `data_only`, its metadata is with the metadata server).
    fn flush(&self, n: &Node, data_only: bool) -> VfsResult<()> {
        check(self.fsync(n, data_only)?).map(|_| ())
    }

    /// `ceph_ll_fsync`'s return: 0, or a negated errno.
    fn fsync(&self, n: &Node, data_only: bool) -> VfsResult<c_int> {
        let fh = n.fh()?;
        // SAFETY: an open file of this mount.
        Ok(unsafe { (self.m.api.ceph_ll_fsync)(self.m.cm, fh, i32::from(data_only)) })
    }

    pub(crate) fn do_commit(&self, id: FileId) -> VfsResult<()> {
        let (n, _) = self.file(id)?;
        match self.fsync(&n, false)? {
            rc if rc < 0 => Err(write_back_error(-rc)),
            _ => Ok(()),
        }
    }

    /// DEALLOCATE: a hole punched in place. (ALLOCATE stays unsupported:
    /// CephFS refuses to reserve space ahead, fallocate mode 0.)
    pub(crate) fn do_deallocate(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        let (n, _) = self.file(id)?;
        if length == 0 {
            return Err(VfsError::Invalid);
        }
        if offset.checked_add(length).is_none_or(|end| end > MAX_OFFSET) {
            return Err(VfsError::FBig);
        }
        let fh = self.fh_write(&n, id)?;
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: an open file of this mount.
        check(unsafe { (self.m.api.ceph_ll_fallocate)(self.m.cm, fh, mode, offset as i64, length as i64) })?;
        self.attrs(&n)
    }
}

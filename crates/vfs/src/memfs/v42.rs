//! The NFSv4.2 data operations of [`MemFs`] (RFC 7862), called in one line
//! each from the `impl DataOps42` in ops.rs. Extended attributes are in
//! [`super::xattr`].
//!
//! Holes are the chunks a file never had written (see [`super::data`]), so
//! SEEK and READ_PLUS find them at chunk granularity; DEALLOCATE frees the
//! chunks it covers, and COPY carries holes over as holes, so a sparse
//! file stays sparse. CLONE is a copy: nothing in memory is cheaper to
//! share than to copy, and the result reads the same.

use bytes::Bytes;

use super::data::FileData;
use super::node::{lock_all, order, Body, Locked, Node};
use super::MemFs;
use crate::{Attrs, CopyResult, FileId, SeekResult, SeekWhat, Segment, Stability, VfsError, VfsResult};

/// Most bytes moved at once by a copy: bounds the buffer between reading
/// the source and writing the destination.
const COPY_BUFFER: u64 = 1 << 20;

/// What CLONE says clones should be aligned to. MemFs copies, so any
/// alignment works; this is the common block size clients expect.
pub(super) const CLONE_BLKSIZE: u32 = 4096;

/// The data of a regular file, or the error for any other object.
fn file(n: &Node) -> VfsResult<&FileData> {
    n.live()?;
    match &n.body {
        Body::File(f) => Ok(f),
        Body::Dir(_) => Err(VfsError::IsDir),
        _ => Err(VfsError::Invalid),
    }
}

fn file_mut(n: &mut Node) -> VfsResult<&mut FileData> {
    n.live()?;
    match &mut n.body {
        Body::File(f) => Ok(f),
        Body::Dir(_) => Err(VfsError::IsDir),
        _ => Err(VfsError::Invalid),
    }
}

/// Ranges of one file must not overlap (RFC 7862 sections 15.2.3, 15.13.3).
fn overlap(same_file: bool, src_offset: u64, dst_offset: u64, len: u64) -> bool {
    same_file && len > 0 && src_offset < dst_offset + len && dst_offset < src_offset + len
}

impl MemFs {
    /// Refuses a range ending past the largest file.
    fn check_end(&self, offset: u64, len: u64) -> VfsResult<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.settings.max_file_size => Ok(()),
            _ => Err(VfsError::FBig),
        }
    }

    pub(super) fn seek_impl(&self, id: FileId, offset: u64, what: SeekWhat) -> VfsResult<SeekResult> {
        let n = self.node(id)?;
        let g = n.state.read();
        let f = file(&g)?;
        let size = f.size();
        if offset > size {
            return Err(VfsError::NxIo);
        }
        let found = match what {
            SeekWhat::Data => f.next_data(offset, self.chunk).unwrap_or(size),
            SeekWhat::Hole => f.next_hole(offset, self.chunk),
        };
        Ok(SeekResult { offset: found, eof: found >= size })
    }

    pub(super) fn read_sparse_impl(&self, id: FileId, offset: u64, count: u32) -> VfsResult<(Vec<Segment>, bool)> {
        let n = self.node(id)?;
        let g = n.state.read();
        let f = file(&g)?;
        let size = f.size();
        if offset >= size {
            return Ok((Vec::new(), true));
        }
        let end = size.min(offset + u64::from(count.min(self.settings.max_read)));
        let mut segs = Vec::new();
        let mut pos = offset;
        while pos < end {
            match f.next_data(pos, self.chunk) {
                Some(d) if d == pos => {
                    let stop = f.next_hole(pos, self.chunk).min(end);
                    let data = f.read(pos, stop - pos, self.chunk);
                    segs.push(Segment::Data { offset: pos, data: Bytes::from(data) });
                    pos = stop;
                }
                found => {
                    let stop = found.unwrap_or(end).min(end);
                    segs.push(Segment::Hole { offset: pos, length: stop - pos });
                    pos = stop;
                }
            }
        }
        Ok((segs, end >= size))
    }

    /// ALLOCATE or DEALLOCATE of a range of a regular file.
    fn change_range(
        &self,
        id: FileId,
        offset: u64,
        length: u64,
        change: impl FnOnce(&mut FileData, u64, &super::data::Budget) -> VfsResult<()>,
    ) -> VfsResult<Attrs> {
        if length == 0 {
            return Err(VfsError::Invalid);
        }
        self.check_end(offset, length)?;
        let n = self.node(id)?;
        let mut g = n.state.write();
        change(file_mut(&mut g)?, self.chunk, &self.budget)?;
        g.meta.touch_content();
        Ok(self.attrs(id, &g))
    }

    pub(super) fn allocate_impl(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        self.change_range(id, offset, length, |f, chunk, budget| f.allocate(offset, length, chunk, budget))
    }

    pub(super) fn deallocate_impl(&self, id: FileId, offset: u64, length: u64) -> VfsResult<Attrs> {
        self.change_range(id, offset, length, |f, chunk, budget| {
            f.punch(offset, length, chunk, budget);
            Ok(())
        })
    }

    /// Copies `len` bytes (all within the source) between two locked
    /// files, data as data and holes as holes, and grows the destination
    /// to the end of the range. Ranges of one file do not overlap.
    fn copy_locked(&self, l: &mut Locked<'_>, src: FileId, so: u64, dst: FileId, doff: u64, len: u64) -> VfsResult<()> {
        let mut done = 0;
        while done < len {
            let pos = so + done;
            let (data, until) = {
                let f = file(l.get(src)?)?;
                match f.next_data(pos, self.chunk) {
                    Some(d) if d == pos => (true, f.next_hole(pos, self.chunk)),
                    Some(d) => (false, d),
                    None => (false, u64::MAX),
                }
            };
            let step = until.min(so + len) - pos;
            if data {
                let step = step.min(COPY_BUFFER);
                let bytes = file(l.get(src)?)?.read(pos, step, self.chunk);
                file_mut(l.get(dst)?)?.write(doff + done, &bytes, self.chunk, &self.budget)?;
                done += step;
            } else {
                file_mut(l.get(dst)?)?.punch(doff + done, step, self.chunk, &self.budget);
                done += step;
            }
        }
        let d = file_mut(l.get(dst)?)?;
        if d.size() < doff + len {
            d.truncate(doff + len, self.chunk, &self.budget);
        }
        l.get(dst)?.meta.touch_content();
        Ok(())
    }

    /// Locks source and destination and runs `f` with the source's size.
    fn with_pair<T>(
        &self,
        src: FileId,
        dst: FileId,
        f: impl FnOnce(&mut Locked<'_>, u64) -> VfsResult<T>,
    ) -> VfsResult<T> {
        let set = order(vec![self.node(src)?, self.node(dst)?]);
        let mut l = lock_all(&set);
        file_mut(l.get(dst)?)?;
        let size = file(l.get(src)?)?.size();
        f(&mut l, size)
    }

    pub(super) fn copy_range_impl(
        &self,
        src: FileId,
        src_offset: u64,
        dst: FileId,
        dst_offset: u64,
        count: u64,
        stable: Stability,
    ) -> VfsResult<CopyResult> {
        self.with_pair(src, dst, |l, size| {
            // The source as it is now bounds the copy (count 0: all of it).
            let avail = size.saturating_sub(src_offset);
            let len = if count == 0 { avail } else { count.min(avail) };
            self.check_end(dst_offset, len)?;
            if overlap(src == dst, src_offset, dst_offset, len) {
                return Err(VfsError::Invalid);
            }
            if len > 0 {
                self.copy_locked(l, src, src_offset, dst, dst_offset, len)?;
            }
            // Nothing is durable here; as with write, the level asked for
            // is reported.
            Ok(CopyResult { count: len, committed: stable })
        })
    }

    pub(super) fn clone_range_impl(
        &self,
        src: FileId,
        src_offset: u64,
        dst: FileId,
        dst_offset: u64,
        count: u64,
    ) -> VfsResult<()> {
        self.with_pair(src, dst, |l, size| {
            // RFC 7862 section 15.13.3: the source range lies within the file.
            let len = match src_offset.checked_add(count) {
                _ if src_offset > size => return Err(VfsError::Invalid),
                _ if count == 0 => size - src_offset,
                Some(end) if end <= size => count,
                _ => return Err(VfsError::Invalid),
            };
            self.check_end(dst_offset, len)?;
            if overlap(src == dst, src_offset, dst_offset, len) {
                return Err(VfsError::Invalid);
            }
            if len > 0 {
                self.copy_locked(l, src, src_offset, dst, dst_offset, len)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CreateHow, DataOps42, MemFsSettings, Owner, SetAttrs, Vfs};

    /// Holes are found at chunk granularity, a copy keeps them, and a
    /// punch that covers a whole chunk frees it.
    #[test]
    fn holes_are_unallocated_chunks_and_survive_a_copy() {
        let fs = MemFs::with_settings(MemFsSettings { chunk_size: 4096, ..Default::default() });
        let how = CreateHow::Guarded(SetAttrs::default());
        let owner = Owner { uid: 0, gid: 0 };
        let (a, _) = fs.create(fs.root(), b"a", &how, owner).unwrap();
        let (b, _) = fs.create(fs.root(), b"b", &how, owner).unwrap();
        fs.write(a, 0, &[1u8; 100], Stability::Unstable).unwrap();
        fs.write(a, 40960, &[2u8; 100], Stability::Unstable).unwrap();
        assert_eq!(fs.seek(a, 0, SeekWhat::Hole).unwrap(), SeekResult { offset: 4096, eof: false });
        assert_eq!(fs.seek(a, 100, SeekWhat::Data).unwrap(), SeekResult { offset: 100, eof: false });
        assert_eq!(fs.seek(a, 4096, SeekWhat::Data).unwrap(), SeekResult { offset: 40960, eof: false });
        assert_eq!(fs.copy_range(a, 0, b, 0, 0, Stability::Unstable).unwrap().count, 41060);
        let ab = fs.getattr(b).unwrap();
        assert_eq!((ab.size, ab.used), (41060, 8192));
        assert_eq!(fs.read(b, 0, 50000).unwrap().data, fs.read(a, 0, 50000).unwrap().data);
        let da = fs.deallocate(a, 40960, 4096).unwrap();
        assert_eq!((da.size, da.used), (41060, 4096));
        assert_eq!(fs.seek(a, 4096, SeekWhat::Data).unwrap(), SeekResult { offset: 41060, eof: true });
    }
}

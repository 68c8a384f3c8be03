//! File contents as a sparse map of fixed-size chunks.
//!
//! A write far beyond EOF allocates only the chunks it touches, so a client
//! cannot make the server allocate a terabyte with one 1-byte WRITE. Every
//! chunk is charged to a shared [`Budget`]; a write that would exceed it
//! fails with `NoSpace` before anything is modified, so writes are
//! all-or-nothing.
//!
//! Invariant: bytes of an allocated chunk that lie at or beyond `size` are
//! zero. Shrinking zeroes the tail of the last chunk, so a later extension
//! (by truncate or by a write past EOF) reads zeros there, never old data.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{VfsError, VfsResult};

/// Bytes of chunk storage shared by all files of one MemFs.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicU64,
    limit: u64,
}

impl Budget {
    pub(crate) fn new(limit: u64) -> Budget {
        Budget { used: AtomicU64::new(0), limit }
    }

    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    pub(crate) fn reserve(&self, bytes: u64) -> VfsResult<()> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| u.checked_add(bytes).filter(|&n| n <= self.limit))
            .map(|_| ())
            .map_err(|_| VfsError::NoSpace)
    }

    pub(crate) fn release(&self, bytes: u64) {
        // Saturating: a release can never exceed what was reserved, but a
        // wrap here would silently disable the limit, so be defensive.
        let _ = self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| Some(u.saturating_sub(bytes)));
    }
}

#[derive(Debug, Default)]
pub(crate) struct FileData {
    size: u64,
    chunks: BTreeMap<u64, Box<[u8]>>,
}

impl FileData {
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Bytes of storage held (what `Attrs::used` reports).
    pub(crate) fn allocated(&self, chunk: u64) -> u64 {
        self.chunks.len() as u64 * chunk
    }

    /// Reads at most `count` bytes at `offset`; holes read as zeros.
    pub(crate) fn read(&self, offset: u64, count: u64, chunk: u64) -> Vec<u8> {
        if offset >= self.size {
            return Vec::new();
        }
        let len = count.min(self.size - offset);
        // `len` is bounded by the caller's max read size, so it fits usize.
        let mut out = vec![0u8; len as usize];
        let end = offset + len;
        let first = offset / chunk;
        let last = (end - 1) / chunk;
        for (&idx, buf) in self.chunks.range(first..=last) {
            let chunk_start = idx * chunk;
            let from = offset.max(chunk_start);
            let to = end.min(chunk_start + chunk);
            let src = &buf[(from - chunk_start) as usize..(to - chunk_start) as usize];
            out[(from - offset) as usize..(to - offset) as usize].copy_from_slice(src);
        }
        out
    }

    /// Writes `data` at `offset`; the caller has checked `offset + len`
    /// against the file-size limit.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8], chunk: u64, budget: &Budget) -> VfsResult<()> {
        if data.is_empty() {
            return Ok(());
        }
        let end = offset.checked_add(data.len() as u64).ok_or(VfsError::FBig)?;
        let first = offset / chunk;
        let last = (end - 1) / chunk;
        // Reserve every missing chunk up front so a NoSpace leaves the file
        // exactly as it was.
        let missing = (first..=last).filter(|i| !self.chunks.contains_key(i)).count() as u64;
        budget.reserve(missing * chunk)?;
        for idx in first..=last {
            let chunk_start = idx * chunk;
            let from = offset.max(chunk_start);
            let to = end.min(chunk_start + chunk);
            let buf = self.chunks.entry(idx).or_insert_with(|| vec![0u8; chunk as usize].into_boxed_slice());
            buf[(from - chunk_start) as usize..(to - chunk_start) as usize]
                .copy_from_slice(&data[(from - offset) as usize..(to - offset) as usize]);
        }
        self.size = self.size.max(end);
        Ok(())
    }

    /// Sets the logical size; growing allocates nothing.
    pub(crate) fn truncate(&mut self, size: u64, chunk: u64, budget: &Budget) {
        if size < self.size {
            let keep = size.div_ceil(chunk);
            let dropped = self.chunks.split_off(&keep);
            budget.release(dropped.len() as u64 * chunk);
            let tail = size % chunk;
            if tail != 0 {
                if let Some(buf) = self.chunks.get_mut(&(size / chunk)) {
                    buf[tail as usize..].fill(0);
                }
            }
        }
        self.size = size;
    }

    /// The first offset at or after `offset` (below the size) that lies in
    /// an allocated chunk: unallocated chunks are the file's holes, so
    /// holes are found at chunk granularity. `None`: only holes remain.
    pub(crate) fn next_data(&self, offset: u64, chunk: u64) -> Option<u64> {
        let (&idx, _) = self.chunks.range(offset / chunk..).next()?;
        let at = (idx * chunk).max(offset);
        (at < self.size).then_some(at)
    }

    /// The first offset at or after `offset` in a hole; the size is one
    /// (every file ends in a hole).
    pub(crate) fn next_hole(&self, offset: u64, chunk: u64) -> u64 {
        if offset >= self.size {
            return offset;
        }
        let mut idx = offset / chunk;
        for (&i, _) in self.chunks.range(idx..) {
            if i != idx {
                break;
            }
            idx += 1;
        }
        (idx * chunk).clamp(offset, self.size)
    }

    /// Backs `[offset, offset + len)` with chunks, so writes there cannot
    /// run out of budget, and grows the file to its end (ALLOCATE). The
    /// caller has checked the end against the file-size limit.
    pub(crate) fn allocate(&mut self, offset: u64, len: u64, chunk: u64, budget: &Budget) -> VfsResult<()> {
        let end = offset.checked_add(len).ok_or(VfsError::FBig)?;
        if len == 0 {
            return Ok(());
        }
        let (first, last) = (offset / chunk, (end - 1) / chunk);
        // Counted, not walked: a huge range fails on the budget at once.
        let have = self.chunks.range(first..=last).count() as u64;
        let missing = (last - first + 1) - have;
        budget.reserve(missing.checked_mul(chunk).ok_or(VfsError::NoSpace)?)?;
        for idx in first..=last {
            self.chunks.entry(idx).or_insert_with(|| vec![0u8; chunk as usize].into_boxed_slice());
        }
        self.size = self.size.max(end);
        Ok(())
    }

    /// Zeroes `[offset, offset + len)` (the part below the size), freeing
    /// the chunks that then hold nothing; the size stays (DEALLOCATE).
    pub(crate) fn punch(&mut self, offset: u64, len: u64, chunk: u64, budget: &Budget) {
        let end = offset.saturating_add(len).min(self.size);
        if offset >= end {
            return;
        }
        let (first, last) = (offset / chunk, (end - 1) / chunk);
        let touched: Vec<u64> = self.chunks.range(first..=last).map(|(&i, _)| i).collect();
        for idx in touched {
            let (start, stop) = (idx * chunk, idx * chunk + chunk);
            // Bytes past the size are zero already (the invariant above),
            // so a chunk punched up to the size holds nothing.
            if offset <= start && end >= stop.min(self.size) {
                self.chunks.remove(&idx);
                budget.release(chunk);
            } else if let Some(buf) = self.chunks.get_mut(&idx) {
                buf[(offset.max(start) - start) as usize..(end.min(stop) - start) as usize].fill(0);
            }
        }
    }

    /// Frees everything (the file is gone).
    pub(crate) fn release_all(&mut self, chunk: u64, budget: &Budget) {
        budget.release(self.chunks.len() as u64 * chunk);
        self.chunks.clear();
        self.size = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_write_allocates_only_touched_chunks() {
        let b = Budget::new(1 << 20);
        let mut f = FileData::default();
        f.write(1 << 40, b"x", 4096, &b).unwrap();
        assert_eq!(f.size(), (1 << 40) + 1);
        assert_eq!(b.used(), 4096);
        assert_eq!(f.read((1 << 40) - 2, 10, 4096), vec![0, 0, b'x']);
        f.release_all(4096, &b);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn shrink_then_grow_reads_zeros() {
        let b = Budget::new(1 << 20);
        let mut f = FileData::default();
        f.write(0, &[7u8; 10000], 4096, &b).unwrap();
        f.truncate(5000, 4096, &b);
        assert_eq!(b.used(), 8192);
        f.truncate(10000, 4096, &b);
        let r = f.read(4990, 20, 4096);
        assert_eq!(&r[..10], &[7u8; 10]);
        assert_eq!(&r[10..], &[0u8; 10]);
    }

    #[test]
    fn no_space_is_all_or_nothing() {
        let b = Budget::new(8192);
        let mut f = FileData::default();
        f.write(0, &[1u8; 4096], 4096, &b).unwrap();
        assert_eq!(f.write(4096, &[2u8; 8192], 4096, &b), Err(VfsError::NoSpace));
        assert_eq!(f.size(), 4096);
        assert_eq!(b.used(), 4096);
    }
}

//! Conformance cases of the NFSv4.2 calls (RFC 7862) and extended
//! attributes (RFC 8276).
//!
//! Backends find holes at their own granularity (a file system block,
//! a MemFs chunk), so these cases place data at 0 and at 1 MiB, far apart
//! and aligned for both, and only assert what every granularity agrees on.

use vfs::*;

use super::{new_file, scratch};

const MIB: u64 = 1 << 20;
const BLOCK: usize = 4096;

/// A file with a block of `a` at 0 and a block of `b` at 1 MiB, and a hole
/// between them.
fn sparse_file<V: Vfs>(fs: &V, dir: FileId, name: &str) -> FileId {
    let f = new_file(fs, dir, name);
    fs.write(f, 0, &[b'a'; BLOCK], Stability::Unstable).unwrap();
    fs.write(f, MIB, &[b'b'; BLOCK], Stability::Unstable).unwrap();
    f
}

fn content<V: Vfs>(fs: &V, f: FileId, offset: u64, count: u32) -> Vec<u8> {
    fs.read(f, offset, count).unwrap().data.to_vec()
}

/// Flattens segments (holes as zeros), checking they follow each other.
fn flatten(start: u64, segs: &[Segment]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in segs {
        match s {
            Segment::Data { offset, data } => {
                assert_eq!(*offset, start + out.len() as u64, "segments are contiguous");
                assert!(!data.is_empty());
                out.extend_from_slice(data);
            }
            Segment::Hole { offset, length } => {
                assert_eq!(*offset, start + out.len() as u64, "segments are contiguous");
                assert!(*length > 0);
                out.resize(out.len() + *length as usize, 0);
            }
        }
    }
    out
}

pub fn seek_data_and_hole<V: Vfs>(fs: &V) {
    let ops = fs.data_ops().expect("the NFSv4.2 data operations");
    let d = scratch(fs, "seek");
    let f = sparse_file(fs, d, "sparse");
    let size = MIB + BLOCK as u64;
    let at = |o, w| ops.seek(f, o, w).unwrap();
    assert_eq!(at(0, SeekWhat::Data), SeekResult { offset: 0, eof: false });
    let hole = at(0, SeekWhat::Hole);
    assert!((BLOCK as u64..=MIB).contains(&hole.offset) && !hole.eof, "{hole:?}");
    assert_eq!(at(MIB / 2, SeekWhat::Data), SeekResult { offset: MIB, eof: false });
    // The data at 1 MiB runs to the end: the hole after it is the end.
    assert_eq!(at(MIB, SeekWhat::Hole), SeekResult { offset: size, eof: true });
    assert_eq!(at(size, SeekWhat::Data), SeekResult { offset: size, eof: true });
    assert_eq!(at(size, SeekWhat::Hole), SeekResult { offset: size, eof: true });
    assert_eq!(ops.seek(f, size + 1, SeekWhat::Data).unwrap_err(), VfsError::NxIo);
    assert_eq!(ops.seek(f, size + 1, SeekWhat::Hole).unwrap_err(), VfsError::NxIo);
    // Punching the last block leaves only the virtual hole after MIB / 2.
    let a = ops.deallocate(f, MIB, BLOCK as u64).unwrap();
    assert_eq!(a.size, size);
    assert_eq!(at(MIB / 2, SeekWhat::Data), SeekResult { offset: size, eof: true });
    assert_eq!(ops.seek(d, 0, SeekWhat::Data).unwrap_err(), VfsError::IsDir);
    let empty = new_file(fs, d, "empty");
    assert_eq!(ops.seek(empty, 0, SeekWhat::Data).unwrap(), SeekResult { offset: 0, eof: true });
    assert_eq!(ops.seek(empty, 1, SeekWhat::Hole).unwrap_err(), VfsError::NxIo);
}

pub fn read_sparse_segments<V: Vfs>(fs: &V) {
    let ops = fs.data_ops().expect("the NFSv4.2 data operations");
    let d = scratch(fs, "readplus");
    let f = sparse_file(fs, d, "sparse");
    // Up to 1 MiB: the first block as data, then some hole.
    let (segs, eof) = ops.read_sparse(f, 0, MIB as u32).unwrap();
    assert!(!eof);
    assert!(segs.iter().any(|s| matches!(s, Segment::Hole { .. })), "{segs:?}");
    let flat = flatten(0, &segs);
    assert_eq!(flat.len() as u64, MIB, "segments cover the count, holes included");
    assert_eq!(flat, content(fs, f, 0, MIB as u32));
    // From inside the hole to the end of the file.
    let (segs, eof) = ops.read_sparse(f, MIB - 100, 200 + BLOCK as u32).unwrap();
    assert!(eof);
    let flat = flatten(MIB - 100, &segs);
    assert_eq!(flat.len(), 100 + BLOCK);
    assert_eq!(&flat[..100], &[0u8; 100][..]);
    assert_eq!(&flat[100..], &[b'b'; BLOCK][..]);
    assert!(matches!(segs.last(), Some(Segment::Data { .. })));
    // At and past the end.
    let (segs, eof) = ops.read_sparse(f, MIB + BLOCK as u64, 10).unwrap();
    assert!(segs.is_empty() && eof);
    assert!(ops.read_sparse(f, u64::MAX, 10).unwrap().1);
    assert_eq!(ops.read_sparse(d, 0, 10).unwrap_err(), VfsError::IsDir);
}

/// A data region for READ_PLUS is offered only where no hole lies, and
/// then holds what `read` returns, with the same `eof`.
pub fn read_data_region_skips_holes<V: Vfs>(fs: &V) {
    // Without fast paths the server always reads.
    let Some(fast) = fs.fast_paths() else { return };
    let d = scratch(fs, "dataregion");
    let f = sparse_file(fs, d, "sparse");
    let region_bytes = |r: &FileRegion| {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::from(r.fd.as_fd().try_clone_to_owned().unwrap());
        let mut buf = vec![0u8; r.len as usize];
        let n = file.read_at(&mut buf, r.offset).unwrap();
        buf.truncate(n);
        buf
    };
    use std::os::fd::AsFd;
    // Data only: the first block, and the last one up to the end.
    for (offset, count, eof) in [(0, BLOCK as u32, false), (100, 200, false), (MIB, 2 * BLOCK as u32, true)] {
        if let Some((r, at_end)) = fast.read_data_region(f, offset, count).unwrap() {
            let read = fs.read(f, offset, count).unwrap();
            assert_eq!((r.offset, at_end), (offset, eof), "at {offset}");
            assert_eq!(region_bytes(&r), read.data.to_vec(), "at {offset}");
        }
    }
    // A hole inside: never a region.
    assert!(fast.read_data_region(f, 0, MIB as u32).unwrap().is_none());
    assert!(fast.read_data_region(f, MIB - 100, 200).unwrap().is_none());
    // Past the end: nothing.
    assert!(fast.read_data_region(f, MIB + BLOCK as u64, 10).unwrap().is_none());
}

pub fn allocate_and_deallocate<V: Vfs>(fs: &V) {
    let ops = fs.data_ops().expect("the NFSv4.2 data operations");
    let d = scratch(fs, "allocate");
    let f = new_file(fs, d, "f");
    let a = ops.allocate(f, 0, 10_000).unwrap();
    assert_eq!(a.size, 10_000);
    assert_eq!(fs.getattr(f).unwrap(), a, "fresh attributes returned");
    assert_eq!(content(fs, f, 0, 20_000), vec![0u8; 10_000]);
    // Inside the file: the size stays.
    assert_eq!(ops.allocate(f, 100, 100).unwrap().size, 10_000);
    assert_eq!(ops.allocate(f, 0, 0).unwrap_err(), VfsError::Invalid);
    assert_eq!(ops.allocate(f, u64::MAX - 1, 10).unwrap_err(), VfsError::FBig);
    assert_eq!(ops.allocate(f, i64::MAX as u64, 1).unwrap_err(), VfsError::FBig);
    assert_eq!(ops.allocate(d, 0, 10).unwrap_err(), VfsError::IsDir);

    fs.write(f, 0, &[7u8; 10_000], Stability::Unstable).unwrap();
    let before = fs.getattr(f).unwrap();
    let a = ops.deallocate(f, 100, 5000).unwrap();
    assert_eq!(a.size, 10_000, "the size stays");
    assert!(a.change >= before.change);
    let data = content(fs, f, 0, 10_000);
    assert_eq!(&data[..100], &[7u8; 100][..]);
    assert_eq!(&data[100..5100], &[0u8; 5000][..]);
    assert_eq!(&data[5100..], &[7u8; 4900][..]);
    // Past the end: nothing to punch, the size stays.
    assert_eq!(ops.deallocate(f, 20_000, 100).unwrap().size, 10_000);
    assert_eq!(ops.deallocate(f, 0, 0).unwrap_err(), VfsError::Invalid);
    assert_eq!(ops.deallocate(f, u64::MAX - 1, 10).unwrap_err(), VfsError::FBig);
}

pub fn copy_range<V: Vfs>(fs: &V) {
    let ops = fs.data_ops().expect("the NFSv4.2 data operations");
    let d = scratch(fs, "copy");
    let src = new_file(fs, d, "src");
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    fs.write(src, 0, &data, Stability::Unstable).unwrap();

    // Whole file (count 0).
    let all = new_file(fs, d, "all");
    let r = ops.copy_range(src, 0, all, 0, 0, Stability::Unstable).unwrap();
    assert_eq!(r, CopyResult { count: 100_000, committed: Stability::Unstable });
    assert_eq!(content(fs, all, 0, 200_000), data);

    // Part of it, stable, to an offset: the gap before it reads as zeros.
    let part = new_file(fs, d, "part");
    let r = ops.copy_range(src, 1000, part, 500, 2000, Stability::FileSync).unwrap();
    assert_eq!(r, CopyResult { count: 2000, committed: Stability::FileSync });
    let got = content(fs, part, 0, 10_000);
    assert_eq!(got.len(), 2500);
    assert_eq!(&got[..500], &[0u8; 500][..]);
    assert_eq!(&got[500..], &data[1000..3000]);

    // Past the source's end: short; wholly past it: nothing.
    let short = new_file(fs, d, "short");
    let r = ops.copy_range(src, 99_000, short, 0, 5000, Stability::DataSync).unwrap();
    assert_eq!(r, CopyResult { count: 1000, committed: Stability::DataSync });
    assert_eq!(content(fs, short, 0, 5000), &data[99_000..]);
    assert_eq!(ops.copy_range(src, 200_000, short, 0, 10, Stability::Unstable).unwrap().count, 0);

    // Within one file: overlapping is refused, apart is fine.
    assert_eq!(ops.copy_range(src, 0, src, 10, 100, Stability::Unstable).unwrap_err(), VfsError::Invalid);
    assert_eq!(ops.copy_range(src, 0, src, 0, 0, Stability::Unstable).unwrap_err(), VfsError::Invalid);
    let r = ops.copy_range(src, 0, src, 100_000, 1000, Stability::Unstable).unwrap();
    assert_eq!(r.count, 1000);
    assert_eq!(fs.getattr(src).unwrap().size, 101_000);
    assert_eq!(content(fs, src, 100_000, 1000), &data[..1000]);

    assert_eq!(ops.copy_range(d, 0, all, 0, 0, Stability::Unstable).unwrap_err(), VfsError::IsDir);
    assert_eq!(ops.copy_range(src, 0, d, 0, 0, Stability::Unstable).unwrap_err(), VfsError::IsDir);
    assert_eq!(ops.copy_range(src, 0, all, u64::MAX - 10, 100, Stability::Unstable).unwrap_err(), VfsError::FBig);
}

/// A backend that cannot clone says so (and reports no clone block size);
/// one that can makes the destination read like the source.
pub fn clone_range<V: Vfs>(fs: &V) {
    let ops = fs.data_ops().expect("the NFSv4.2 data operations");
    let d = scratch(fs, "clone");
    let src = new_file(fs, d, "src");
    let data = vec![9u8; 2 * BLOCK];
    fs.write(src, 0, &data, Stability::Unstable).unwrap();
    let dst = new_file(fs, d, "dst");
    match ops.clone_range(src, 0, dst, 0, 0) {
        Err(VfsError::NotSupported) => {
            assert_eq!(ops.clone_blksize(), None);
            return;
        }
        r => r.unwrap(),
    }
    assert!(ops.clone_blksize().is_some());
    assert_eq!(content(fs, dst, 0, 3 * BLOCK as u32), data);
    ops.clone_range(src, 0, dst, 2 * BLOCK as u64, BLOCK as u64).unwrap();
    assert_eq!(fs.getattr(dst).unwrap().size, 3 * BLOCK as u64);
    assert_eq!(ops.clone_range(src, 0, src, 0, BLOCK as u64).unwrap_err(), VfsError::Invalid);
    assert_eq!(ops.clone_range(src, 0, dst, 0, 3 * BLOCK as u64).unwrap_err(), VfsError::Invalid, "past EOF");
}

/// Skips (with the reason) where the host file system keeps no `user.`
/// attributes.
fn xattrs_here<V: Vfs>(fs: &V) -> Option<&dyn Xattrs> {
    if fs.xattrs().is_none() {
        eprintln!("skipped: this file system stores no user extended attributes");
    }
    fs.xattrs()
}

pub fn xattrs<V: Vfs>(fs: &V) {
    let Some(x) = xattrs_here(fs) else { return };
    let d = scratch(fs, "xattr");
    let f = new_file(fs, d, "f");
    assert_eq!(x.listxattrs(f).unwrap(), Vec::<bytes::Bytes>::new());
    let before = fs.getattr(f).unwrap();
    let a = x.setxattr(f, b"color", b"blue", XattrSet::Either).unwrap();
    assert!(a.ctime >= before.ctime && a.change >= before.change);
    assert_eq!(&x.getxattr(f, b"color").unwrap()[..], b"blue");
    assert_eq!(x.setxattr(f, b"color", b"red", XattrSet::Create).unwrap_err(), VfsError::Exists);
    x.setxattr(f, b"color", b"red", XattrSet::Replace).unwrap();
    assert_eq!(&x.getxattr(f, b"color").unwrap()[..], b"red");
    assert_eq!(x.setxattr(f, b"shape", b"x", XattrSet::Replace).unwrap_err(), VfsError::NoXattr);
    assert_eq!(x.getxattr(f, b"shape").unwrap_err(), VfsError::NoXattr);
    x.setxattr(f, b"empty", b"", XattrSet::Create).unwrap();
    assert!(x.getxattr(f, b"empty").unwrap().is_empty());
    x.setxattr(f, b"b", b"2", XattrSet::Either).unwrap();
    x.setxattr(f, b"a", &[0u8, 1, 255], XattrSet::Either).unwrap();
    assert_eq!(&x.getxattr(f, b"a").unwrap()[..], &[0u8, 1, 255][..], "values are bytes");
    let names = x.listxattrs(f).unwrap();
    assert_eq!(names.iter().map(|n| &n[..]).collect::<Vec<_>>(), vec![&b"a"[..], b"b", b"color", b"empty"]);
    x.removexattr(f, b"b").unwrap();
    assert_eq!(x.removexattr(f, b"b").unwrap_err(), VfsError::NoXattr);
    assert_eq!(x.listxattrs(f).unwrap().len(), 3);
    // Directories have them too.
    x.setxattr(d, b"dir", b"yes", XattrSet::Create).unwrap();
    assert_eq!(x.listxattrs(d).unwrap(), vec![bytes::Bytes::from_static(b"dir")]);
}

pub fn xattr_limits<V: Vfs>(fs: &V) {
    let Some(x) = xattrs_here(fs) else { return };
    let d = scratch(fs, "xattrlimits");
    let f = new_file(fs, d, "f");
    let longest = vec![b'n'; XATTR_NAME_MAX];
    x.setxattr(f, &longest, b"v", XattrSet::Create).unwrap();
    assert_eq!(&x.getxattr(f, &longest).unwrap()[..], b"v");
    let too_long = vec![b'n'; XATTR_NAME_MAX + 1];
    assert_eq!(x.setxattr(f, &too_long, b"v", XattrSet::Either).unwrap_err(), VfsError::NameTooLong);
    assert_eq!(x.getxattr(f, &too_long).unwrap_err(), VfsError::NameTooLong);
    assert_eq!(x.setxattr(f, b"", b"v", XattrSet::Either).unwrap_err(), VfsError::Invalid);
    assert_eq!(x.getxattr(f, b"a\0b").unwrap_err(), VfsError::Invalid);
    let big = vec![0u8; XATTR_SIZE_MAX + 1];
    assert_eq!(x.setxattr(f, b"big", &big, XattrSet::Either).unwrap_err(), VfsError::XattrTooBig);
    assert_eq!(x.getxattr(f, b"big").unwrap_err(), VfsError::NoXattr);
    // Linux keeps user attributes off symbolic links.
    let (l, _) = fs.symlink(d, b"link", b"f", &SetAttrs::default(), super::OWNER).unwrap();
    assert_eq!(x.getxattr(l, b"x").unwrap_err(), VfsError::NoXattr);
    assert!(x.listxattrs(l).unwrap().is_empty());
    assert_eq!(x.setxattr(l, b"x", b"v", XattrSet::Either).unwrap_err(), VfsError::Perm);
}

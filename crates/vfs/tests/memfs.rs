//! The conformance suite and MemFs-only cases.

mod suite;

use vfs::*;

struct Fixture(MemFs);

impl Fixture {
    fn fs(&self) -> &MemFs {
        &self.0
    }
}

conformance_tests!(Fixture(MemFs::new()));

#[test]
fn bad_cookie() {
    let fs = MemFs::new();
    assert_eq!(fs.readdir(fs.root(), 12345, 10).unwrap_err(), VfsError::BadCookie);
}

#[test]
fn sparse_write_is_cheap_and_budget_is_enforced() {
    let fs = MemFs::with_settings(MemFsSettings { max_total_bytes: 1 << 20, chunk_size: 4096, ..Default::default() });
    let (f, _) = fs.create(fs.root(), b"f", &CreateHow::Guarded(SetAttrs::default()), suite::OWNER).unwrap();
    fs.write(f, 1 << 39, b"far", Stability::Unstable).unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!(a.size, (1 << 39) + 3);
    assert_eq!(a.used, 4096);
    assert_eq!(fs.write(f, 0, &vec![1u8; 2 << 20], Stability::Unstable).unwrap_err(), VfsError::NoSpace);
    assert_eq!(fs.write(f, 1 << 40, b"x", Stability::Unstable).unwrap_err(), VfsError::FBig);
    assert_eq!(
        fs.setattr(f, &SetAttrs { size: Some((1 << 40) + 1), ..Default::default() }, None).unwrap_err(),
        VfsError::FBig
    );
    fs.remove(fs.root(), b"f").unwrap();
    assert_eq!(fs.fsstat(fs.root()).unwrap().free_bytes, 1 << 20);
}

#[test]
fn generation_differs_between_instances() {
    let a = MemFs::new();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let b = MemFs::new();
    assert_ne!(a.getattr(1).unwrap().generation, b.getattr(1).unwrap().generation);
}

#[test]
fn concurrent_renames_and_io_do_not_deadlock() {
    use std::sync::Arc;
    let fs = Arc::new(MemFs::new());
    let root = fs.root();
    let (a, _) = fs.mkdir(root, b"a", &SetAttrs::default(), suite::OWNER).unwrap();
    let (b, _) = fs.mkdir(root, b"b", &SetAttrs::default(), suite::OWNER).unwrap();
    let mut threads = Vec::new();
    for t in 0..4u8 {
        let fs = fs.clone();
        threads.push(std::thread::spawn(move || {
            let name = [b'f', b'0' + t];
            let (f, _) = fs.create(a, &name, &CreateHow::Guarded(SetAttrs::default()), suite::OWNER).unwrap();
            for i in 0..2000u64 {
                let (from, to) = if i % 2 == 0 { (a, b) } else { (b, a) };
                fs.rename(from, &name, to, &name).unwrap();
                fs.write(f, i, &[t], Stability::Unstable).unwrap();
                // Directories chase each other around too.
                let _ = fs.rename(root, b"a", b, b"a");
                let _ = fs.rename(b, b"a", root, b"a");
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let n = fs.readdir(a, 0, 100).unwrap().entries.len() + fs.readdir(b, 0, 100).unwrap().entries.len();
    assert!(n >= 4);
}

#[test]
fn extreme_offsets_and_counts_are_refused_not_panicking() {
    let fs = MemFs::with_settings(MemFsSettings { max_file_size: u64::MAX, ..Default::default() });
    let (f, _) = fs.create(fs.root(), b"f", &CreateHow::Guarded(SetAttrs::default()), suite::OWNER).unwrap();
    assert_eq!(fs.write(f, u64::MAX - 3, b"ab", Stability::Unstable).unwrap_err(), VfsError::FBig);
    fs.write(f, (i64::MAX as u64) - 2, b"ab", Stability::Unstable).unwrap();
    let r = fs.read(f, (i64::MAX as u64) - 2, u32::MAX).unwrap();
    assert_eq!((&r.data[..], r.eof), (&b"ab"[..], true));
    assert!(fs.read(f, 0, u32::MAX).unwrap().data.len() <= fs.settings().max_read as usize);
    assert_eq!(fs.readdir(fs.root(), u64::MAX, usize::MAX).unwrap_err(), VfsError::BadCookie);
    assert!(fs.getattr(u64::MAX).is_err());
    assert!(fs.lookup(u64::MAX, b"x").is_err());
}

#[test]
fn clone_copies_and_offers_a_block_size() {
    let fs = MemFs::new();
    let how = CreateHow::Guarded(SetAttrs::default());
    let (a, _) = fs.create(fs.root(), b"a", &how, suite::OWNER).unwrap();
    let (b, _) = fs.create(fs.root(), b"b", &how, suite::OWNER).unwrap();
    fs.write(a, 0, b"hello world", Stability::Unstable).unwrap();
    assert_eq!(fs.clone_blksize(), Some(4096));
    fs.clone_range(a, 6, b, 0, 0).unwrap();
    assert_eq!(&fs.read(b, 0, 100).unwrap().data[..], b"world");
    assert_eq!(fs.clone_range(a, 12, b, 0, 0), Err(VfsError::Invalid), "source offset past EOF");
}

/// Attribute bytes come out of the data budget and go back to it, and
/// every change moves the change attribute.
#[test]
fn xattrs_are_charged_to_the_budget() {
    let fs = MemFs::with_settings(MemFsSettings { max_total_bytes: 100_000, ..Default::default() });
    let (f, _) = fs.create(fs.root(), b"f", &CreateHow::Guarded(SetAttrs::default()), suite::OWNER).unwrap();
    let free = || fs.fsstat(fs.root()).unwrap().free_bytes;
    let c0 = fs.getattr(f).unwrap().change;
    let c1 = fs.setxattr(f, b"a", &[1u8; 60_000], XattrSet::Create).unwrap().change;
    assert_eq!(free(), 100_000 - 60_001);
    assert_eq!(fs.setxattr(f, b"b", &[1u8; 60_000], XattrSet::Create), Err(VfsError::NoSpace));
    let c2 = fs.setxattr(f, b"a", b"small", XattrSet::Replace).unwrap().change;
    assert_eq!(free(), 100_000 - 6);
    let c3 = fs.removexattr(f, b"a").unwrap().change;
    assert_eq!(free(), 100_000);
    assert!(c0 < c1 && c1 < c2 && c2 < c3);
    fs.setxattr(f, b"a", b"x", XattrSet::Create).unwrap();
    fs.remove(fs.root(), b"f").unwrap();
    assert_eq!(free(), 100_000, "freed with the file");
}

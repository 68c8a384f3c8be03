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

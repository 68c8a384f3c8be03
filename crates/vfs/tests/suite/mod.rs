//! One conformance suite, run against every backend.
//!
//! Each case works in its own fresh directory under the root, so a backend
//! instance can be shared by cases and leftovers of one case cannot mask a
//! bug in another. `conformance_tests!(|| make_fs())` expands to one
//! `#[test]` per case.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};

use vfs::*;

mod v42;
pub use v42::*;

pub const OWNER: Owner = Owner { uid: 1234, gid: 5678 };

/// One `#[test]` per case; `$fixture` must evaluate to something with a
/// `fs()` method returning the backend.
#[macro_export]
macro_rules! conformance_tests {
    ($fixture:expr) => {
        $crate::conformance_tests!(@cases $fixture;
            create_lookup_getattr, names_are_checked, read_write, setattr, type_errors,
            exclusive_create, unchecked_and_guarded_create, rename, rename_dirs, link,
            symlink_readlink, mknod, remove_rmdir, readdir_paging, readdir_small, readdir_plus, change_and_times, fsstat,
            seek_data_and_hole, read_sparse_segments, read_data_region_skips_holes, allocate_and_deallocate, copy_range, clone_range, xattrs,
            xattr_limits);
    };
    (@cases $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let fx = $fixture;
                suite::$case(fx.fs());
            }
        )*
    };
}

fn set_mode(mode: u32) -> SetAttrs {
    SetAttrs { mode: Some(mode), ..SetAttrs::default() }
}

/// A fresh directory for one case.
pub fn scratch<V: Vfs>(fs: &V, tag: &str) -> FileId {
    let name = format!("case-{tag}-{}", std::process::id());
    fs.mkdir(fs.root(), name.as_bytes(), &set_mode(0o755), OWNER).expect("mkdir scratch").0
}

pub fn new_file<V: Vfs>(fs: &V, dir: FileId, name: &str) -> FileId {
    fs.create(dir, name.as_bytes(), &CreateHow::Guarded(set_mode(0o644)), OWNER).expect("create").0
}

pub fn create_lookup_getattr<V: Vfs>(fs: &V) {
    let d = scratch(fs, "create");
    let (id, a) = fs.create(d, b"f", &CreateHow::Guarded(set_mode(0o640)), OWNER).unwrap();
    assert_eq!(a.ftype, FileType::Regular);
    assert_eq!(a.mode, 0o640);
    assert_eq!(a.nlink, 1);
    assert_eq!(a.size, 0);
    assert_eq!((a.uid, a.gid), (OWNER.uid, OWNER.gid));
    assert_eq!(a.fileid, id);
    assert_eq!(a.fsid, fs.fsid());
    let (lid, la) = fs.lookup(d, b"f").unwrap();
    assert_eq!(lid, id);
    assert_eq!(la.generation, a.generation);
    assert_eq!(fs.getattr(id).unwrap().fileid, id);
    assert_eq!(fs.lookup(d, b"missing").unwrap_err(), VfsError::NotFound);
    assert_eq!(fs.lookup(d, b".").unwrap().0, d);
    assert_eq!(fs.lookup(d, b"..").unwrap().0, fs.root());
    assert_eq!(fs.lookup(fs.root(), b"..").unwrap().0, fs.root());
    assert_eq!(fs.lookup(fs.root(), b".").unwrap().0, fs.root());
    let ra = fs.getattr(fs.root()).unwrap();
    assert_eq!(ra.ftype, FileType::Directory);
    let da = fs.getattr(d).unwrap();
    assert_eq!(da.ftype, FileType::Directory);
    assert_eq!(da.nlink, 2);
    assert_eq!((da.uid, da.gid), (OWNER.uid, OWNER.gid));
}

pub fn names_are_checked<V: Vfs>(fs: &V) {
    let d = scratch(fs, "names");
    let how = CreateHow::Guarded(SetAttrs::default());
    for bad in [&b""[..], b".", b"..", b"a/b", b"/etc", b"x\0y"] {
        assert_eq!(fs.create(d, bad, &how, OWNER).unwrap_err(), VfsError::Invalid, "create {bad:?}");
        assert_eq!(fs.mkdir(d, bad, &SetAttrs::default(), OWNER).unwrap_err(), VfsError::Invalid);
        assert_eq!(fs.remove(d, bad).unwrap_err(), VfsError::Invalid);
        assert_eq!(fs.rmdir(d, bad).unwrap_err(), VfsError::Invalid);
    }
    for bad in [&b""[..], b"a/b", b"../x", b"x\0y"] {
        assert_eq!(fs.lookup(d, bad).unwrap_err(), VfsError::Invalid, "lookup {bad:?}");
    }
    let long = vec![b'n'; 256];
    assert_eq!(fs.create(d, &long, &how, OWNER).unwrap_err(), VfsError::NameTooLong);
    let ok = vec![b'n'; 255];
    fs.create(d, &ok, &how, OWNER).unwrap();
    // Not valid UTF-8: names are bytes.
    fs.create(d, &[0xff, 0xfe, b'z'], &how, OWNER).unwrap();
    assert!(fs.lookup(d, &[0xff, 0xfe, b'z']).is_ok());
}

pub fn read_write<V: Vfs>(fs: &V) {
    let d = scratch(fs, "rw");
    let f = new_file(fs, d, "f");
    let w = fs.write(f, 0, b"hello", Stability::Unstable).unwrap();
    assert_eq!(w.count, 5);
    let r = fs.read(f, 0, 100).unwrap();
    assert_eq!(&r.data[..], b"hello");
    assert!(r.eof);
    let r = fs.read(f, 1, 2).unwrap();
    assert_eq!(&r.data[..], b"el");
    assert!(!r.eof);
    // A write past EOF leaves a hole of zeros.
    let w = fs.write(f, 10, b"world", Stability::FileSync).unwrap();
    assert_eq!(w.committed, Stability::FileSync);
    let w = fs.write(f, 15, b"!", Stability::DataSync).unwrap();
    assert!(w.committed >= Stability::DataSync);
    assert_eq!(fs.getattr(f).unwrap().size, 16);
    let r = fs.read(f, 0, 100).unwrap();
    assert_eq!(&r.data[..], b"hello\0\0\0\0\0world!");
    let r = fs.read(f, 16, 10).unwrap();
    assert!(r.data.is_empty() && r.eof);
    let r = fs.read(f, u64::MAX, u32::MAX).unwrap();
    assert!(r.data.is_empty() && r.eof);
    fs.commit(f, 0, 0).unwrap();
    // Larger, unaligned data round-trips.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    fs.write(f, 12345, &big, Stability::Unstable).unwrap();
    let mut got = Vec::new();
    let mut off = 12345u64;
    loop {
        let r = fs.read(f, off, 65536).unwrap();
        off += r.data.len() as u64;
        got.extend_from_slice(&r.data);
        if r.eof {
            break;
        }
    }
    assert_eq!(got, big);
    fs.commit(f, 12345, 300_000).unwrap();
    assert_eq!(fs.write(f, u64::MAX - 1, b"xx", Stability::Unstable).unwrap_err(), VfsError::FBig);
}

pub fn setattr<V: Vfs>(fs: &V) {
    let d = scratch(fs, "setattr");
    let f = new_file(fs, d, "f");
    fs.write(f, 0, &[9u8; 100], Stability::Unstable).unwrap();
    let a = fs.setattr(f, &set_mode(0o600), None).unwrap();
    assert_eq!(a.mode, 0o600);
    let a = fs.setattr(f, &SetAttrs { size: Some(10), ..Default::default() }, None).unwrap();
    assert_eq!(a.size, 10);
    let a = fs.setattr(f, &SetAttrs { size: Some(20), ..Default::default() }, None).unwrap();
    assert_eq!(a.size, 20);
    let r = fs.read(f, 0, 100).unwrap();
    assert_eq!(&r.data[..10], &[9u8; 10]);
    assert_eq!(&r.data[10..], &[0u8; 10]);
    let t = Timespec { seconds: 1_000_000_000, nanos: 123_456_789 };
    let a = fs
        .setattr(f, &SetAttrs { atime: SetTime::Client(t), mtime: SetTime::Client(t), ..Default::default() }, None)
        .unwrap();
    assert_eq!(a.atime, t);
    assert_eq!(a.mtime, t);
    let a = fs.setattr(f, &SetAttrs { mtime: SetTime::ServerNow, ..Default::default() }, None).unwrap();
    assert!(a.mtime > t);
    // Guard: a stale ctime is refused and changes nothing.
    let stale = Timespec { seconds: 1, nanos: 0 };
    assert_eq!(fs.setattr(f, &set_mode(0o644), Some(stale)).unwrap_err(), VfsError::NotSync);
    assert_eq!(fs.getattr(f).unwrap().mode, 0o600);
    let cur = fs.getattr(f).unwrap().ctime;
    assert_eq!(fs.setattr(f, &set_mode(0o644), Some(cur)).unwrap().mode, 0o644);
    let a = fs.setattr(f, &SetAttrs { uid: Some(42), gid: Some(43), ..Default::default() }, None).unwrap();
    assert_eq!((a.uid, a.gid), (42, 43));
    assert_eq!(fs.setattr(d, &SetAttrs { size: Some(0), ..Default::default() }, None).unwrap_err(), VfsError::IsDir);
    assert_eq!(fs.getattr(d).unwrap().ftype, FileType::Directory);
    let a = fs.setattr(d, &set_mode(0o700), None).unwrap();
    assert_eq!(a.mode, 0o700);
}

pub fn type_errors<V: Vfs>(fs: &V) {
    let d = scratch(fs, "types");
    let f = new_file(fs, d, "f");
    let how = CreateHow::Guarded(SetAttrs::default());
    assert_eq!(fs.lookup(f, b"x").unwrap_err(), VfsError::NotDir);
    assert_eq!(fs.create(f, b"x", &how, OWNER).unwrap_err(), VfsError::NotDir);
    assert_eq!(fs.mkdir(f, b"x", &SetAttrs::default(), OWNER).unwrap_err(), VfsError::NotDir);
    assert_eq!(fs.readdir(f, 0, 10).unwrap_err(), VfsError::NotDir);
    assert_eq!(fs.read(d, 0, 10).unwrap_err(), VfsError::IsDir);
    assert_eq!(fs.write(d, 0, b"x", Stability::Unstable).unwrap_err(), VfsError::IsDir);
    assert_eq!(
        fs.remove(fs.root(), format!("case-types-{}", std::process::id()).as_bytes()).unwrap_err(),
        VfsError::IsDir
    );
    assert_eq!(fs.rmdir(d, b"f").unwrap_err(), VfsError::NotDir);
    assert_eq!(fs.create(d, b"f", &how, OWNER).unwrap_err(), VfsError::Exists);
    assert_eq!(fs.mkdir(d, b"f", &SetAttrs::default(), OWNER).unwrap_err(), VfsError::Exists);
    assert_eq!(fs.symlink(d, b"f", b"t", &SetAttrs::default(), OWNER).unwrap_err(), VfsError::Exists);
    assert_eq!(fs.mknod(d, b"f", NodeKind::Fifo, &SetAttrs::default(), OWNER).unwrap_err(), VfsError::Exists);
    assert_eq!(fs.readlink(f).unwrap_err(), VfsError::BadType);
    assert_eq!(fs.remove(d, b"nope").unwrap_err(), VfsError::NotFound);
    assert_eq!(fs.rmdir(d, b"nope").unwrap_err(), VfsError::NotFound);
}

pub fn exclusive_create<V: Vfs>(fs: &V) {
    let d = scratch(fs, "excl");
    let v1 = CreateHow::Exclusive(*b"verif-01");
    let v2 = CreateHow::Exclusive(*b"verif-02");
    let (id, a) = fs.create(d, b"e", &v1, OWNER).unwrap();
    assert_eq!(a.ftype, FileType::Regular);
    assert_eq!(a.size, 0);
    // A retransmission gets the file it created.
    let (again, _) = fs.create(d, b"e", &v1, OWNER).unwrap();
    assert_eq!(again, id);
    assert_eq!(fs.create(d, b"e", &v2, OWNER).unwrap_err(), VfsError::Exists);
    // The follow-up SETATTR replaces the verifier.
    let t = Timespec { seconds: 1_600_000_000, nanos: 5 };
    fs.setattr(
        id,
        &SetAttrs { mode: Some(0o644), atime: SetTime::Client(t), mtime: SetTime::ServerNow, ..Default::default() },
        None,
    )
    .unwrap();
    assert_eq!(fs.create(d, b"e", &v1, OWNER).unwrap_err(), VfsError::Exists);
    // A plain file of the same name is not mistaken for an exclusive one.
    new_file(fs, d, "plain");
    assert_eq!(fs.create(d, b"plain", &v1, OWNER).unwrap_err(), VfsError::Exists);
    fs.mkdir(d, b"dir", &SetAttrs::default(), OWNER).unwrap();
    assert_eq!(fs.create(d, b"dir", &v1, OWNER).unwrap_err(), VfsError::Exists);
}

pub fn unchecked_and_guarded_create<V: Vfs>(fs: &V) {
    let d = scratch(fs, "unchecked");
    let f = new_file(fs, d, "f");
    fs.write(f, 0, b"0123456789", Stability::Unstable).unwrap();
    let (same, a) = fs.create(d, b"f", &CreateHow::Unchecked(SetAttrs::default()), OWNER).unwrap();
    assert_eq!((same, a.size), (f, 10));
    let (same, a) =
        fs.create(d, b"f", &CreateHow::Unchecked(SetAttrs { size: Some(0), ..Default::default() }), OWNER).unwrap();
    assert_eq!((same, a.size), (f, 0));
    assert_eq!(fs.create(d, b"f", &CreateHow::Guarded(SetAttrs::default()), OWNER).unwrap_err(), VfsError::Exists);
    let (_, a) = fs
        .create(
            d,
            b"g",
            &CreateHow::Unchecked(SetAttrs { mode: Some(0o600), size: Some(0), ..Default::default() }),
            OWNER,
        )
        .unwrap();
    assert_eq!(a.mode, 0o600);
}

pub fn rename<V: Vfs>(fs: &V) {
    let d = scratch(fs, "rename");
    let (d2, _) = fs.mkdir(d, b"d2", &SetAttrs::default(), OWNER).unwrap();
    let a = new_file(fs, d, "a");
    fs.write(a, 0, b"A", Stability::Unstable).unwrap();
    fs.rename(d, b"a", d, b"b").unwrap();
    assert_eq!(fs.lookup(d, b"a").unwrap_err(), VfsError::NotFound);
    assert_eq!(fs.lookup(d, b"b").unwrap().0, a);
    fs.rename(d, b"b", d2, b"c").unwrap();
    assert_eq!(fs.lookup(d2, b"c").unwrap().0, a);
    assert_eq!(&fs.read(a, 0, 10).unwrap().data[..], b"A");
    // Over an existing file: the target is replaced.
    let t = new_file(fs, d2, "t");
    fs.rename(d2, b"c", d2, b"t").unwrap();
    assert_eq!(fs.lookup(d2, b"t").unwrap().0, a);
    assert!(fs.lookup(d2, b"c").is_err());
    match fs.getattr(t) {
        Err(VfsError::Stale) => {}
        Ok(attrs) => assert_ne!(attrs.generation, fs.getattr(a).unwrap().generation + 1, "replaced target still alive"),
        Err(e) => panic!("unexpected {e:?}"),
    }
    // Same name, and two names of one object: no-ops.
    fs.rename(d2, b"t", d2, b"t").unwrap();
    fs.link(a, d2, b"t2").unwrap();
    fs.rename(d2, b"t", d2, b"t2").unwrap();
    assert_eq!(fs.lookup(d2, b"t").unwrap().0, a);
    assert_eq!(fs.rename(d2, b"missing", d2, b"x").unwrap_err(), VfsError::NotFound);
    let (sub, _) = fs.mkdir(d, b"sub", &SetAttrs::default(), OWNER).unwrap();
    assert_eq!(fs.rename(d2, b"t", d, b"sub").unwrap_err(), VfsError::IsDir);
    assert_eq!(fs.rename(d, b"sub", d2, b"t").unwrap_err(), VfsError::NotDir);
    assert_eq!(fs.getattr(sub).unwrap().ftype, FileType::Directory);
    assert_eq!(fs.rename(d, b"x/y", d, b"z").unwrap_err(), VfsError::Invalid);
    assert_eq!(fs.rename(d, b"sub", d, b"..").unwrap_err(), VfsError::Invalid);
}

pub fn rename_dirs<V: Vfs>(fs: &V) {
    let d = scratch(fs, "renamedir");
    let (a, _) = fs.mkdir(d, b"a", &SetAttrs::default(), OWNER).unwrap();
    let (b, _) = fs.mkdir(d, b"b", &SetAttrs::default(), OWNER).unwrap();
    let (a1, _) = fs.mkdir(a, b"a1", &SetAttrs::default(), OWNER).unwrap();
    new_file(fs, b, "inside");
    assert_eq!(fs.getattr(d).unwrap().nlink, 4);
    assert_eq!(fs.getattr(a).unwrap().nlink, 3);
    // Into its own subtree.
    assert_eq!(fs.rename(d, b"a", a1, b"x").unwrap_err(), VfsError::Invalid);
    assert_eq!(fs.rename(d, b"a", a, b"x").unwrap_err(), VfsError::Invalid);
    // Over a non-empty directory.
    let e = fs.rename(d, b"a", d, b"b").unwrap_err();
    assert!(e == VfsError::NotEmpty || e == VfsError::Exists, "{e:?}");
    // Moving a directory moves its `..` and the parents' link counts.
    fs.rename(a, b"a1", b, b"moved").unwrap();
    assert_eq!(fs.getattr(a).unwrap().nlink, 2);
    assert_eq!(fs.getattr(b).unwrap().nlink, 3);
    assert_eq!(fs.lookup(a1, b"..").unwrap().0, b);
    // Over an empty directory: replaced.
    let (empty, _) = fs.mkdir(d, b"empty", &SetAttrs::default(), OWNER).unwrap();
    fs.rename(d, b"a", d, b"empty").unwrap();
    assert_eq!(fs.lookup(d, b"empty").unwrap().0, a);
    assert!(fs.getattr(empty).map(|x| x.nlink == 0).unwrap_or(true));
    assert_eq!(fs.getattr(d).unwrap().nlink, 4);
}

pub fn link<V: Vfs>(fs: &V) {
    let d = scratch(fs, "link");
    let (d2, _) = fs.mkdir(d, b"d2", &SetAttrs::default(), OWNER).unwrap();
    let f = new_file(fs, d, "f");
    fs.write(f, 0, b"data", Stability::Unstable).unwrap();
    fs.link(f, d2, b"g").unwrap();
    assert_eq!(fs.getattr(f).unwrap().nlink, 2);
    assert_eq!(fs.lookup(d2, b"g").unwrap().0, f);
    assert_eq!(fs.link(f, d2, b"g").unwrap_err(), VfsError::Exists);
    assert_eq!(fs.link(d2, d, b"dirlink").unwrap_err(), VfsError::IsDir);
    assert_eq!(fs.link(f, f, b"x").unwrap_err(), VfsError::NotDir);
    fs.remove(d, b"f").unwrap();
    let a = fs.getattr(f).unwrap();
    assert_eq!(a.nlink, 1);
    assert_eq!(&fs.read(f, 0, 10).unwrap().data[..], b"data");
    fs.remove(d2, b"g").unwrap();
    assert!(fs.lookup(d2, b"g").is_err());
}

pub fn symlink_readlink<V: Vfs>(fs: &V) {
    let d = scratch(fs, "symlink");
    let (s, a) = fs.symlink(d, b"s", b"../some/where", &SetAttrs::default(), OWNER).unwrap();
    assert_eq!(a.ftype, FileType::Symlink);
    assert_eq!(a.size, 13);
    assert_eq!((a.uid, a.gid), (OWNER.uid, OWNER.gid));
    assert_eq!(&fs.readlink(s).unwrap()[..], b"../some/where");
    // LOOKUP does not follow it.
    let (l, la) = fs.lookup(d, b"s").unwrap();
    assert_eq!(l, s);
    assert_eq!(la.ftype, FileType::Symlink);
    assert!(fs.read(s, 0, 10).is_err());
    assert!(fs.write(s, 0, b"x", Stability::Unstable).is_err());
    fs.remove(d, b"s").unwrap();
    assert_eq!(fs.lookup(d, b"s").unwrap_err(), VfsError::NotFound);
}

pub fn mknod<V: Vfs>(fs: &V) {
    let d = scratch(fs, "mknod");
    let (p, a) = fs.mknod(d, b"fifo", NodeKind::Fifo, &set_mode(0o640), OWNER).unwrap();
    assert_eq!(a.ftype, FileType::Fifo);
    assert_eq!(a.mode, 0o640);
    assert_eq!((a.uid, a.gid), (OWNER.uid, OWNER.gid));
    assert_eq!(fs.lookup(d, b"fifo").unwrap().0, p);
    let (_, a) = fs.mknod(d, b"sock", NodeKind::Socket, &set_mode(0o600), OWNER).unwrap();
    assert_eq!(a.ftype, FileType::Socket);
    fs.remove(d, b"fifo").unwrap();
}

pub fn remove_rmdir<V: Vfs>(fs: &V) {
    let d = scratch(fs, "remove");
    let f = new_file(fs, d, "f");
    fs.remove(d, b"f").unwrap();
    assert_eq!(fs.lookup(d, b"f").unwrap_err(), VfsError::NotFound);
    assert_eq!(fs.getattr(f).unwrap_err(), VfsError::Stale);
    let (sub, _) = fs.mkdir(d, b"sub", &SetAttrs::default(), OWNER).unwrap();
    assert_eq!(fs.getattr(d).unwrap().nlink, 3);
    new_file(fs, sub, "x");
    assert_eq!(fs.rmdir(d, b"sub").unwrap_err(), VfsError::NotEmpty);
    fs.remove(sub, b"x").unwrap();
    fs.rmdir(d, b"sub").unwrap();
    assert_eq!(fs.getattr(d).unwrap().nlink, 2);
    assert_eq!(fs.getattr(sub).unwrap_err(), VfsError::Stale);
    assert_eq!(fs.lookup(d, b"sub").unwrap_err(), VfsError::NotFound);
}

/// Pages through `dir` in chunks of `chunk`, calling `between` after each
/// page; returns every (name, id) seen, in order.
pub fn page_all<V: Vfs>(fs: &V, dir: FileId, chunk: usize, mut between: impl FnMut(usize)) -> Vec<(Vec<u8>, FileId)> {
    let mut seen = Vec::new();
    let mut cookie = 0;
    for page in 0.. {
        let r = fs.readdir(dir, cookie, chunk).unwrap();
        assert!(r.entries.len() <= chunk);
        for e in &r.entries {
            assert_ne!(e.cookie, 0);
            assert_ne!(&e.name[..], b".");
            assert_ne!(&e.name[..], b"..");
            seen.push((e.name.to_vec(), e.fileid));
        }
        if r.eof {
            break;
        }
        assert!(!r.entries.is_empty(), "no progress without eof");
        cookie = r.entries.last().map(|e| e.cookie).unwrap();
        between(page);
    }
    seen
}

pub fn readdir_paging<V: Vfs>(fs: &V) {
    let d = scratch(fs, "readdir");
    const N: usize = 10_000;
    let mut ids = HashMap::new();
    for i in 0..N {
        let name = format!("entry-{i:05}");
        ids.insert(name.clone().into_bytes(), new_file(fs, d, &name));
    }
    // Remove every 7th entry after the third page, whether already seen or
    // not: everything that stayed must still come exactly once.
    let mut removed = HashSet::new();
    let seen = page_all(fs, d, 97, |page| {
        if page == 3 {
            for i in (0..N).step_by(7) {
                let name = format!("entry-{i:05}").into_bytes();
                fs.remove(d, &name).unwrap();
                removed.insert(name);
            }
        }
    });
    let mut names = HashSet::new();
    for (name, id) in &seen {
        assert!(names.insert(name.clone()), "duplicate {:?}", String::from_utf8_lossy(name));
        assert_eq!(ids.get(name), Some(id), "wrong id for {:?}", String::from_utf8_lossy(name));
    }
    for name in ids.keys() {
        if !removed.contains(name) {
            assert!(names.contains(name), "lost {:?}", String::from_utf8_lossy(name));
        }
    }
    // A second full pass sees exactly what is left.
    let again = page_all(fs, d, 1000, |_| {});
    assert_eq!(again.len(), N - removed.len());
}

/// `readdir_plus` lists what `readdir` lists, each entry with the object
/// `lookup` finds behind its name, in pages as small as one entry.
pub fn readdir_plus<V: Vfs>(fs: &V) {
    let d = scratch(fs, "readdirplus");
    for i in 0..5 {
        new_file(fs, d, &format!("f{i}"));
    }
    fs.mkdir(d, b"sub", &set_mode(0o700), OWNER).unwrap();
    fs.symlink(d, b"link", b"f0", &SetAttrs::default(), OWNER).unwrap();
    for page in [1, 3, 100] {
        let (mut cookie, mut listed) = (0, Vec::new());
        loop {
            let plain = fs.readdir(d, cookie, page).unwrap();
            let plus = fs.readdir_plus(d, cookie, page).unwrap();
            assert_eq!(plus.eof, plain.eof);
            assert_eq!(plus.entries.iter().map(|e| e.entry.clone()).collect::<Vec<_>>(), plain.entries);
            for e in &plus.entries {
                let (id, attrs) = e.obj.clone().expect("entry's object");
                let (lid, lattrs) = fs.lookup(d, &e.entry.name).unwrap();
                assert_eq!(
                    (id, attrs.ftype, attrs.mode, attrs.generation),
                    (lid, lattrs.ftype, lattrs.mode, lattrs.generation)
                );
                assert_eq!(id, e.entry.fileid);
                listed.push(e.entry.name.clone());
            }
            match plus.entries.last() {
                Some(last) if !plus.eof => cookie = last.entry.cookie,
                _ => break,
            }
        }
        listed.sort();
        let want: Vec<&[u8]> = vec![b"f0", b"f1", b"f2", b"f3", b"f4", b"link", b"sub"];
        assert_eq!(listed.iter().map(|n| &n[..]).collect::<Vec<_>>(), want, "page size {page}");
    }
    assert_eq!(fs.readdir_plus(new_file(fs, d, "plain"), 0, 10).unwrap_err(), VfsError::NotDir);
}

pub fn readdir_small<V: Vfs>(fs: &V) {
    let d = scratch(fs, "readdirsmall");
    let r = fs.readdir(d, 0, 10).unwrap();
    assert!(r.entries.is_empty() && r.eof);
    let f = new_file(fs, d, "one");
    let r = fs.readdir(d, 0, 10).unwrap();
    assert!(r.eof);
    assert_eq!(r.entries.len(), 1);
    assert_eq!((&r.entries[0].name[..], r.entries[0].fileid), (&b"one"[..], f));
    // Continuing after the last entry: empty and eof.
    let r = fs.readdir(d, r.entries[0].cookie, 10).unwrap();
    assert!(r.entries.is_empty() && r.eof);
    // Entries added after a cookie was handed out are seen after it.
    let c = fs.readdir(d, 0, 1).unwrap().entries[0].cookie;
    new_file(fs, d, "two");
    let later = page_all(fs, d, 10, |_| {});
    assert_eq!(later.len(), 2);
    let r = fs.readdir(d, c, 10).unwrap();
    assert!(r.entries.iter().all(|e| &e.name[..] != b"one"));
}

pub fn change_and_times<V: Vfs>(fs: &V) {
    let d = scratch(fs, "change");
    let f = new_file(fs, d, "f");
    let a0 = fs.getattr(f).unwrap();
    let d0 = fs.getattr(d).unwrap();
    fs.write(f, 0, b"x", Stability::Unstable).unwrap();
    let a1 = fs.getattr(f).unwrap();
    assert!(a1.change > a0.change);
    assert!(a1.mtime >= a0.mtime);
    fs.setattr(f, &set_mode(0o600), None).unwrap();
    let a2 = fs.getattr(f).unwrap();
    assert!(a2.change > a1.change);
    assert!(a2.ctime >= a1.ctime);
    new_file(fs, d, "g");
    let d1 = fs.getattr(d).unwrap();
    assert!(d1.change > d0.change);
    // Every read of unchanged attributes agrees.
    assert_eq!(fs.getattr(f).unwrap(), fs.getattr(f).unwrap());
}

pub fn fsstat<V: Vfs>(fs: &V) {
    let s = fs.fsstat(fs.root()).unwrap();
    assert!(s.total_bytes > 0);
    assert!(s.free_bytes <= s.total_bytes);
    assert!(s.avail_bytes <= s.free_bytes);
    assert!(s.free_files <= s.total_files);
}

//! The conformance suite and LocalFs-only cases: restart, stale ids,
//! symlink escapes, durability.

mod suite;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use vfs::*;

/// A scratch export and state directory, removed on drop.
struct TempDirs {
    base: PathBuf,
}

impl TempDirs {
    fn new() -> TempDirs {
        TempDirs::under(&std::env::temp_dir())
    }

    /// The same under `parent` (a file system of the test's choice).
    fn under(parent: &Path) -> TempDirs {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = parent.join(format!("nfsx-vfs-test-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("export")).unwrap();
        std::fs::create_dir_all(base.join("state")).unwrap();
        TempDirs { base }
    }

    fn export(&self) -> PathBuf {
        self.base.join("export")
    }

    fn state(&self) -> PathBuf {
        self.base.join("state")
    }

    fn open(&self) -> LocalFs {
        self.open_with(LocalFsSettings::default())
    }

    fn open_with(&self, s: LocalFsSettings) -> LocalFs {
        LocalFs::open(&self.export(), &self.state(), s).unwrap()
    }
}

impl Drop for TempDirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

struct Fixture {
    fs: LocalFs,
    _dirs: TempDirs,
}

impl Fixture {
    fn new() -> Fixture {
        let dirs = TempDirs::new();
        // Metadata syncs make the 10 000-entry case slow and prove nothing
        // about semantics; durability has its own case below.
        let fs = dirs.open_with(LocalFsSettings { sync_metadata: false, ..Default::default() });
        Fixture { fs, _dirs: dirs }
    }

    fn fs(&self) -> &LocalFs {
        &self.fs
    }
}

conformance_tests!(Fixture::new());

fn guarded() -> CreateHow {
    CreateHow::Guarded(SetAttrs::default())
}

fn mkdir(fs: &LocalFs, dir: FileId, name: &str) -> FileId {
    fs.mkdir(dir, name.as_bytes(), &SetAttrs::default(), suite::OWNER).unwrap().0
}

#[test]
fn ids_survive_restart() {
    let dirs = TempDirs::new();
    let (a, b, f, g, via_readdir, renamed, gen_f);
    {
        let fs = dirs.open();
        let root = fs.root();
        a = mkdir(&fs, root, "a");
        b = mkdir(&fs, a, "b");
        let (id, attrs) = fs.create(b, b"f", &guarded(), suite::OWNER).unwrap();
        f = id;
        gen_f = attrs.generation;
        fs.write(f, 0, b"persist", Stability::FileSync).unwrap();
        g = fs.create(a, b"g", &guarded(), suite::OWNER).unwrap().0;
        fs.link(g, root, b"g-link").unwrap();
        fs.remove(a, b"g").unwrap();
        renamed = fs.create(root, b"old", &guarded(), suite::OWNER).unwrap().0;
        fs.rename(root, b"old", b, b"new").unwrap();
        // Created behind the server's back, known only from READDIR.
        std::fs::write(dirs.export().join("a/b/outside"), b"x").unwrap();
        let r = fs.readdir(b, 0, 100).unwrap();
        via_readdir = r.entries.iter().find(|e| &e.name[..] == b"outside").unwrap().fileid;
    }
    let fs = dirs.open();
    assert_eq!(fs.getattr(a).unwrap().ftype, FileType::Directory);
    assert_eq!(fs.getattr(b).unwrap().ftype, FileType::Directory);
    let fa = fs.getattr(f).unwrap();
    assert_eq!(fa.generation, gen_f);
    assert_eq!(&fs.read(f, 0, 100).unwrap().data[..], b"persist");
    assert_eq!(fs.getattr(g).unwrap().nlink, 1);
    assert_eq!(fs.getattr(renamed).unwrap().fileid, renamed);
    assert_eq!(&fs.read(via_readdir, 0, 10).unwrap().data[..], b"x");
    // And once more, after the journal was compacted by the second open.
    drop(fs);
    let fs = dirs.open();
    assert_eq!(&fs.read(f, 0, 100).unwrap().data[..], b"persist");
    assert_eq!(fs.getattr(via_readdir).unwrap().size, 1);
}

#[test]
fn renamed_behind_our_back_is_found_again() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let d = mkdir(&fs, fs.root(), "d");
    let f = fs.create(d, b"before", &guarded(), suite::OWNER).unwrap().0;
    std::fs::rename(dirs.export().join("d/before"), dirs.export().join("d/after")).unwrap();
    assert_eq!(fs.getattr(f).unwrap().fileid, f);
    // A directory renamed: everything below resolves again too.
    std::fs::rename(dirs.export().join("d"), dirs.export().join("d2")).unwrap();
    assert_eq!(fs.getattr(f).unwrap().fileid, f);
    // Moved to another directory, then restarted: no longer findable.
    std::fs::create_dir(dirs.export().join("elsewhere")).unwrap();
    std::fs::rename(dirs.export().join("d2/after"), dirs.export().join("elsewhere/x")).unwrap();
    drop(fs);
    let fs = dirs.open();
    assert_eq!(fs.getattr(f).unwrap_err(), VfsError::Stale);
}

#[test]
fn deleted_and_recreated_is_detected() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let (id, a) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
    let path = dirs.export().join("f");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(fs.getattr(id).unwrap_err(), VfsError::Stale);
    // Recreate until the file system hands out the same inode number
    // again (ext4 usually does at once), then the generation must differ.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let (id2, a2) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
    if id2 == id {
        assert_ne!(a2.generation, a.generation);
        assert_ne!(fs.getattr(id).unwrap().generation, a.generation);
    } else {
        assert_eq!(fs.getattr(id).unwrap_err(), VfsError::Stale);
    }
    // Same inode reused behind our back, over a restart.
    drop(fs);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"new").unwrap();
    let fs = dirs.open();
    match fs.getattr(id2) {
        Err(VfsError::Stale) => {}
        Ok(attrs) => assert_ne!(attrs.generation, a2.generation),
        Err(e) => panic!("{e:?}"),
    }
}

/// A symlink to /etc planted in the export leads nowhere: lookup returns
/// the link itself, and nothing can be read, created or removed through it,
/// neither as a name nor as a directory component swapped in behind a
/// known directory id.
#[test]
fn symlinks_cannot_escape() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let root = fs.root();
    std::os::unix::fs::symlink("/etc", dirs.export().join("evil")).unwrap();
    std::os::unix::fs::symlink("../../../../../../etc/passwd", dirs.export().join("pw")).unwrap();
    let (evil, attrs) = fs.lookup(root, b"evil").unwrap();
    assert_eq!(attrs.ftype, FileType::Symlink);
    assert_eq!(fs.lookup(evil, b"passwd").unwrap_err(), VfsError::NotDir);
    assert_eq!(fs.create(evil, b"pwned", &guarded(), suite::OWNER).unwrap_err(), VfsError::NotDir);
    assert!(fs.readdir(evil, 0, 10).is_err());
    let (pw, _) = fs.lookup(root, b"pw").unwrap();
    assert!(fs.read(pw, 0, 100).is_err());
    assert!(fs.write(pw, 0, b"x", Stability::Unstable).is_err());
    assert!(fs.setattr(pw, &SetAttrs { size: Some(0), ..Default::default() }, None).is_err());
    // A mode for a symlink is ignored (Linux links have none, as the kernel
    // server treats it); the link's target is untouched.
    let mode_of_target = || std::os::unix::fs::MetadataExt::mode(&std::fs::metadata("/etc/passwd").unwrap());
    let before = mode_of_target();
    fs.setattr(pw, &SetAttrs { mode: Some(0o777), ..Default::default() }, None).unwrap();
    assert_eq!(mode_of_target(), before);
    // A known directory replaced by a symlink to /etc behind our back. ext4
    // may give the symlink the directory's inode number at once: then the
    // id names the symlink, with a new generation (stale for the server).
    let (d, da) = fs.mkdir(root, b"d", &SetAttrs::default(), suite::OWNER).unwrap();
    std::fs::remove_dir(dirs.export().join("d")).unwrap();
    std::os::unix::fs::symlink("/etc", dirs.export().join("d")).unwrap();
    match fs.getattr(d) {
        Err(VfsError::Stale) => {}
        Ok(a) => assert!(a.generation != da.generation && a.ftype == FileType::Symlink),
        Err(e) => panic!("{e:?}"),
    }
    assert!(fs.create(d, b"pwned", &guarded(), suite::OWNER).is_err());
    assert!(fs.lookup(d, b"passwd").is_err());
    assert!(fs.readdir(d, 0, 10).is_err());
    // An ancestor swapped for a symlink to /etc, which has a directory of
    // the same name: the walk refuses the symlink and finds the real one.
    let (a, _) = fs.mkdir(root, b"a", &SetAttrs::default(), suite::OWNER).unwrap();
    let (ssl, _) = fs.mkdir(a, b"ssl", &SetAttrs::default(), suite::OWNER).unwrap();
    std::fs::rename(dirs.export().join("a"), dirs.export().join("a.moved")).unwrap();
    std::os::unix::fs::symlink("/etc", dirs.export().join("a")).unwrap();
    fs.create(ssl, b"pwned", &guarded(), suite::OWNER).unwrap();
    assert!(dirs.export().join("a.moved/ssl/pwned").exists());
    assert!(!Path::new("/etc/ssl/pwned").exists());
    let _ = a;
    // `..` from the root stays at the root; `..` as a path never works.
    assert_eq!(fs.lookup(root, b"..").unwrap().0, root);
    assert_eq!(fs.lookup(root, b"../etc").unwrap_err(), VfsError::Invalid);
    assert_eq!(fs.create(root, b"../pwned", &guarded(), suite::OWNER).unwrap_err(), VfsError::Invalid);
    assert!(!Path::new("/etc/pwned").exists());
    assert!(!dirs.base.join("pwned").exists());
    // Renaming and linking onto the symlink replace the link, not /etc.
    let f = fs.create(root, b"f", &guarded(), suite::OWNER).unwrap().0;
    fs.link(f, root, b"f2").unwrap();
    fs.rename(root, b"f2", root, b"evil").unwrap();
    assert_eq!(fs.lookup(root, b"evil").unwrap().1.ftype, FileType::Regular);
    assert!(Path::new("/etc").is_dir());
}

#[test]
fn state_dir_inside_export_is_refused() {
    let dirs = TempDirs::new();
    let inside = dirs.export().join(".state");
    assert_eq!(LocalFs::open(&dirs.export(), &inside, LocalFsSettings::default()).err(), Some(VfsError::Invalid));
}

#[test]
fn one_instance_per_state_dir() {
    let dirs = TempDirs::new();
    let _a = dirs.open();
    assert!(LocalFs::open(&dirs.export(), &dirs.state(), LocalFsSettings::default()).is_err());
}

#[test]
fn stable_writes_are_visible_and_cache_is_bounded() {
    let dirs = TempDirs::new();
    let fs = dirs.open_with(LocalFsSettings { open_file_cache: 4, ..Default::default() });
    let root = fs.root();
    let mut ids = Vec::new();
    for i in 0..20 {
        let name = format!("f{i}");
        let id = fs.create(root, name.as_bytes(), &guarded(), suite::OWNER).unwrap().0;
        let stable = [Stability::Unstable, Stability::DataSync, Stability::FileSync][i % 3];
        let w = fs.write(id, 0, name.as_bytes(), stable).unwrap();
        assert_eq!(w.committed, stable);
        ids.push((id, name));
    }
    for (id, name) in &ids {
        // Visible to anyone reading the host file, not only through us.
        assert_eq!(std::fs::read(dirs.export().join(name)).unwrap(), name.as_bytes());
        fs.commit(*id, 0, 0).unwrap();
        assert_eq!(&fs.read(*id, 0, 100).unwrap().data[..], name.as_bytes());
    }
}

#[test]
fn exclusive_verifier_lives_in_the_times() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let v = *b"\x00\x00\x01\x00\x00\x00\x02\x00";
    let (id, a) = fs.create(fs.root(), b"x", &CreateHow::Exclusive(v), suite::OWNER).unwrap();
    assert_eq!((a.atime.seconds, a.mtime.seconds), (256, 512));
    // Survives a restart: a retransmission after a server reboot works.
    drop(fs);
    let fs = dirs.open();
    assert_eq!(fs.create(fs.root(), b"x", &CreateHow::Exclusive(v), suite::OWNER).unwrap().0, id);
}

#[test]
fn ownership_and_mode_are_exact() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let set = SetAttrs { mode: Some(0o4751), ..Default::default() };
    let (id, a) = fs.create(fs.root(), b"m", &CreateHow::Guarded(set), suite::OWNER).unwrap();
    assert_eq!(a.mode, 0o4751, "umask must not apply, chown must not clear set-id");
    assert_eq!((a.uid, a.gid), (suite::OWNER.uid, suite::OWNER.gid));
    let md = std::fs::metadata(dirs.export().join("m")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((md.uid(), md.gid(), md.ino()), (suite::OWNER.uid, suite::OWNER.gid, id));
}

#[test]
fn readdir_cookies_survive_restart() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    for i in 0..500 {
        std::fs::write(dirs.export().join(format!("e{i}")), b"").unwrap();
    }
    let first = fs.readdir(fs.root(), 0, 100).unwrap();
    let cookie = first.entries.last().unwrap().cookie;
    drop(fs);
    let fs = dirs.open();
    let mut names: Vec<_> = first.entries.iter().map(|e| e.name.clone()).collect();
    let mut c = cookie;
    loop {
        let r = fs.readdir(fs.root(), c, 77).unwrap();
        names.extend(r.entries.iter().map(|e| e.name.clone()));
        if r.eof {
            break;
        }
        c = r.entries.last().unwrap().cookie;
    }
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!((before, names.len()), (500, 500));
}

#[test]
fn readdir_pages_100k_entries_exactly_once() {
    let dirs = TempDirs::new();
    let big = dirs.export().join("big");
    std::fs::create_dir(&big).unwrap();
    const N: usize = 100_000;
    for i in 0..N {
        std::fs::File::create(big.join(format!("n{i}"))).unwrap();
    }
    let fs = dirs.open_with(LocalFsSettings { sync_metadata: false, ..Default::default() });
    let (d, _) = fs.lookup(fs.root(), b"big").unwrap();
    for chunk in [100, 1000] {
        let seen = suite::page_all(&fs, d, chunk, |_| {});
        let mut names: Vec<_> = seen.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!((seen.len(), names.len()), (N, N), "chunk {chunk}");
    }
}

#[test]
fn device_nodes_are_never_opened() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let set = SetAttrs { mode: Some(0o666), ..Default::default() };
    // 1:3 is /dev/null: opening it would succeed, so an error here shows
    // the backend refused before any open.
    let (id, a) = fs.mknod(fs.root(), b"null", NodeKind::CharDevice(1, 3), &set, suite::OWNER).unwrap();
    assert_eq!((a.ftype, a.rdev), (FileType::CharDevice, (1, 3)));
    assert_eq!(fs.read(id, 0, 10).unwrap_err(), VfsError::Invalid);
    assert_eq!(fs.write(id, 0, b"x", Stability::Unstable).unwrap_err(), VfsError::Invalid);
    assert_eq!(fs.commit(id, 0, 0).unwrap_err(), VfsError::Invalid);
    let how = CreateHow::Unchecked(SetAttrs { size: Some(0), ..Default::default() });
    assert_eq!(fs.create(fs.root(), b"null", &how, suite::OWNER).unwrap_err(), VfsError::Exists);
}

#[test]
fn fsid_is_stable_across_restarts() {
    let dirs = TempDirs::new();
    let a = dirs.open().fsid();
    let b = dirs.open().fsid();
    assert_eq!(a, b);
}

#[test]
fn hostile_ids_cookies_and_offsets() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    for id in [0, 1, u64::MAX, fs.root() + 1_000_000] {
        assert_eq!(fs.getattr(id).unwrap_err(), VfsError::Stale, "id {id}");
        assert!(fs.read(id, 0, 1).is_err());
        assert!(fs.create(id, b"x", &guarded(), suite::OWNER).is_err());
    }
    assert_eq!(fs.readdir(fs.root(), u64::MAX, 10).unwrap_err(), VfsError::BadCookie);
    let (f, _) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
    assert_eq!(fs.write(f, i64::MAX as u64, b"x", Stability::Unstable).unwrap_err(), VfsError::FBig);
    assert!(fs.read(f, 0, u32::MAX).is_ok());
    assert_eq!(
        fs.setattr(f, &SetAttrs { size: Some(u64::MAX), ..Default::default() }, None).unwrap_err(),
        VfsError::FBig
    );
    assert_eq!(
        fs.setattr(f, &SetAttrs { uid: Some(u32::MAX), ..Default::default() }, None).unwrap_err(),
        VfsError::Invalid
    );
}

#[test]
fn concurrent_io_and_renames() {
    use std::sync::Arc;
    let dirs = TempDirs::new();
    let fs =
        Arc::new(dirs.open_with(LocalFsSettings { sync_metadata: false, open_file_cache: 3, ..Default::default() }));
    let root = fs.root();
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let fs = fs.clone();
            std::thread::spawn(move || {
                let name = format!("t{t}");
                let (f, _) = fs.create(root, name.as_bytes(), &guarded(), suite::OWNER).unwrap();
                for i in 0..300u64 {
                    fs.write(f, i, &[b'a' + t], Stability::Unstable).unwrap();
                    let (a, b) = if i % 2 == 0 {
                        (name.clone(), format!("{name}x"))
                    } else {
                        (format!("{name}x"), name.clone())
                    };
                    fs.rename(root, a.as_bytes(), root, b.as_bytes()).unwrap();
                    assert_eq!(fs.getattr(f).unwrap().size, i + 1);
                }
                fs.commit(f, 0, 0).unwrap();
                assert_eq!(fs.read(f, 0, 1000).unwrap().data.len(), 300);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Filebench's fileserver pattern against one export: threads creating,
/// writing, reading, looking up and removing files in shared directories,
/// while another lists them, so freed inode numbers are handed straight to
/// other threads' new files. A file that exists must never be Stale, and
/// its data must be its own (not written through to an earlier object with
/// the same inode number).
#[test]
fn concurrent_create_write_remove_never_stale() {
    use std::collections::VecDeque;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let dirs = TempDirs::new();
    let fs = Arc::new(dirs.open_with(LocalFsSettings { open_file_cache: 16, ..Default::default() }));
    let root = fs.root();
    let subdirs = [mkdir(&fs, root, "d0"), mkdir(&fs, root, "d1")];
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(2);
    let workers: Vec<_> = (0..4u8)
        .map(|t| {
            let fs = fs.clone();
            std::thread::spawn(move || {
                let mut live: VecDeque<(FileId, FileId, String, u64, u8)> = VecDeque::new();
                let mut n = 0u64;
                let mut rounds = 0u64;
                while Instant::now() < deadline {
                    let dir = subdirs[(n % 2) as usize];
                    let name = format!("f{t}-{n}");
                    let fill = b'a' + ((n + u64::from(t)) % 26) as u8;
                    n += 1;
                    let (id, attrs) = fs.create(dir, name.as_bytes(), &guarded(), suite::OWNER).unwrap();
                    let what = |op: &str| format!("{op} of live {name} (id {id})");
                    fs.write(id, 0, &[fill; 4096], Stability::Unstable)
                        .unwrap_or_else(|e| panic!("{}: {e:?}", what("write")));
                    assert_eq!(
                        fs.getattr(id).unwrap_or_else(|e| panic!("{}: {e:?}", what("getattr"))).generation,
                        attrs.generation
                    );
                    fs.write(id, 4096, &[fill; 512], Stability::FileSync)
                        .unwrap_or_else(|e| panic!("{}: {e:?}", what("append")));
                    fs.commit(id, 0, 0).unwrap_or_else(|e| panic!("{}: {e:?}", what("commit")));
                    live.push_back((dir, id, name, attrs.generation, fill));
                    // A few files alive per thread, so removals and creates
                    // of different threads interleave.
                    if live.len() > 3 {
                        let (dir, id, name, generation, fill) = live.pop_front().unwrap();
                        let what = |op: &str| format!("{op} of live {name} (id {id})");
                        let (found, a) =
                            fs.lookup(dir, name.as_bytes()).unwrap_or_else(|e| panic!("{}: {e:?}", what("lookup")));
                        assert_eq!((found, a.generation), (id, generation), "{}", what("lookup"));
                        let r = fs.read(id, 0, 8192).unwrap_or_else(|e| panic!("{}: {e:?}", what("read")));
                        assert_eq!(r.data.len(), 4608, "{}", what("read"));
                        assert!(r.data.iter().all(|&b| b == fill), "{}: another object's data", what("read"));
                        assert_eq!(
                            fs.getattr(id).unwrap_or_else(|e| panic!("{}: {e:?}", what("getattr"))).generation,
                            generation
                        );
                        fs.remove(dir, name.as_bytes()).unwrap_or_else(|e| panic!("{}: {e:?}", what("remove")));
                    }
                    rounds += 1;
                }
                for (dir, id, name, _, _) in live {
                    fs.write(id, 0, b"x", Stability::Unstable).unwrap_or_else(|e| panic!("write of {name}: {e:?}"));
                    fs.remove(dir, name.as_bytes()).unwrap();
                }
                rounds
            })
        })
        .collect();
    let lister = {
        let fs = fs.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for &d in &subdirs {
                    // Entries come and go under the listing; only that the
                    // listing itself works is asserted.
                    let page = fs.readdir(d, 0, 1000).unwrap();
                    for e in page.entries {
                        let _ = fs.getattr(e.fileid);
                    }
                }
            }
        })
    };
    let rounds: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    lister.join().unwrap();
    assert!(rounds > 0);
    for d in subdirs {
        assert!(fs.readdir(d, 0, 10).unwrap().entries.is_empty());
    }
}

/// Fds of this process open on `path` after it was removed.
fn open_fds_on_deleted(path: &Path) -> usize {
    let want = format!("{} (deleted)", path.display());
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| t.to_string_lossy() == want)
        .count()
}

/// The handle cache never answers for an object removed or replaced
/// behind the server's back: a cached fd whose inode has no links left is
/// dropped and the names are walked again.
#[test]
fn handle_cache_never_serves_removed_or_replaced_objects() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let path = dirs.export().join("f");
    for round in 0..20 {
        let (id, a) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
        assert_eq!(fs.getattr(id).unwrap().generation, a.generation);
        assert!(fs.resident(id), "resolved once, now cached");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(fs.getattr(id).unwrap_err(), VfsError::Stale, "round {round}: removed");
        // Replaced on the host, often under the same inode number.
        std::thread::sleep(std::time::Duration::from_millis(2));
        std::fs::write(&path, b"new").unwrap();
        match fs.getattr(id) {
            Err(VfsError::Stale) => {}
            Ok(now) => assert_ne!(now.generation, a.generation, "round {round}: replaced object"),
            Err(e) => panic!("{e:?}"),
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// LOOKUP of a held object answers from one statx by name, and never
/// with the held object once the name means another one: replaced on the
/// host (often under the same inode number), renamed over, or removed.
#[test]
fn lookup_of_a_held_object_follows_the_name() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let path = dirs.export().join("f");
    for round in 0..20 {
        let (id, a) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
        let (again, b) = fs.lookup(fs.root(), b"f").unwrap();
        assert_eq!((again, b.generation), (id, a.generation), "round {round}: the created file");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(fs.lookup(fs.root(), b"f").unwrap_err(), VfsError::NotFound, "round {round}: removed");
        std::thread::sleep(std::time::Duration::from_millis(2));
        std::fs::write(&path, b"new").unwrap();
        let (now, c) = fs.lookup(fs.root(), b"f").unwrap();
        assert!(now != id || c.generation != a.generation, "round {round}: replaced object");
        assert_eq!(c.size, 3, "round {round}: the new file's attributes");
        // Renamed over by another file.
        std::fs::write(dirs.export().join("g"), b"other!").unwrap();
        std::fs::rename(dirs.export().join("g"), &path).unwrap();
        let (over, d) = fs.lookup(fs.root(), b"f").unwrap();
        assert_ne!((over, d.generation), (now, c.generation), "round {round}: renamed over");
        assert_eq!(d.size, 6);
        std::fs::remove_file(&path).unwrap();
    }
}

/// A file removed on the host while the server holds it (handle and
/// open-file caches) has its fds closed once idle, so its space is freed.
#[test]
fn idle_fds_are_closed_so_removed_files_free_space() {
    let dirs = TempDirs::new();
    let fs = dirs.open_with(LocalFsSettings { idle_fd_secs: 1, ..Default::default() });
    let (id, _) = fs.create(fs.root(), b"big", &guarded(), suite::OWNER).unwrap();
    fs.write(id, 0, &vec![7u8; 1 << 20], Stability::Unstable).unwrap();
    fs.getattr(id).unwrap();
    let path = dirs.export().join("big");
    std::fs::remove_file(&path).unwrap();
    assert!(open_fds_on_deleted(&path) > 0, "held while in use");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while open_fds_on_deleted(&path) > 0 {
        assert!(std::time::Instant::now() < deadline, "removed file still held after 10 s");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A file moved out of the export behind the server's back stays
/// reachable through a cached fd only while it is in use (as with knfsd's
/// no_subtree_check); once idle it is Stale.
#[test]
fn moved_out_of_the_export_is_stale_once_idle() {
    let dirs = TempDirs::new();
    let fs = dirs.open_with(LocalFsSettings { idle_fd_secs: 1, ..Default::default() });
    let (id, _) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
    fs.getattr(id).unwrap();
    std::fs::rename(dirs.export().join("f"), dirs.base.join("outside")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert_eq!(fs.getattr(id).unwrap_err(), VfsError::Stale);
}

/// A read that can be answered from the page cache is, without waiting;
/// one whose pages were dropped says so (None) instead of reading the disk.
#[test]
fn cached_reads_never_wait() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let (id, _) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
    let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    fs.write(id, 0, &data, Stability::FileSync).unwrap();
    let r = fs.read_cached(id, 4096, 8192).unwrap().expect("just written, so cached");
    assert_eq!(&r.data[..], &data[4096..12288]);
    assert!(!r.eof);
    let r = fs.read_cached(id, 99_000, 8192).unwrap().expect("cached tail");
    assert_eq!(r.data.len(), 1000);
    assert!(r.eof);
    let r = fs.read_cached(id, 200_000, 10).unwrap().expect("past the end");
    assert!(r.data.is_empty() && r.eof);
    // Drop the file's pages: a cached read must now decline, a plain read
    // still works.
    let f = std::fs::File::open(dirs.export().join("f")).unwrap();
    rustix::fs::fadvise(&f, 0, 0, rustix::fs::Advice::DontNeed).unwrap();
    match fs.read_cached(id, 50_000, 8192).unwrap() {
        None => {}
        // Some file systems keep the pages anyway; then the data is right.
        Some(r) => assert_eq!(&r.data[..], &data[50_000..58_192]),
    }
    assert_eq!(&fs.read(id, 50_000, 8192).unwrap().data[..], &data[50_000..58_192]);
}

/// tmpfs refuses `RWF_NOWAIT`; its files are all in memory, so a cached
/// read there is answered all the same (and so runs on the connection's
/// thread).
#[test]
fn cached_reads_on_tmpfs_are_answered() {
    let shm = Path::new("/dev/shm");
    if !rustix::fs::statfs(shm).is_ok_and(|s| s.f_type as i64 == 0x0102_1994) {
        eprintln!("skipped: /dev/shm is not a tmpfs here");
        return;
    }
    let dirs = TempDirs::under(shm);
    let fs = dirs.open();
    let (id, _) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
    let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
    fs.write(id, 0, &data, Stability::Unstable).unwrap();
    let r = fs.read_cached(id, 4096, 8192).unwrap().expect("tmpfs data is in memory");
    assert_eq!(&r.data[..], &data[4096..12288]);
    let r = fs.read_cached(id, 16_384, 8192).unwrap().expect("tmpfs tail");
    assert_eq!(&r.data[..], &data[16_384..]);
    assert!(r.eof);
}

/// A new inode's fsync makes its directory entry durable on ext4, XFS and
/// btrfs (ext4 marks every inode it adds to a directory, file or
/// directory, for `ext4_sync_parent`): with `create_dir_flush = "auto"`
/// the directory is not flushed after a CREATE or MKDIR there, with
/// `"always"` it is.
#[test]
fn a_create_flushes_its_directory_only_where_needed() {
    let is_ext4 = |p: &Path| rustix::fs::statfs(p).is_ok_and(|s| s.f_type as i64 == 0xEF53);
    let dir_flushes = |fs: &LocalFs| fs.counters().iter().find(|c| c.name == "dir_flushes").map_or(0, |c| c.value);
    for (how, skips) in [(CreateDirFlush::Auto, true), (CreateDirFlush::Always, false)] {
        let dirs = TempDirs::new();
        if !is_ext4(&dirs.export()) {
            eprintln!("export not on ext4: the auto case is not checked here");
            continue;
        }
        let fs = dirs.open_with(LocalFsSettings { create_dir_flush: how, ..Default::default() });
        let root = fs.root();
        let before = dir_flushes(&fs);
        fs.create(root, b"f", &guarded(), suite::OWNER).unwrap();
        assert_eq!(dir_flushes(&fs) - before, if skips { 0 } else { 1 }, "{how:?}");
        mkdir(&fs, root, "d");
        assert_eq!(dir_flushes(&fs) - before, if skips { 0 } else { 2 }, "{how:?}");
    }
}

/// ext4 and tmpfs (where the tests' temporary directory usually lives)
/// cannot reflink: CLONE says NotSupported and no clone block size is
/// offered, and the probe leaves nothing behind in the export.
#[test]
fn clone_without_reflink_is_not_supported() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let fstype = rustix::fs::statfs(dirs.export()).unwrap().f_type;
    if ![0xEF53, 0x0102_1994].contains(&fstype) {
        eprintln!("skipped: file system type {fstype:#x} may reflink");
        return;
    }
    let root = fs.root();
    let (src, _) = fs.create(root, b"src", &guarded(), suite::OWNER).unwrap();
    fs.write(src, 0, &[1u8; 8192], Stability::Unstable).unwrap();
    let (dst, _) = fs.create(root, b"dst", &guarded(), suite::OWNER).unwrap();
    assert_eq!(fs.clone_blksize(), None);
    assert_eq!(fs.clone_range(src, 0, dst, 0, 0), Err(VfsError::NotSupported));
    assert_eq!(fs.getattr(dst).unwrap().size, 0);
    let left: Vec<_> = std::fs::read_dir(dirs.export()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// Attributes live in the host's `user.` namespace: set there by anyone
/// they are seen, and other namespaces are never listed.
#[test]
fn xattrs_are_the_hosts_user_namespace() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    if fs.xattrs().is_none() {
        eprintln!("skipped: this file system stores no user extended attributes");
        return;
    }
    let (f, _) = fs.create(fs.root(), b"f", &guarded(), suite::OWNER).unwrap();
    let host = dirs.export().join("f");
    rustix::fs::setxattr(&host, "user.from-host", b"1", rustix::fs::XattrFlags::empty()).unwrap();
    // Needs CAP_SYS_ADMIN; without it there is nothing to hide.
    let trusted = rustix::fs::setxattr(&host, "trusted.nfsx", b"2", rustix::fs::XattrFlags::empty()).is_ok();
    fs.setxattr(f, b"from-nfs", b"3", XattrSet::Create).unwrap();
    let names = fs.listxattrs(f).unwrap();
    assert_eq!(
        names.iter().map(|n| &n[..]).collect::<Vec<_>>(),
        vec![&b"from-host"[..], b"from-nfs"],
        "trusted set: {trusted}"
    );
    assert_eq!(&fs.getxattr(f, b"from-host").unwrap()[..], b"1");
    let mut buf = [0u8; 8];
    let n = rustix::fs::getxattr(&host, "user.from-nfs", &mut buf).unwrap();
    assert_eq!(&buf[..n], b"3");
    fs.removexattr(f, b"from-host").unwrap();
    assert!(rustix::fs::getxattr(&host, "user.from-host", &mut buf).is_err());
}

/// A sparse source stays sparse through COPY on a file system that keeps
/// holes, and a stable copy is flushed through the file's flush group.
#[test]
fn copy_keeps_holes_and_flushes_stable_copies() {
    let dirs = TempDirs::new();
    let fs = dirs.open();
    let root = fs.root();
    let (src, _) = fs.create(root, b"src", &guarded(), suite::OWNER).unwrap();
    fs.write(src, 0, &[1u8; 4096], Stability::Unstable).unwrap();
    fs.write(src, 64 << 20, &[2u8; 4096], Stability::Unstable).unwrap();
    let (dst, _) = fs.create(root, b"dst", &guarded(), suite::OWNER).unwrap();
    let flushes = |fs: &LocalFs| fs.counters().iter().find(|c| c.name == "flushes").unwrap().value;
    let before = flushes(&fs);
    let r = fs.copy_range(src, 0, dst, 0, 0, Stability::FileSync).unwrap();
    assert_eq!(r, CopyResult { count: (64 << 20) + 4096, committed: Stability::FileSync });
    assert!(flushes(&fs) > before, "a stable copy flushes");
    let a = fs.getattr(dst).unwrap();
    assert_eq!(a.size, (64 << 20) + 4096);
    assert!(a.used < 8 << 20, "copied sparse: {} bytes used", a.used);
    assert_eq!(&fs.read(dst, 64 << 20, 10).unwrap().data[..], &[2u8; 10]);
}

/// A WRITE longer than `write_piece` lands whole and in place, whether the
/// export's file system takes it in pieces (ext4) or at once, stable or not.
#[test]
fn writes_longer_than_a_piece_land_whole() {
    let dirs = TempDirs::new();
    let fs = dirs.open_with(LocalFsSettings { write_piece: 4096, ..Default::default() });
    let root = fs.root();
    let id = fs.create(root, b"pieces", &guarded(), suite::OWNER).unwrap().0;
    let data: Vec<u8> = (0..70_001u32).map(|i| (i % 251) as u8).collect();
    for (offset, stable) in [(3u64, Stability::Unstable), (100_000, Stability::FileSync)] {
        let w = fs.write(id, offset, &data, stable).unwrap();
        assert_eq!(w.count as usize, data.len());
        let r = fs.read(id, offset, data.len() as u32).unwrap();
        assert_eq!(&r.data[..], &data[..], "at {offset}");
    }
    assert_eq!(fs.getattr(id).unwrap().size, 100_000 + data.len() as u64);
}

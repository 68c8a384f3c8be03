//! The backend conformance suite against a real Ceph cluster.
//!
//! Every case needs a cluster, so all are ignored in a plain `cargo test`
//! and run with `--ignored` when `NFSX_CEPH_CONF` names a cluster's
//! `ceph.conf` (`eval "$(scripts/ceph.sh start)"; export
//! NFSX_CEPH_CONF=$CEPH_CONF`), as `scripts/test.sh` does. Asked for
//! without a cluster, a case fails: it must not pass without running.

#[path = "../../vfs/tests/suite/mod.rs"]
mod suite;

use std::sync::{Arc, Mutex, Once};

use vfs::*;
use vfs_ceph::{CephFs, CephSettings};

/// The shared export; without a cluster the test fails, saying why.
fn cluster() -> Arc<CephFs> {
    shared().unwrap_or_else(|| {
        panic!(
            "NFSX_CEPH_CONF is not set: this test needs a Ceph cluster \
             (eval \"$(scripts/ceph.sh start)\"; export NFSX_CEPH_CONF=$CEPH_CONF)"
        )
    })
}

/// One export for the whole run, in a directory of its own.
static SHARED: Mutex<Option<Arc<CephFs>>> = Mutex::new(None);

fn shared() -> Option<Arc<CephFs>> {
    static MOUNTED: Once = Once::new();
    MOUNTED.call_once(|| {
        let Some(conf) = std::env::var_os("NFSX_CEPH_CONF") else { return };
        let settings = CephSettings { conf: Some(conf.into()), ..CephSettings::default() };
        let top = CephFs::open(&settings, "/").expect("mount CephFS /");
        let name = format!("nfsx-vfs-{}", std::process::id());
        let owner = Owner { uid: 0, gid: 0 };
        let set = SetAttrs { mode: Some(0o777), ..SetAttrs::default() };
        top.mkdir(top.root(), name.as_bytes(), &set, owner).expect("mkdir test root");
        let fs = CephFs::open(&settings, &format!("/{name}")).expect("mount the test root");
        *SHARED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(fs));
        // SAFETY: registers a plain function with no arguments.
        unsafe { libc::atexit(unmount_shared) };
    });
    SHARED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Unmounts the shared export before the process's exit handlers run.
/// A mount still live at exit leaves libcephfs's threads running while
/// its static objects are destroyed underneath them, which crashes the
/// test binary (SIGSEGV) after every test passed. Handlers run in reverse
/// order of registration, so this one runs before libcephfs's, which were
/// registered when the library was loaded.
extern "C" fn unmount_shared() {
    let fs = SHARED.lock().unwrap_or_else(|e| e.into_inner()).take();
    drop(fs);
}

macro_rules! ceph_case {
    ($($case:ident),* $(,)?) => {
        $(
            #[test]
            #[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
            fn $case() {
                suite::$case(&*cluster());
            }
        )*
    };
}

ceph_case!(
    create_lookup_getattr,
    names_are_checked,
    read_write,
    setattr,
    type_errors,
    exclusive_create,
    unchecked_and_guarded_create,
    rename,
    link,
    symlink_readlink,
    mknod,
    remove_rmdir,
    readdir_paging,
    readdir_small,
    readdir_plus,
    change_and_times,
    fsstat,
    clone_range,
    read_data_region_skips_holes,
    xattrs,
    xattr_limits,
);
// Not run: seek_data_and_hole, read_sparse_segments (CephFS does not tell
// clients where holes are), allocate_and_deallocate (no space reservation;
// DEALLOCATE is tested below), copy_range (not offered: the server answers
// NOTSUPP and clients copy through themselves), rename_dirs (after a
// directory moves to another parent, libcephfs 16.2 keeps serving the old
// parent's link count from its cache, and refuses AT_STATX_FORCE_SYNC).

/// Ids stay valid for another client of the cluster: a second head (here a
/// second mount) resolves an id the first handed out, with the same
/// generation, and a removed object's id is stale there.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn ids_survive_another_mount() {
    let fs = &*cluster();
    let d = suite::scratch(fs, "ids");
    let f = suite::new_file(fs, d, "f");
    fs.write(f, 0, b"durable", Stability::FileSync).unwrap();
    let gone = suite::new_file(fs, d, "gone");
    fs.remove(d, b"gone").unwrap();
    let settings = CephSettings { conf: std::env::var_os("NFSX_CEPH_CONF").map(Into::into), ..CephSettings::default() };
    let other = CephFs::open(&settings, "/").expect("second mount");
    let a = other.getattr(f).unwrap();
    assert_eq!(a.generation, fs.getattr(f).unwrap().generation);
    assert_eq!(&other.read(f, 0, 100).unwrap().data[..], b"durable");
    assert_eq!(other.getattr(gone).unwrap_err(), VfsError::Stale);
    assert_eq!(other.getattr(u64::MAX >> 1).unwrap_err(), VfsError::Stale);
}

#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn deallocate_punches_in_place() {
    let fs = &*cluster();
    let d = suite::scratch(fs, "punch");
    let f = suite::new_file(fs, d, "f");
    fs.write(f, 0, &[7u8; 10_000], Stability::Unstable).unwrap();
    assert_eq!(fs.deallocate(f, 100, 5000).unwrap().size, 10_000);
    let data = fs.read(f, 0, 10_000).unwrap().data;
    assert_eq!(&data[..100], &[7u8; 100][..]);
    assert_eq!(&data[100..5100], &[0u8; 5000][..]);
    assert_eq!(&data[5100..], &[7u8; 4900][..]);
    assert_eq!(fs.deallocate(f, 0, 0).unwrap_err(), VfsError::Invalid);
    assert_eq!(fs.allocate(f, 0, 10).unwrap_err(), VfsError::NotSupported);
    assert_eq!(fs.lookup(fs.root(), b".snap").unwrap_err(), VfsError::NotFound);
}

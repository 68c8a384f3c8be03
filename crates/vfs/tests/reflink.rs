//! COPY and CLONE on a file system that shares blocks: an XFS image with
//! reflink, made and mounted through a loop device for the test. CLONE
//! (and COPY, which the kernel turns into a reflink there) take the same
//! time whatever the file's size. Skipped, saying why, where the machine
//! cannot make one (not root, no mkfs.xfs, no loop devices).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use vfs::*;

/// A mounted XFS image, unmounted and removed on drop.
struct Xfs {
    dir: tempfile::TempDir,
}

impl Xfs {
    fn mount() -> Result<Xfs, String> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root".into());
        }
        let dir = tempfile::Builder::new().prefix("nfsx-xfs").tempdir_in("/var/tmp").map_err(|e| e.to_string())?;
        let image = dir.path().join("xfs.img");
        let size = std::fs::File::create(&image).and_then(|f| f.set_len(1 << 30));
        size.map_err(|e| e.to_string())?;
        let mkfs = Command::new("mkfs.xfs").args(["-q", "-m", "reflink=1"]).arg(&image).status();
        if !mkfs.map_err(|e| format!("mkfs.xfs: {e}"))?.success() {
            return Err("mkfs.xfs failed".into());
        }
        std::fs::create_dir(dir.path().join("mnt")).map_err(|e| e.to_string())?;
        let mount = Command::new("mount").args(["-o", "loop"]).arg(&image).arg(dir.path().join("mnt")).output();
        let mount = mount.map_err(|e| format!("mount: {e}"))?;
        if !mount.status.success() {
            return Err(format!("mount -o loop failed: {}", String::from_utf8_lossy(&mount.stderr).trim()));
        }
        Ok(Xfs { dir })
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for Xfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt()).status();
    }
}

fn open(root: &Path) -> LocalFs {
    std::fs::create_dir_all(root.join("export")).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    LocalFs::open(&root.join("export"), &root.join("state"), LocalFsSettings::default()).unwrap()
}

#[test]
fn clone_and_copy_share_blocks_in_constant_time() {
    let xfs = match Xfs::mount() {
        Ok(x) => x,
        Err(why) => {
            eprintln!("skipped: no reflinking file system here ({why})");
            return;
        }
    };
    let fs = open(&xfs.mnt());
    assert!(fs.clone_blksize().is_some(), "XFS with reflink offers CLONE");
    let owner = Owner { uid: 0, gid: 0 };
    let how = CreateHow::Guarded(SetAttrs::default());
    let mut times = Vec::new();
    for (i, mib) in [4u64, 256].into_iter().enumerate() {
        let (src, _) = fs.create(fs.root(), format!("src{i}").as_bytes(), &how, owner).unwrap();
        let chunk: Vec<u8> = (0..1 << 20).map(|b| (b % 251) as u8 ^ i as u8).collect();
        for m in 0..mib {
            fs.write(src, m << 20, &chunk, Stability::Unstable).unwrap();
        }
        fs.commit(src, 0, 0).unwrap();
        let (clone, _) = fs.create(fs.root(), format!("clone{i}").as_bytes(), &how, owner).unwrap();
        let (copy, _) = fs.create(fs.root(), format!("copy{i}").as_bytes(), &how, owner).unwrap();
        let t = Instant::now();
        fs.clone_range(src, 0, clone, 0, 0).unwrap();
        let cloned = t.elapsed();
        let t = Instant::now();
        let c = fs.copy_range(src, 0, copy, 0, 0, Stability::FileSync).unwrap();
        let copied = t.elapsed();
        assert_eq!(c.count, mib << 20);
        for f in [clone, copy] {
            let back = fs.read(f, (mib - 1) << 20, 1 << 20).unwrap();
            assert_eq!(&back.data[..], &chunk[..], "last MiB of the {mib} MiB file");
        }
        times.push((mib, cloned, copied));
    }
    // 64 times the data, nowhere near 64 times the time: blocks are shared,
    // not copied (a 256 MiB copy of the data would take a good fraction of
    // a second here).
    for (mib, cloned, copied) in &times {
        eprintln!("{mib} MiB: clone {cloned:?}, copy {copied:?}");
        assert!(*cloned < Duration::from_millis(200) && *copied < Duration::from_millis(400), "{times:?}");
    }
}

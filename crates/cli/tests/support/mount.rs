//! A running `nfsx mount` of a test server, for the tests of programs on
//! the mount.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{ok, run, TestServer};

/// A running `nfsx mount`, unmounted and stopped on drop.
pub struct Mounted {
    pub child: Child,
    pub dir: PathBuf,
    pub log: PathBuf,
    pub _tmp: tempfile::TempDir,
}

pub fn mounted(dir: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let dir = dir.to_str().unwrap();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(dir))
}

impl Mounted {
    pub fn new(srv: &TestServer, client_config: &str) -> Mounted {
        Mounted::with_args(srv, client_config, &[])
    }

    pub fn with_args(srv: &TestServer, client_config: &str, extra: &[&str]) -> Mounted {
        Mounted::with_query(srv, "?version=3", client_config, extra)
    }

    /// A mount of `srv` with `query` after the URL's path (`?version=4.1`).
    pub fn with_query(srv: &TestServer, query: &str, client_config: &str, extra: &[&str]) -> Mounted {
        assert!(Path::new("/dev/fuse").exists(), "no /dev/fuse on this machine");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mnt");
        std::fs::create_dir(&dir).unwrap();
        let cfg = tmp.path().join("client.toml");
        std::fs::write(&cfg, client_config).unwrap();
        let log = tmp.path().join("mount.log");
        let out = std::fs::File::create(&log).unwrap();
        let url = format!("nfs://127.0.0.1:{}{}{query}", srv.port, srv.export.display());
        let child = Command::new(env!("CARGO_BIN_EXE_nfsx"))
            .args(["mount", &url, dir.to_str().unwrap(), "--client-config", cfg.to_str().unwrap()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start nfsx mount");
        let m = Mounted { child, dir, log, _tmp: tmp };
        let start = Instant::now();
        while !mounted(&m.dir) {
            assert!(start.elapsed() < Duration::from_secs(15), "not mounted: {}", m.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
        m
    }

    /// Kills the `nfsx mount` process outright (its mount is left dead
    /// until dropped).
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn umount(&mut self) {
        let out = run(env!("CARGO_BIN_EXE_nfsx"), &["umount", self.dir.to_str().unwrap()], Duration::from_secs(20));
        ok(&out, "nfsx umount");
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(20), "nfsx mount did not exit: {}", self.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!mounted(&self.dir));
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if mounted(&self.dir) {
            let _ = Command::new("fusermount3").arg("-u").arg("-z").arg(&self.dir).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn sh(cmd: &str, args: &[&str]) -> String {
    ok(&run(cmd, args, Duration::from_secs(300)), &format!("{cmd} {}", args.join(" ")))
}

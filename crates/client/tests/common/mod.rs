//! Checks shared by the tests against each server, and the nfsx server
//! in process.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use client::{Client, OpenOptions};

pub fn create() -> OpenOptions {
    OpenOptions { write: true, create: true, truncate: true, ..Default::default() }
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8).collect()
}

/// Writes `data` in 8 KiB calls (the Lever & Honeyman pattern) and closes.
pub async fn write_file(c: &Client, path: &str, data: &[u8]) {
    let mut f = c.open(path, create()).await.unwrap();
    for (i, chunk) in data.chunks(8192).enumerate() {
        f.write((i * 8192) as u64, chunk).await.unwrap();
    }
    f.close().await.unwrap();
}

/// Reads a whole file in 64 KiB calls.
pub async fn read_file(c: &Client, path: &str) -> Vec<u8> {
    read_file_in(c, path, 65536).await
}

/// Reads a whole file in calls of `chunk` bytes.
pub async fn read_file_in(c: &Client, path: &str, chunk: usize) -> Vec<u8> {
    let mut f = c.open(path, OpenOptions { read: true, ..Default::default() }).await.unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        let n = f.read(out.len() as u64, &mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    f.close().await.unwrap();
    out
}

/// Creates, lists, stats, renames and removes under `dir`.
pub async fn metadata_round(c: &Client, dir: &str) {
    c.mkdir(dir).await.unwrap();
    c.mkdir(&format!("{dir}/e")).await.unwrap();
    for i in 0..50 {
        write_file(c, &format!("{dir}/f{i}"), b"x").await;
    }
    let names: Vec<String> = c.readdir(dir).await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names.len(), 51, "{names:?}");
    assert!(names.iter().any(|n| n == "e"));
    assert_eq!(c.stat(&format!("{dir}/f3")).await.unwrap().size, 1);
    c.rename(&format!("{dir}/f3"), &format!("{dir}/e/moved")).await.unwrap();
    assert!(c.stat(&format!("{dir}/f3")).await.is_err());
    assert_eq!(c.stat(&format!("{dir}/e/moved")).await.unwrap().size, 1);
    c.remove(&format!("{dir}/e/moved")).await.unwrap();
    c.rmdir(&format!("{dir}/e")).await.unwrap();
    let err = c.rmdir(dir).await.unwrap_err();
    assert!(err.to_string().contains("NOTEMPTY"), "{err}");
    for i in (0..50).filter(|i| *i != 3) {
        c.remove(&format!("{dir}/f{i}")).await.unwrap();
    }
    c.rmdir(dir).await.unwrap();
}

/// An nfsx server on a runtime of its own, exporting a temporary directory.
pub struct Srv {
    /// The server runs on a runtime of its own, so dropping that runtime
    /// is a server dying: every task and socket gone at once.
    pub rt: Option<tokio::runtime::Runtime>,
    pub addr: std::net::SocketAddr,
    pub dir: tempfile::TempDir,
    _state: tempfile::TempDir,
    versions: Vec<server_core::NfsVersion>,
    /// Applied to the server's settings at every start.
    tune: fn(&mut server::Settings),
}

impl Drop for Srv {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Srv {
    pub async fn start() -> Srv {
        Self::start_offering(&server_core::NfsVersion::ALL).await
    }

    /// A server offering only `versions` of NFS.
    pub async fn start_offering(versions: &[server_core::NfsVersion]) -> Srv {
        Self::start_tuned(versions, |_| {}).await
    }

    /// A server offering `versions`, its settings changed by `tune`.
    pub async fn start_tuned(versions: &[server_core::NfsVersion], tune: fn(&mut server::Settings)) -> Srv {
        let dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let listen = "127.0.0.1:0".parse().unwrap();
        let (rt, addr) = Self::try_run(dir.path(), state.path(), listen, versions, tune).await.unwrap();
        Srv { rt: Some(rt), addr, dir, _state: state, versions: versions.to_vec(), tune }
    }

    async fn try_run(
        dir: &std::path::Path,
        state: &std::path::Path,
        listen: std::net::SocketAddr,
        versions: &[server_core::NfsVersion],
        tune: fn(&mut server::Settings),
    ) -> Result<(tokio::runtime::Runtime, std::net::SocketAddr), String> {
        let mut settings = server::Settings { listen, portmap_port: Some(0), ..Default::default() };
        settings.core.versions = versions.to_vec();
        settings.state_dir = Some(state.to_path_buf());
        // A restarted server's grace period, short enough for a test.
        settings.core.nfs4.grace_secs = 3;
        settings.core.nfs4.lease_secs = 3;
        tune(&mut settings);
        let cfg = server::ServeConfig {
            dir: Some(dir.to_path_buf()),
            backend: server::Backend::Local,
            exports_file: None,
            settings,
        };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        match rt.spawn(server::Server::start(cfg)).await.unwrap() {
            Ok(server) => Ok((rt, server.local_addr)),
            Err(e) => {
                rt.shutdown_background();
                Err(e.to_string())
            }
        }
    }

    /// The server dies (all its tasks and sockets at once) and starts
    /// again on the same port with the same export and state directory:
    /// a reboot, as clients see it.
    pub async fn restart(&mut self) {
        self.kill();
        // The dead server's runtime lets go of its port and its state
        // directory's lock in the background: try until it has.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let (rt, addr) = loop {
            match Self::try_run(self.dir.path(), self._state.path(), self.addr, &self.versions, self.tune).await {
                Ok(started) => break started,
                Err(e) if std::time::Instant::now() < give_up => {
                    let _ = e;
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                Err(e) => panic!("the server did not start again: {e}"),
            }
        };
        self.rt = Some(rt);
        self.addr = addr;
    }

    pub fn kill(&mut self) {
        self.rt.take().unwrap().shutdown_background();
    }

    /// The export's URL without a version: NFSv4.1 where offered.
    pub fn url(&self) -> String {
        format!("nfs://127.0.0.1:{}{}", self.addr.port(), self.dir.path().display())
    }

    /// The export over NFSv3.
    pub fn url_v3(&self) -> String {
        format!("{}?version=3", self.url())
    }

    pub fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }
}

/// Two clients of one server lock the file `locked`: a write lock held by
/// one is in the other's way (for a test, a try and a read lock alike), a
/// range beside it is free, and a waiter gets the lock once it is
/// released, seeing what was written under it.
pub async fn locks_exclude_other_clients(a: &Client, b: &Client) {
    let mut fa = a.open("locked", OpenOptions::read_write()).await.unwrap();
    let mut fb = b.open("locked", OpenOptions::read_write()).await.unwrap();
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None);
    // Another client: the write lock is in its way, for a test, a try and
    // a read lock alike; a range beside it is free.
    let c = fb.test_lock(7, 50, 10, false).await.unwrap().expect("conflict");
    assert_eq!((c.offset, c.length, c.write), (0, 100, true));
    assert!(fb.lock(7, 0, 1, false, false).await.unwrap().is_some());
    assert_eq!(fb.lock(7, 100, 10, true, false).await.unwrap(), None);
    // A waiter gets the lock once it is released.
    let waiter = tokio::spawn(async move {
        let t = Instant::now();
        let r = fb.lock(7, 0, 100, true, true).await.unwrap();
        (r, t.elapsed(), fb)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    fa.write(0, b"A").await.unwrap();
    fa.unlock(1, 0, 100).await.unwrap();
    let (r, waited, mut fb) = tokio::time::timeout(Duration::from_secs(10), waiter).await.unwrap().unwrap();
    assert_eq!(r, None);
    assert!(waited >= Duration::from_millis(50));
    // What A wrote under its lock is on the server when B holds it.
    let mut buf = [0u8; 1];
    fb.read(0, &mut buf).await.unwrap();
    assert_eq!(&buf, b"A");
    fb.unlock(7, 0, u64::MAX).await.unwrap();
    fb.close().await.unwrap();
    fa.close().await.unwrap();
}

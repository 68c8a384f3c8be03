//! `nfsx mount`: real programs on a FUSE mount of the nfsx server (tar,
//! diff, rm, coreutils), a random-operation exerciser in the style of fsx
//! comparing a file on the mount with a copy in memory, and a server that
//! vanishes under the mount.
//!
//! Needs /dev/fuse and fusermount3 (Debian fuse3, installed by
//! scripts/test.sh).

mod support;

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use support::*;

/// A running `nfsx mount`, unmounted and stopped on drop.
struct Mounted {
    child: Child,
    dir: PathBuf,
    log: PathBuf,
    _tmp: tempfile::TempDir,
}

fn mounted(dir: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let dir = dir.to_str().unwrap();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(dir))
}

impl Mounted {
    fn new(srv: &TestServer, client_config: &str) -> Mounted {
        Mounted::with_args(srv, client_config, &[])
    }

    fn with_args(srv: &TestServer, client_config: &str, extra: &[&str]) -> Mounted {
        Mounted::with_query(srv, "?version=3", client_config, extra)
    }

    /// A mount of `srv` with `query` after the URL's path (`?version=4.1`).
    fn with_query(srv: &TestServer, query: &str, client_config: &str, extra: &[&str]) -> Mounted {
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

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn umount(&mut self) {
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

fn sh(cmd: &str, args: &[&str]) -> String {
    ok(&run(cmd, args, Duration::from_secs(300)), &format!("{cmd} {}", args.join(" ")))
}

/// A source tree through the mount: extracted by tar, compared by diff on
/// the mount and on the server's side, then removed by rm -rf.
#[test]
fn tar_diff_rm_through_the_mount() {
    tar_diff_rm("");
}

#[test]
fn tar_diff_rm_through_an_nfsv41_mount() {
    tar_diff_rm("?version=4.1");
}

fn tar_diff_rm(query: &str) {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, query, "", &[]);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tar = m._tmp.path().join("src.tar");
    sh("tar", &["-C", src.to_str().unwrap(), "-cf", tar.to_str().unwrap(), "server-core", "vfs", "proto"]);
    let mnt = m.dir.to_str().unwrap().to_string();
    sh("tar", &["-C", &mnt, "-xf", tar.to_str().unwrap()]);
    for d in ["server-core", "vfs", "proto"] {
        sh("diff", &["-r", src.join(d).to_str().unwrap(), &format!("{mnt}/{d}")]);
        sh("diff", &["-r", src.join(d).to_str().unwrap(), srv.export.join(d).to_str().unwrap()]);
    }
    // Names, links and metadata as the coreutils see them.
    sh("ln", &["-s", "vfs/Cargo.toml", &format!("{mnt}/link")]);
    assert_eq!(sh("readlink", &[&format!("{mnt}/link")]).trim(), "vfs/Cargo.toml");
    sh("ln", &[&format!("{mnt}/vfs/Cargo.toml"), &format!("{mnt}/hard")]);
    assert_eq!(sh("stat", &["-c", "%h", &format!("{mnt}/hard")]).trim(), "2");
    sh("chmod", &["600", &format!("{mnt}/hard")]);
    sh("touch", &["-d", "2020-01-02 03:04:05", &format!("{mnt}/hard")]);
    assert_eq!(
        sh("stat", &["-c", "%a %Y", srv.export.join("vfs/Cargo.toml").to_str().unwrap()]).trim(),
        "600 1577934245"
    );
    sh("mv", &[&format!("{mnt}/hard"), &format!("{mnt}/proto/moved")]);
    assert!(srv.export.join("proto/moved").exists());
    sh("mkfifo", &[&format!("{mnt}/fifo")]);
    assert!(sh("stat", &["-c", "%F", srv.export.join("fifo").to_str().unwrap()]).contains("fifo"));
    let df = sh("df", &["-P", &mnt]);
    assert!(df.lines().count() == 2, "df: {df}");
    sh("rm", &["-rf", &format!("{mnt}/server-core"), &format!("{mnt}/vfs"), &format!("{mnt}/proto")]);
    sh("rm", &[&format!("{mnt}/link"), &format!("{mnt}/fifo")]);
    assert_eq!(std::fs::read_dir(&srv.export).unwrap().count(), 0, "left on the server");
    m.umount();
}

/// Random writes, truncations, reads, fsyncs and reopens of one file on
/// the mount, each checked against a copy kept in memory (fsx's method).
#[test]
fn random_operations_match_a_local_copy() {
    random_operations("");
}

#[test]
fn random_operations_match_a_local_copy_over_nfsv41() {
    random_operations("?version=4.1");
}

fn random_operations(query: &str) {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, query, "", &[]);
    let path = m.dir.join("fsx.bin");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x6e667378);
    let mut model: Vec<u8> = Vec::new();
    let open = || std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).unwrap();
    let mut f = open();
    const MAX: usize = 1 << 20;
    for step in 0..3000 {
        match rng.gen_range(0..100) {
            0..=44 => {
                let off = rng.gen_range(0..MAX);
                let len = rng.gen_range(1..64 * 1024).min(MAX - off);
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                f.seek(SeekFrom::Start(off as u64)).unwrap();
                f.write_all(&data).unwrap();
                if model.len() < off + len {
                    model.resize(off + len, 0);
                }
                model[off..off + len].copy_from_slice(&data);
            }
            45..=79 => {
                let off = rng.gen_range(0..MAX);
                let len = rng.gen_range(1..128 * 1024);
                let mut got = vec![0u8; len];
                f.seek(SeekFrom::Start(off as u64)).unwrap();
                let mut n = 0;
                while n < len {
                    let r = f.read(&mut got[n..]).unwrap();
                    if r == 0 {
                        break;
                    }
                    n += r;
                }
                let want = model.get(off..(off + len).min(model.len())).unwrap_or(&[]);
                assert_eq!(&got[..n], want, "step {step}: read {len} at {off}");
            }
            80..=87 => {
                let size = rng.gen_range(0..MAX);
                f.set_len(size as u64).unwrap();
                model.resize(size, 0);
            }
            88..=93 => f.sync_all().unwrap(),
            94..=97 => {
                drop(f);
                f = open();
            }
            _ => assert_eq!(f.metadata().unwrap().len() as usize, model.len(), "step {step}: size"),
        }
    }
    f.sync_all().unwrap();
    drop(f);
    assert_eq!(std::fs::read(&path).unwrap(), model, "whole file through the mount");
    assert_eq!(std::fs::read(srv.export.join("fsx.bin")).unwrap(), model, "whole file on the server");
    m.umount();
}

/// A server that vanishes makes calls fail with EIO (after the client's
/// reconnect timeout) instead of hanging, and the mount still unmounts.
#[test]
fn a_vanished_server_gives_eio_and_the_mount_unmounts() {
    let mut srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::new(&srv, "reconnect_timeout_ms = 1000\n");
    std::fs::write(m.dir.join("f"), b"x").unwrap();
    srv.kill9();
    let start = Instant::now();
    let err = std::fs::metadata(m.dir.join("other")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
    m.umount();
}

/// With --hard, a call to a server that went away waits for it, and
/// completes with the right answer once the server is back; a busy hard
/// mount still unmounts (lazily).
#[test]
fn a_hard_mount_waits_for_its_server_to_return() {
    let mut srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_args(&srv, "", &["--hard"]);
    std::fs::write(m.dir.join("f"), b"before").unwrap();
    srv.kill9();
    let path = m.dir.join("g");
    let waiter = std::thread::spawn(move || std::fs::metadata(path).map(|_| ()).map_err(|e| e.raw_os_error()));
    std::thread::sleep(Duration::from_secs(2));
    assert!(!waiter.is_finished(), "a hard mount's call gave up while the server was down");
    srv.restart();
    assert_eq!(waiter.join().unwrap(), Err(Some(libc::ENOENT)), "answered by the restarted server");
    assert_eq!(std::fs::read(m.dir.join("f")).unwrap(), b"before");
    // A call stuck on a vanished server keeps the mount busy: umount
    // detaches it, and SIGTERM ends the mount, failing the stuck call.
    srv.kill9();
    let stuck = m.dir.join("h");
    let stuck = std::thread::spawn(move || std::fs::metadata(stuck).map(|_| ()).map_err(|e| e.raw_os_error()));
    std::thread::sleep(Duration::from_millis(300));
    ok(&run(env!("CARGO_BIN_EXE_nfsx"), &["umount", m.dir.to_str().unwrap()], Duration::from_secs(20)), "nfsx umount");
    assert!(!mounted(&m.dir), "still mounted after nfsx umount");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(m.child.id() as i32, libc::SIGTERM) };
    let start = Instant::now();
    while m.child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(15), "nfsx mount did not exit: {}", m.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(stuck.join().unwrap().is_err(), "the stuck call must fail once the mount is gone");
}

/// Close-to-open: a file changed by another client (here, on the server's
/// disk) reads whole at the next open, even though the mount had cached
/// its old size and contents.
#[test]
fn an_open_sees_what_another_client_wrote() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::new(&srv, "");
    let f = m.dir.join("f");
    std::fs::write(&f, b"short").unwrap();
    assert_eq!(std::fs::read(&f).unwrap(), b"short");
    for round in 0..3 {
        let other = format!("written elsewhere, round {round}, longer than before");
        std::fs::write(srv.export.join("f"), &other).unwrap();
        // Past the second granularity of some file systems' times.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(String::from_utf8(std::fs::read(&f).unwrap()).unwrap(), other, "round {round}");
    }
    m.umount();
}

/// The kernel keeps directory listings (no OPENDIR is sent to the mount)
/// but not past a change: one made through the mount shows at once, one
/// made on the server once the directory's attributes are older than
/// --attr-ttl and the client's own attribute cache (`acdirmin`, 30 s by
/// default as in Linux; off here); a listing larger than one READDIRPLUS
/// reply is whole.
#[test]
fn listings_kept_by_the_kernel_see_changes() {
    listings_see_changes(&[]);
}

/// The same with an OPENDIR for each listing (`--opendir`).
#[test]
fn listings_opened_through_the_mount_see_changes() {
    listings_see_changes(&["--opendir"]);
}

fn listings_see_changes(extra: &[&str]) {
    let srv = TestServer::start(ServerOpts::default());
    let args: Vec<&str> = ["--attr-ttl", "100"].iter().chain(extra).copied().collect();
    let mut m = Mounted::with_args(&srv, "[attr_cache]\nactimeo = 0\n", &args);
    let d = m.dir.join("d");
    std::fs::create_dir(&d).unwrap();
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    };
    std::fs::write(d.join("a"), b"1").unwrap();
    assert_eq!(names(&d), ["a"]);
    std::fs::write(d.join("b"), b"2").unwrap();
    assert_eq!(names(&d), ["a", "b"], "a change through the mount");
    assert_eq!(names(&d), ["a", "b"], "listed again from the kernel's copy");
    std::fs::write(srv.export.join("d/c"), b"3").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(names(&d), ["a", "b", "c"], "a change on the server, after the attribute time-out");
    std::fs::remove_file(srv.export.join("d/a")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(names(&d), ["b", "c"]);
    // Several READDIRPLUS pages.
    let big = srv.export.join("big");
    std::fs::create_dir(&big).unwrap();
    let mut want: Vec<String> = (0..3000).map(|i| format!("a-rather-long-file-name-{i:05}")).collect();
    for n in &want {
        std::fs::write(big.join(n), b"").unwrap();
    }
    want.sort();
    assert_eq!(names(&m.dir.join("big")), want);
    assert_eq!(names(&m.dir.join("big")), want);
    m.umount();
}

/// Over NFSv4.1, locks taken through one mount exclude a process on
/// another mount of the same export (as two machines would be): flock(1)
/// and fcntl locks both go to the server as byte-range locks.
#[test]
fn locks_through_one_nfsv41_mount_exclude_another() {
    locks_through_one_mount_exclude_another("?version=4.1");
}

/// The same over NFSv3, where the locks go to the server's lock manager
/// (NLM).
#[test]
fn locks_through_one_nfsv3_mount_exclude_another() {
    locks_through_one_mount_exclude_another("?version=3");
}

fn locks_through_one_mount_exclude_another(query: &str) {
    let srv = TestServer::start(ServerOpts::default());
    let mut a = Mounted::with_query(&srv, query, "", &[]);
    let mut b = Mounted::with_query(&srv, query, "", &[]);
    std::fs::write(a.dir.join("lockfile"), b"x").unwrap();
    let fa = a.dir.join("lockfile");
    let fb = b.dir.join("lockfile");
    // A holds the lock for 2 s in the background.
    let mut holder = Command::new("flock")
        .args([fa.to_str().unwrap(), "-c", "echo held; sleep 2"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "held");
    let tried = Command::new("flock").args(["-n", fb.to_str().unwrap(), "true"]).status().unwrap();
    assert!(!tried.success(), "the lock held through the other mount is seen");
    // Waiting for it works once A lets go (when its flock exits and the
    // kernel releases the lock).
    let start = Instant::now();
    let mut waiter = Command::new("flock").args(["-w", "20", fb.to_str().unwrap(), "true"]).spawn().unwrap();
    let waited = loop {
        if let Some(s) = waiter.try_wait().unwrap() {
            break s;
        }
        // A FUSE lock wait cannot be interrupted: should it never end,
        // the mounts go (lazily) so the test fails instead of hanging.
        if start.elapsed() > Duration::from_secs(30) {
            drop(a);
            drop(b);
            let _ = waiter.wait();
            panic!("the lock was never granted through the other mount");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(waited.success());
    assert!(start.elapsed() >= Duration::from_millis(500), "granted only after the holder let go");
    assert!(holder.wait().unwrap().success());
    a.umount();
    b.umount();
}

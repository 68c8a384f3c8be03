//! `nfsx mount`: real programs on a FUSE mount of the nfsx server (tar,
//! diff, rm, coreutils), a random-operation exerciser in the style of fsx
//! comparing a file on the mount with a copy in memory, and a server that
//! vanishes under the mount.
//!
//! Needs /dev/fuse and fusermount3 (Debian fuse3, installed by
//! scripts/test.sh).

mod support;

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use support::mount::*;
use support::*;

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

// --- NFSv4.2 calls through the mount: copy_file_range, fallocate, lseek
// SEEK_DATA/SEEK_HOLE and user. extended attributes, by real programs and
// syscalls.

fn cstr(p: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap()
}

fn set_xattr(p: &Path, name: &str, value: &[u8], flags: i32) -> Result<(), i32> {
    let name = std::ffi::CString::new(name).unwrap();
    // SAFETY: valid C strings and a buffer of the length given.
    let r = unsafe { libc::setxattr(cstr(p).as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), flags) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_errno())
    }
}

/// getxattr(2) with a buffer of `size` (0: asks for the size only).
fn get_xattr(p: &Path, name: &str, size: usize) -> Result<Vec<u8>, i32> {
    let name = std::ffi::CString::new(name).unwrap();
    let mut buf = vec![0u8; size];
    // SAFETY: valid C strings and a buffer of the length given.
    let r = unsafe { libc::getxattr(cstr(p).as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), size) };
    if r < 0 {
        return Err(last_errno());
    }
    buf.truncate(if size == 0 { 0 } else { r as usize });
    if size == 0 {
        Ok(vec![0; r as usize])
    } else {
        Ok(buf)
    }
}

fn list_xattrs(p: &Path) -> Result<Vec<String>, i32> {
    // SAFETY: a null buffer of length 0 asks for the size.
    let n = unsafe { libc::listxattr(cstr(p).as_ptr(), std::ptr::null_mut(), 0) };
    if n < 0 {
        return Err(last_errno());
    }
    let mut buf = vec![0u8; n as usize];
    // SAFETY: a buffer of the length given.
    let n = unsafe { libc::listxattr(cstr(p).as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(last_errno());
    }
    buf.truncate(n as usize);
    Ok(buf.split(|&b| b == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect())
}

fn remove_xattr(p: &Path, name: &str) -> Result<(), i32> {
    let name = std::ffi::CString::new(name).unwrap();
    // SAFETY: valid C strings.
    let r = unsafe { libc::removexattr(cstr(p).as_ptr(), name.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_errno())
    }
}

/// copy_file_range(2) of all of `from` into `to` (from their starts),
/// looping over short copies; the bytes copied.
fn copy_range(from: &Path, to: &Path) -> Result<u64, i32> {
    use std::os::fd::AsRawFd;
    let src = std::fs::File::open(from).unwrap();
    let dst = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(to).unwrap();
    let mut left = src.metadata().unwrap().len();
    let mut done = 0;
    while left > 0 {
        // SAFETY: two open descriptors; null offsets use their positions.
        let n = unsafe {
            libc::copy_file_range(
                src.as_raw_fd(),
                std::ptr::null_mut(),
                dst.as_raw_fd(),
                std::ptr::null_mut(),
                left as usize,
                0,
            )
        };
        match n {
            n if n < 0 => return Err(last_errno()),
            0 => break,
            n => {
                done += n as u64;
                left -= n as u64;
            }
        }
    }
    dst.sync_all().unwrap();
    Ok(done)
}

fn seek(f: &std::fs::File, offset: i64, whence: i32) -> Result<i64, i32> {
    use std::os::fd::AsRawFd;
    // SAFETY: an open descriptor.
    let r = unsafe { libc::lseek(f.as_raw_fd(), offset, whence) };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r)
    }
}

fn fallocate(f: &std::fs::File, mode: i32, offset: i64, len: i64) -> Result<(), i32> {
    use std::os::fd::AsRawFd;
    // SAFETY: an open descriptor.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, offset, len) };
    if r == 0 {
        Ok(())
    } else {
        Err(last_errno())
    }
}

/// Bytes that differ at every position (a copy shifted by a block shows).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 4096) as u8).collect()
}

/// cp (coreutils, which calls copy_file_range) and copy_file_range itself
/// on an NFSv4.2 mount: the data is copied by the server (COPY), which
/// keeps the source's holes where a copy through read and write would
/// fill them.
#[test]
fn nfsv42_copy_file_range_copies_on_the_server() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, "?version=4.2", "", &[]);
    let data = pattern(6 << 20);
    std::fs::write(m.dir.join("src"), &data).unwrap();
    sh("cp", &[m.dir.join("src").to_str().unwrap(), m.dir.join("by-cp").to_str().unwrap()]);
    assert!(std::fs::read(m.dir.join("by-cp")).unwrap() == data, "cp's copy through the mount");
    assert!(std::fs::read(srv.export.join("by-cp")).unwrap() == data, "cp's copy on the server");
    assert_eq!(copy_range(&m.dir.join("src"), &m.dir.join("by-call")), Ok(data.len() as u64));
    assert!(std::fs::read(srv.export.join("by-call")).unwrap() == data, "copy_file_range's copy on the server");
    // A sparse source: 8 MiB of hole, then 64 KiB of data.
    let sparse = std::fs::File::create(srv.export.join("sparse")).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&sparse, &data[..64 << 10], 8 << 20).unwrap();
    drop(sparse);
    assert_eq!(copy_range(&m.dir.join("sparse"), &m.dir.join("sparse-copy")), Ok((8 << 20) + (64 << 10)));
    let copied = std::fs::metadata(srv.export.join("sparse-copy")).unwrap();
    assert_eq!(copied.len(), (8 << 20) + (64 << 10));
    use std::os::unix::fs::MetadataExt;
    assert!(
        copied.blocks() * 512 < 1 << 20,
        "the hole was kept: copied inside the server ({} blocks)",
        copied.blocks()
    );
    assert_eq!(std::fs::read(m.dir.join("sparse-copy")).unwrap(), std::fs::read(srv.export.join("sparse")).unwrap());
    // Into the middle of a file that is open and was read (its cached
    // pages and readahead must not hide the copy).
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(m.dir.join("by-call")).unwrap();
    let mut head = vec![0u8; 1 << 20];
    f.read_exact(&mut head).unwrap();
    std::fs::write(m.dir.join("small"), vec![0xeeu8; 8192]).unwrap();
    let small = std::fs::File::open(m.dir.join("small")).unwrap();
    use std::os::fd::AsRawFd;
    let (mut off_in, mut off_out) = (0i64, 4096i64);
    // SAFETY: open descriptors and offsets owned here.
    let n = unsafe { libc::copy_file_range(small.as_raw_fd(), &mut off_in, f.as_raw_fd(), &mut off_out, 8192, 0) };
    assert_eq!(n, 8192, "errno {}", last_errno());
    f.seek(SeekFrom::Start(0)).unwrap();
    f.read_exact(&mut head).unwrap();
    assert_eq!(&head[..4096], &data[..4096]);
    assert!(head[4096..12288].iter().all(|&b| b == 0xee), "the copied range reads back");
    assert_eq!(&head[12288..], &data[12288..1 << 20]);
    // Flags are not defined: EINVAL (from the kernel or the mount).
    let (mut off_in, mut off_out) = (0i64, 0i64);
    // SAFETY: as above.
    let n = unsafe { libc::copy_file_range(small.as_raw_fd(), &mut off_in, f.as_raw_fd(), &mut off_out, 10, 1) };
    assert_eq!((n, last_errno()), (-1, libc::EINVAL));
    drop((f, small));
    m.umount();
}

/// fallocate(1) reserves and punches through an NFSv4.2 mount (ALLOCATE,
/// DEALLOCATE); lseek finds the punched hole (SEEK); the modes NFSv4.2
/// has no operation for are EOPNOTSUPP.
#[test]
fn nfsv42_fallocate_and_seek_data_hole() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, "?version=4.2", "", &[]);
    let path = m.dir.join("f");
    let p = path.to_str().unwrap();
    sh("fallocate", &["-l", "4M", p]);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4 << 20, "grown through the mount");
    assert_eq!(std::fs::metadata(srv.export.join("f")).unwrap().len(), 4 << 20, "grown on the server");
    std::fs::write(&path, vec![0xabu8; 4 << 20]).unwrap();
    // Read once so the kernel caches the pages the punch must drop.
    assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0xab));
    sh("fallocate", &["-p", "-o", "0", "-l", "1M", p]);
    let got = std::fs::read(&path).unwrap();
    assert_eq!(got.len(), 4 << 20, "a punch keeps the size");
    assert!(got[..1 << 20].iter().all(|&b| b == 0), "the hole reads as zeros");
    assert!(got[1 << 20..].iter().all(|&b| b == 0xab), "the rest is kept");
    assert_eq!(std::fs::read(srv.export.join("f")).unwrap(), got, "the same on the server");

    let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    assert_eq!(seek(&f, 0, libc::SEEK_HOLE), Ok(0), "the punched start is a hole");
    let data = seek(&f, 0, libc::SEEK_DATA).unwrap();
    assert!(data >= 1 << 20 && data < 4 << 20, "data after the hole, at {data}");
    assert_eq!(seek(&f, 1 << 20, libc::SEEK_HOLE), Ok(4 << 20), "only the hole at the end follows");
    assert_eq!(seek(&f, 4 << 20, libc::SEEK_DATA), Err(libc::ENXIO), "SEEK_DATA at the end");
    assert_eq!(seek(&f, (4 << 20) + 10, libc::SEEK_DATA), Err(libc::ENXIO), "SEEK_DATA past the end");
    assert_eq!(seek(&f, (4 << 20) + 10, libc::SEEK_HOLE), Err(libc::ENXIO), "SEEK_HOLE past the end");
    // The ordinary whences stay the kernel's.
    assert_eq!(seek(&f, 0, libc::SEEK_END), Ok(4 << 20));
    // mode 0 past the end grows the file; what is cached here goes first.
    std::os::unix::fs::FileExt::write_all_at(&f, b"tail", (4 << 20) - 4).unwrap();
    assert_eq!(fallocate(&f, 0, 4 << 20, 1 << 20), Ok(()));
    assert_eq!(f.metadata().unwrap().len(), 5 << 20);
    let mut tail = [0u8; 4];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut tail, (4 << 20) - 4).unwrap();
    assert_eq!(&tail, b"tail");
    for mode in [libc::FALLOC_FL_KEEP_SIZE, libc::FALLOC_FL_ZERO_RANGE, libc::FALLOC_FL_COLLAPSE_RANGE] {
        assert_eq!(fallocate(&f, mode, 0, 4096), Err(libc::EOPNOTSUPP), "mode {mode:#x}");
    }
    drop(f);
    m.umount();
}

/// user. extended attributes through an NFSv4.2 mount (RFC 8276), stored
/// as the host's user. attributes; other namespaces are answered by the
/// mount itself.
#[test]
fn nfsv42_user_xattrs() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, "?version=4.2", "", &[]);
    let f = m.dir.join("f");
    std::fs::write(&f, b"x").unwrap();
    assert_eq!(list_xattrs(&f), Ok(vec![]));
    assert_eq!(get_xattr(&f, "user.x", 100), Err(libc::ENODATA));
    assert_eq!(set_xattr(&f, "user.x", b"hello", 0), Ok(()));
    assert_eq!(get_xattr(&f, "user.x", 0).map(|v| v.len()), Ok(5), "size 0 asks the size");
    assert_eq!(get_xattr(&f, "user.x", 2), Err(libc::ERANGE));
    assert_eq!(get_xattr(&f, "user.x", 100), Ok(b"hello".to_vec()));
    assert_eq!(get_xattr(&srv.export.join("f"), "user.x", 100), Ok(b"hello".to_vec()), "on the server's disk");
    assert_eq!(set_xattr(&f, "user.x", b"again", libc::XATTR_CREATE), Err(libc::EEXIST));
    assert_eq!(set_xattr(&f, "user.y", b"", libc::XATTR_REPLACE), Err(libc::ENODATA));
    assert_eq!(set_xattr(&f, "user.x", b"replaced", libc::XATTR_REPLACE), Ok(()));
    assert_eq!(set_xattr(&f, "user.y", b"", libc::XATTR_CREATE), Ok(()));
    let mut names = list_xattrs(&f).unwrap();
    names.sort();
    assert_eq!(names, ["user.x", "user.y"]);
    assert_eq!(get_xattr(&f, "user.x", 100), Ok(b"replaced".to_vec()));
    assert_eq!(get_xattr(&f, "user.y", 100), Ok(vec![]));
    // Set on the server's disk, seen through the mount.
    assert_eq!(set_xattr(&srv.export.join("f"), "user.z", b"host", 0), Ok(()));
    assert_eq!(get_xattr(&f, "user.z", 100), Ok(b"host".to_vec()));
    assert_eq!(remove_xattr(&f, "user.x"), Ok(()));
    assert_eq!(remove_xattr(&f, "user.x"), Err(libc::ENODATA));
    assert_eq!(get_xattr(&f, "user.x", 100), Err(libc::ENODATA));
    assert_eq!(get_xattr(&srv.export.join("f"), "user.x", 100), Err(libc::ENODATA));
    // Namespaces the server does not store.
    assert_eq!(get_xattr(&f, "security.capability", 100), Err(libc::ENODATA));
    assert_eq!(get_xattr(&f, "trusted.t", 100), Err(libc::ENODATA));
    assert_eq!(set_xattr(&f, "trusted.t", b"v", 0), Err(libc::EOPNOTSUPP));
    assert_eq!(remove_xattr(&f, "trusted.t"), Err(libc::EOPNOTSUPP));
    // Directories have them too.
    let d = m.dir.join("d");
    std::fs::create_dir(&d).unwrap();
    assert_eq!(set_xattr(&d, "user.dir", b"1", 0), Ok(()));
    assert_eq!(list_xattrs(&d), Ok(vec!["user.dir".to_string()]));
    // A write (the kernel asks for security.capability) still works.
    std::fs::write(&f, b"written after").unwrap();
    assert_eq!(std::fs::read(srv.export.join("f")).unwrap(), b"written after");
    m.umount();
}

/// Without NFSv4.2 the kernel falls back: cp and copy_file_range copy
/// through read and write, lseek sees data to the end, and fallocate and
/// the xattr calls are not supported.
#[test]
fn nfsv41_mount_falls_back_without_v42_calls() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, "?version=4.1", "", &[]);
    let data = pattern(3 << 20);
    std::fs::write(m.dir.join("src"), &data).unwrap();
    sh("cp", &[m.dir.join("src").to_str().unwrap(), m.dir.join("by-cp").to_str().unwrap()]);
    assert!(std::fs::read(srv.export.join("by-cp")).unwrap() == data, "cp's copy on the server");
    for _ in 0..2 {
        // Twice: the second after the kernel stopped asking the mount.
        assert_eq!(copy_range(&m.dir.join("src"), &m.dir.join("by-call")), Ok(data.len() as u64));
        assert!(std::fs::read(srv.export.join("by-call")).unwrap() == data);
    }
    // The kernel's own copy fills holes (what shows that the NFSv4.2
    // mount's copies were made by the server).
    let sparse = std::fs::File::create(srv.export.join("sparse")).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&sparse, &data[..64 << 10], 8 << 20).unwrap();
    drop(sparse);
    assert_eq!(copy_range(&m.dir.join("sparse"), &m.dir.join("sparse-copy")), Ok((8 << 20) + (64 << 10)));
    use std::os::unix::fs::MetadataExt;
    assert!(std::fs::metadata(srv.export.join("sparse-copy")).unwrap().blocks() * 512 >= 8 << 20);
    let f = m.dir.join("src");
    assert_eq!(set_xattr(&f, "user.x", b"v", 0), Err(libc::EOPNOTSUPP));
    assert_eq!(get_xattr(&f, "user.x", 10), Err(libc::EOPNOTSUPP));
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&f).unwrap();
    assert_eq!(fallocate(&file, 0, 0, 8 << 20), Err(libc::EOPNOTSUPP));
    assert_eq!(seek(&file, 10, libc::SEEK_DATA), Ok(10));
    assert_eq!(seek(&file, 10, libc::SEEK_HOLE), Ok(3 << 20));
    drop(file);
    m.umount();
}

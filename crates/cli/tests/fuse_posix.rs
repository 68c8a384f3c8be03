//! The POSIX promises programs rely on, through `nfsx mount` over NFSv3
//! and NFSv4.1, each checked the way a program meets it: a shell line run
//! in the mount.
//! - An open file stays readable after its name is removed or renamed
//!   over (silly rename, or nothing to hide where the NFSv4.1 server
//!   keeps the file for its open), `fstat` of it says `st_nlink` 0, and
//!   no hidden name is left once it is closed.
//! - Every listing has `.` and `..` (NFSv4 READDIR returns neither).
//! - Removing a name refreshes the link count of the object it named,
//!   even when the client had forgotten the name.
//! - NFSv4 times keep their 64-bit seconds; NFSv3 refuses what its 32-bit
//!   unsigned seconds cannot hold instead of clamping it.
//! - `nfsx umount` works as root without fusermount3.
//!
//! Needs /dev/fuse and fusermount3 (Debian fuse3, installed by
//! scripts/test.sh).

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::mount::*;
use support::*;

const V3: &str = "?version=3";
const V41: &str = "?version=4.1";

/// Runs `script` with `sh -c` in `dir`; returns (success, stdout, stderr).
fn shell_in(dir: &Path, script: &str) -> (bool, String, String) {
    let out = Command::new("sh").arg("-c").arg(script).current_dir(dir).output().expect("run sh");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `script`'s standard output; the test fails if it fails.
fn shell_ok(dir: &Path, script: &str) -> String {
    let (ok, out, err) = shell_in(dir, script);
    assert!(ok, "`{script}` failed: {err}{out}");
    out
}

/// The names in `dir` (as the server sees them) that start with `.nfs`.
fn hidden_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".nfs"))
        .collect()
}

/// Waits until the hidden names of closed files are gone from `dir`: the
/// kernel sends RELEASE after close(2) returns.
fn no_hidden_names_left(dir: &Path) {
    let start = Instant::now();
    loop {
        let left = hidden_names(dir);
        if left.is_empty() {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "hidden names left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn open_file_survives_unlink(query: &str) {
    let srv = TestServer::start(ServerOpts::default());
    let m = Mounted::with_query(&srv, query, "", &[]);
    let d = &m.dir;
    assert_eq!(shell_ok(d, "echo hello >f; exec 3<f; rm f; cat <&3"), "hello\n");
    assert_eq!(shell_ok(d, "echo x >a; echo y >b; exec 3<b; mv a b; cat <&3; cat b"), "y\nx\n");
    // Written through a descriptor whose name is gone, read back through it.
    let script = "exec 3<>w; rm w; echo kept >&3; cat /proc/self/fd/3";
    assert_eq!(shell_ok(d, script), "kept\n");
    // pjdfstest unlink/14.t: fstat of an open, removed file says no links.
    let py = "import os\n\
              fd = os.open('n', os.O_CREAT | os.O_RDWR, 0o644)\n\
              os.write(fd, b'data')\n\
              os.unlink('n')\n\
              print(os.fstat(fd).st_nlink, os.pread(fd, 4, 0).decode(), os.path.exists('n'))\n";
    assert_eq!(shell_ok(d, &format!("python3 -c \"{py}\"")), "0 data False\n");
    // The names an `ls` shows are the program's: none left, on the mount
    // or on the server, once the files are closed.
    no_hidden_names_left(&srv.export);
    assert_eq!(shell_ok(d, "ls -A"), "b\n");
}

#[test]
fn an_open_file_survives_unlink_and_rename_over_nfsv3() {
    open_file_survives_unlink(V3);
}

#[test]
fn an_open_file_survives_unlink_and_rename_over_nfsv41() {
    open_file_survives_unlink(V41);
}

/// Against nfsx over NFSv4.1, the server promises at OPEN to keep a file
/// removed while open until it is closed (OPEN4_RESULT_PRESERVE_UNLINKED):
/// the mount removes it for real, so no hidden name shows even while the
/// file is open, and the file's blocks go at the last close.
fn server_keeps_a_removed_open_file(client_config: &str) {
    let srv = TestServer::start(ServerOpts::default());
    let m = Mounted::with_query(&srv, V41, client_config, &[]);
    let py = format!(
        "import os\n\
         fd = os.open('n', os.O_CREAT | os.O_RDWR, 0o644)\n\
         os.write(fd, b'data')\n\
         os.unlink('n')\n\
         os.pwrite(fd, b'more', 4)\n\
         st = os.fstat(fd)\n\
         print(st.st_nlink, st.st_size, os.pread(fd, 8, 0).decode())\n\
         print(sorted(os.listdir('.')), sorted(os.listdir('{}')))\n\
         os.close(fd)\n",
        srv.export.display()
    );
    assert_eq!(shell_ok(&m.dir, &format!("python3 -c \"{py}\"")), "0 8 datamore\n[] []\n");
    // Renamed over while open: the same.
    assert_eq!(shell_ok(&m.dir, "echo x >a; echo y >b; exec 3<b; mv a b; ls -A; cat <&3"), "b\ny\n");
    assert!(hidden_names(&srv.export).is_empty());
}

#[test]
fn the_server_keeps_a_removed_open_file_over_nfsv41() {
    server_keeps_a_removed_open_file("[v41]\ndelegations = false\n");
}

#[test]
fn the_server_keeps_a_removed_open_file_under_a_delegation_over_nfsv41() {
    server_keeps_a_removed_open_file("");
}

/// A file still open when the mount goes (SIGTERM): its hidden name goes
/// with it. (NFSv3: an NFSv4.1 mount of nfsx hides nothing, see above.)
#[test]
fn unmount_removes_hidden_names() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, V3, "", &[]);
    let f = m.dir.join("f");
    std::fs::write(&f, "hi").unwrap();
    // Holds the file open from outside the mount's tree, so nothing but
    // the open file keeps the mount busy.
    let script = format!("exec 3<'{0}'; rm '{0}'; sleep 60", f.display());
    let mut holder = Command::new("sh").arg("-c").arg(script).current_dir("/").spawn().unwrap();
    let start = Instant::now();
    while hidden_names(&srv.export).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10), "the open file was not hidden");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = m.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let start = Instant::now();
    while m.child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(20), "nfsx mount did not exit: {}", m.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = hidden_names(&srv.export);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(left.is_empty(), "{left:?}");
}

fn dot_and_dotdot(query: &str) {
    let srv = TestServer::start(ServerOpts::default());
    let m = Mounted::with_query(&srv, query, "", &[]);
    assert_eq!(shell_ok(&m.dir, "mkdir e; ls -a e"), ".\n..\n");
    assert_eq!(shell_ok(&m.dir, "touch e/x; ls -a e"), ".\n..\nx\n");
    // `..` names the parent: the same inode as the mount's root.
    assert_eq!(shell_ok(&m.dir, "[ \"$(stat -c %i e/..)\" = \"$(stat -c %i .)\" ] && echo same"), "same\n");
    assert_eq!(shell_ok(&m.dir, "ls -a | head -2"), ".\n..\n");
}

#[test]
fn listings_have_dot_and_dotdot_over_nfsv3() {
    dot_and_dotdot(V3);
}

#[test]
fn listings_have_dot_and_dotdot_over_nfsv41() {
    dot_and_dotdot(V41);
}

fn link_count_after_remove(query: &str) {
    let srv = TestServer::start(ServerOpts::default());
    // A long attribute timeout: only invalidation can make the count right.
    let m = Mounted::with_query(&srv, query, "[attr_cache]\nactimeo = 60000\n", &["--attr-ttl", "60000"]);
    let lstat = "python3 -c 'import os;print(os.lstat(\"b\").st_nlink)'";
    assert_eq!(shell_ok(&m.dir, &format!("touch a; ln a b; chmod 600 b; rm a; {lstat}")), "1\n");
    assert_eq!(
        shell_ok(&m.dir, &format!("ln b c; {lstat}; mv b d; python3 -c 'import os;print(os.lstat(\"c\").st_nlink)'")),
        "2\n2\n"
    );
    assert_eq!(shell_ok(&m.dir, "touch e; mv e c; python3 -c 'import os;print(os.lstat(\"d\").st_nlink)'"), "1\n");
}

#[test]
fn link_counts_follow_remove_rename_and_link_over_nfsv3() {
    link_count_after_remove(V3);
}

#[test]
fn link_counts_follow_remove_rename_and_link_over_nfsv41() {
    link_count_after_remove(V41);
}

#[test]
fn nfsv41_times_keep_64_bit_seconds() {
    let srv = TestServer::start(ServerOpts::default());
    let m = Mounted::with_query(&srv, V41, "", &[]);
    assert_eq!(shell_ok(&m.dir, "touch -d @4294967296 t; stat -c %Y t"), "4294967296\n");
    assert_eq!(shell_ok(&m.dir, "touch -d @-315619200 u; stat -c %Y u"), "-315619200\n");
    // On the server too, not only in the client's cache.
    let meta = std::fs::metadata(srv.export.join("u")).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::mtime(&meta), -315619200);
}

#[test]
fn nfsv3_refuses_times_it_cannot_hold() {
    let srv = TestServer::start(ServerOpts::default());
    let m = Mounted::with_query(&srv, V3, "", &[]);
    let (ok, _, err) = shell_in(&m.dir, "touch -d @4294967296 t");
    assert!(!ok, "a time past 2106 was accepted over NFSv3");
    assert!(err.contains("Value too large") || err.contains("Invalid argument"), "{err}");
    let (ok, _, _) = shell_in(&m.dir, "touch -d @-1 t2");
    assert!(!ok, "a time before 1970 was accepted over NFSv3");
    // The time it can hold still goes through.
    assert_eq!(shell_ok(&m.dir, "touch -d @4294967295 t3; stat -c %Y t3"), "4294967295\n");
}

/// As root (as the suite runs), `nfsx umount` needs no fusermount3: it
/// unmounts by syscall.
#[test]
fn umount_as_root_without_fusermount3() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, V3, "", &[]);
    let out = Command::new(env!("CARGO_BIN_EXE_nfsx"))
        .args(["umount", m.dir.to_str().unwrap()])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(out.status.success(), "nfsx umount: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!mounted(&m.dir));
    let start = Instant::now();
    while m.child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(20), "nfsx mount did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// cthon04 special/bigfile: ftruncate(2) of a file reopened and first read
/// (so the mount's open on the server is for reading) changes the size
/// under an open that may write, not under the read-only one the server
/// refuses (NFS4ERR_OPENMODE). Without delegations, so that no write
/// delegation hides it.
#[test]
fn ftruncate_after_a_read_through_a_reopen_over_nfsv41() {
    let srv = TestServer::start(ServerOpts::default());
    let m = Mounted::with_query(&srv, V41, "[v41]\ndelegations = false\n", &[]);
    let py = "import os\n\
              fd = os.open('big', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)\n\
              os.write(fd, b'x' * 100000)\n\
              os.fsync(fd)\n\
              os.close(fd)\n\
              fd = os.open('big', os.O_RDWR)\n\
              os.read(fd, 10)\n\
              os.ftruncate(fd, 0)\n\
              os.ftruncate(fd, 4096)\n\
              print(os.fstat(fd).st_size)\n";
    assert_eq!(shell_ok(&m.dir, &format!("python3 -c \"{py}\"")), "4096\n");
}

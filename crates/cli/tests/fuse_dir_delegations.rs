//! A mount over NFSv4.1 that lets the kernel keep names and attributes
//! for ten minutes (`--attr-ttl`), and the client its own caches as long,
//! still shows changes made on the server's host within a second or two:
//! the server notifies the client of them under a directory delegation
//! (CB_NOTIFY), and the client drops the kernel's entries and attributes.
//!
//! Needs /dev/fuse and fusermount3 (Debian fuse3, installed by
//! scripts/test.sh).

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use support::mount::*;
use support::*;

const TRUSTING: &str = "[attr_cache]\nacregmin = 600\nacregmax = 600\nacdirmin = 600\nacdirmax = 600\n";

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

/// Waits at most two seconds for `cond`.
fn soon(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(2), "{what}: not seen within 2 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_mount_trusting_its_caches_for_minutes_sees_notified_changes() {
    let srv = TestServer::start(ServerOpts::default());
    let mut m = Mounted::with_query(&srv, "?version=4.1", TRUSTING, &["--attr-ttl", "600000"]);
    let d = m.dir.join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("a"), b"1").unwrap();
    // Walked and listed: the client asks for a delegation, which the
    // server grants once the client's back channel answered its probe.
    let start = Instant::now();
    loop {
        assert_eq!(names(&d), ["a"]);
        std::fs::write(srv.export.join("d/probe"), b"").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        if names(&d).contains(&"probe".to_string()) {
            break;
        }
        std::fs::remove_file(srv.export.join("d/probe")).unwrap();
        assert!(start.elapsed() < Duration::from_secs(10), "changes on the host never showed: {}", m.log_text());
        // A new name in the kernel's eyes, so the mount is asked.
        let _ = std::fs::metadata(d.join(format!("x{}", start.elapsed().as_millis())));
    }
    std::fs::remove_file(srv.export.join("d/probe")).unwrap();
    soon("remove", || names(&d) == ["a"]);
    std::fs::write(srv.export.join("d/c"), b"333").unwrap();
    soon("create", || names(&d) == ["a", "c"]);
    assert_eq!(std::fs::metadata(d.join("c")).unwrap().len(), 3);
    std::fs::rename(srv.export.join("d/c"), srv.export.join("d/cc")).unwrap();
    soon("rename", || names(&d) == ["a", "cc"]);
    std::fs::set_permissions(srv.export.join("d/cc"), std::fs::Permissions::from_mode(0o600)).unwrap();
    soon("chmod", || std::fs::metadata(d.join("cc")).unwrap().permissions().mode() & 0o777 == 0o600);
    std::fs::write(srv.export.join("d/cc"), vec![5u8; 7000]).unwrap();
    soon("write", || std::fs::metadata(d.join("cc")).unwrap().len() == 7000);
    m.umount();
}

//! LocalFs's change events of directories (inotify): what the server's
//! own changes and the host's report, in order, for the watched
//! directory only.

use std::os::unix::fs::PermissionsExt;

use bytes::Bytes;
use vfs::*;

fn scratch() -> (tempfile::TempDir, LocalFs) {
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(base.path().join("export/d")).unwrap();
    std::fs::create_dir_all(base.path().join("export/other")).unwrap();
    let fs =
        LocalFs::open(&base.path().join("export"), &base.path().join("state"), LocalFsSettings::default()).unwrap();
    (base, fs)
}

fn name(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[test]
fn changes_by_the_server_and_the_host_are_reported_in_order() {
    let (base, fs) = scratch();
    let events = fs.dir_events().expect("inotify");
    let (d, _) = fs.lookup(fs.root(), b"d").unwrap();
    let (other, _) = fs.lookup(fs.root(), b"other").unwrap();
    let w = events.watch(d).unwrap();
    assert_eq!(events.watch(d).unwrap(), w, "one directory, one watch");
    assert!(events.take(100).is_empty());

    let owner = Owner { uid: 0, gid: 0 };
    let (f, _) = fs.create(d, b"a", &CreateHow::Guarded(SetAttrs::default()), owner).unwrap();
    fs.write(f, 0, b"data", Stability::Unstable).unwrap();
    fs.rename(d, b"a", d, b"b").unwrap();
    fs.rename(d, b"b", other, b"c").unwrap();
    // The host, behind the server's back.
    let host = base.path().join("export/d");
    std::fs::write(host.join("h"), b"x").unwrap();
    std::fs::set_permissions(host.join("h"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(host.join("h")).unwrap();
    std::fs::write(base.path().join("export/other/unwatched"), b"x").unwrap();

    let got = events.take(100);
    let kinds: Vec<String> = got
        .iter()
        .map(|e| match e {
            DirEvent::Added { name, .. } => format!("add {}", String::from_utf8_lossy(name)),
            DirEvent::Removed { name, .. } => format!("remove {}", String::from_utf8_lossy(name)),
            DirEvent::MovedOut { name, .. } => format!("out {}", String::from_utf8_lossy(name)),
            DirEvent::MovedIn { name, .. } => format!("in {}", String::from_utf8_lossy(name)),
            DirEvent::ChildChanged { name, .. } => format!("attrs {}", String::from_utf8_lossy(name)),
            other => format!("{other:?}"),
        })
        .collect();
    let want = ["add a", "attrs a", "out a", "in b", "out b", "add h", "attrs h", "remove h"];
    // Writing "h" may report one or two modifications before its chmod.
    let mut i = 0;
    for k in &kinds {
        if i < want.len() && *k == want[i] {
            i += 1;
        } else {
            assert!(k.starts_with("attrs "), "unexpected {k} in {kinds:?}");
        }
    }
    assert_eq!(i, want.len(), "{kinds:?}");
    // The rename within the directory is one pair.
    let cookies: Vec<u32> = got
        .iter()
        .filter_map(|e| match e {
            DirEvent::MovedOut { cookie, name: n, .. } if *n == name("a") => Some(*cookie),
            DirEvent::MovedIn { cookie, name: n, .. } if *n == name("b") => Some(*cookie),
            _ => None,
        })
        .collect();
    assert_eq!(cookies.len(), 2);
    assert_eq!(cookies[0], cookies[1]);
    assert!(got.iter().all(|e| match e {
        DirEvent::Added { watch, .. }
        | DirEvent::Removed { watch, .. }
        | DirEvent::MovedOut { watch, .. }
        | DirEvent::MovedIn { watch, .. }
        | DirEvent::ChildChanged { watch, .. } => *watch == w,
        _ => true,
    }));

    // The directory's own attributes, then its removal.
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o700)).unwrap();
    fs.rmdir(fs.root(), b"d").unwrap();
    let got = events.take(100);
    assert_eq!(got.first(), Some(&DirEvent::DirChanged { watch: w }), "{got:?}");
    assert!(got.contains(&DirEvent::Gone { watch: w }), "{got:?}");
    events.unwatch(w);
}

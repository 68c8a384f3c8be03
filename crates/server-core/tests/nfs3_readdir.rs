//! READDIR and READDIRPLUS: cookies, verifiers, exact reply sizing, paging.

mod common;

use std::collections::HashSet;

use bytes::Bytes;
use common::*;
use proto::nfs3::*;

fn readdir_raw(e: &Env, dir: &nfs_fh3, cookie: u64, verf: [u8; 8], count: u32) -> (READDIR3res, usize) {
    let r = e.call(NFS, 3, NFS3_READDIR, &READDIR3args { dir: dir.clone(), cookie, cookieverf: verf, count });
    // The resok (after the 4-byte status) must fit in count.
    let len = r.rest.len();
    (r.result(), len)
}

fn readdirplus_raw(
    e: &Env,
    dir: &nfs_fh3,
    cookie: u64,
    verf: [u8; 8],
    dircount: u32,
    maxcount: u32,
) -> (READDIRPLUS3res, usize) {
    let r = e.call(
        NFS,
        3,
        NFS3_READDIRPLUS,
        &READDIRPLUS3args { dir: dir.clone(), cookie, cookieverf: verf, dircount, maxcount },
    );
    let len = r.rest.len();
    (r.result(), len)
}

#[test]
fn dot_entries_and_small_directory() {
    let e = rw_env();
    let root = e.root();
    e.create_file(&root, "a");
    e.mkdir(&root, "b");
    let (r, len) = readdir_raw(&e, &root, 0, [0; 8], 4096);
    let READDIR3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert!(len <= 4096);
    let names: Vec<_> = ok.reply.entries.iter().map(|x| x.name.clone()).collect();
    assert_eq!(
        names,
        vec![Bytes::from_static(b"."), Bytes::from_static(b".."), Bytes::from_static(b"a"), Bytes::from_static(b"b")]
    );
    assert_eq!(ok.reply.entries[0].cookie, 1);
    assert_eq!(ok.reply.entries[1].cookie, 2);
    assert!(ok.reply.entries[2].cookie > 2);
    assert!(ok.reply.eof);
    assert_ne!(ok.cookieverf, [0; 8]);
    let root_id = e.getattr(&root).unwrap().fileid;
    assert_eq!(ok.reply.entries[0].fileid, root_id);
    assert_eq!(ok.reply.entries[1].fileid, root_id, "'..' of the export root is the root");
    // Resuming after "." lists ".." next; after ".." the real entries.
    let (r, _) = readdir_raw(&e, &root, 1, ok.cookieverf, 4096);
    let READDIR3res::NFS3_OK(o1) = r else { panic!() };
    assert_eq!(o1.reply.entries[0].name, "..");
    let (r, _) = readdir_raw(&e, &root, 2, ok.cookieverf, 4096);
    let READDIR3res::NFS3_OK(o2) = r else { panic!() };
    assert_eq!(o2.reply.entries[0].name, "a");
    // The last cookie gives an empty list with eof.
    let last = ok.reply.entries.last().unwrap().cookie;
    let (r, _) = readdir_raw(&e, &root, last, ok.cookieverf, 4096);
    let READDIR3res::NFS3_OK(o3) = r else { panic!() };
    assert!(o3.reply.entries.is_empty() && o3.reply.eof);
}

#[test]
fn verifier_and_errors() {
    let e = rw_env();
    let root = e.root();
    let f = e.create_file(&root, "f");
    let (r, _) = readdir_raw(&e, &root, 0, *b"anything", 4096);
    let READDIR3res::NFS3_OK(ok) = r else { panic!("cookie 0 accepts any verifier") };
    let (r, _) = readdir_raw(&e, &root, 3, *b"wrongver", 4096);
    let READDIR3res::default(nfsstat3::NFS3ERR_BAD_COOKIE, fail) = r else { panic!("{r:?}") };
    assert!(fail.dir_attributes.is_some());
    let (r, _) = readdirplus_raw(&e, &root, 3, *b"wrongver", 4096, 4096);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_BAD_COOKIE);
    // A cookie never handed out.
    let (r, _) = readdir_raw(&e, &root, 1 << 40, ok.cookieverf, 4096);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_BAD_COOKIE);
    // Too small for even one entry.
    let (r, _) = readdir_raw(&e, &root, 0, [0; 8], 50);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_TOOSMALL);
    let (r, _) = readdirplus_raw(&e, &root, 0, [0; 8], 100, 150);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_TOOSMALL);
    // Not a directory.
    let (r, _) = readdir_raw(&e, &f, 0, [0; 8], 4096);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_NOTDIR);
    // Listing needs read permission.
    let args = SETATTR3args {
        object: root.clone(),
        new_attributes: sattr3 { mode: Some(0o711), ..Default::default() },
        guard: None,
    };
    let _: SETATTR3res = e.nfs(NFS3_SETATTR, &args);
    let other = Cred::Sys(2000, 2000, vec![]);
    let r: READDIR3res =
        e.nfs_as(&other, NFS3_READDIR, &READDIR3args { dir: root, cookie: 0, cookieverf: [0; 8], count: 4096 });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
}

#[test]
fn readdirplus_attributes_and_handles() {
    let e = rw_env();
    let root = e.root();
    let f = e.create_file(&root, "file");
    let d = e.mkdir(&root, "dir");
    let (r, len) = readdirplus_raw(&e, &root, 0, [0; 8], 4096, 8192);
    let READDIRPLUS3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert!(len <= 8192);
    assert!(ok.reply.eof);
    let by_name = |n: &str| ok.reply.entries.iter().find(|x| x.name == n.as_bytes()).unwrap();
    assert_eq!(by_name(".").name_handle.as_ref().unwrap(), &root);
    assert_eq!(by_name("..").name_handle.as_ref().unwrap(), &root);
    assert_eq!(by_name("file").name_handle.as_ref().unwrap(), &f);
    assert_eq!(by_name("dir").name_handle.as_ref().unwrap(), &d);
    assert_eq!(by_name("dir").name_attributes.as_ref().unwrap().r#type, ftype3::NF3DIR);
    assert_eq!(by_name("file").fileid, by_name("file").name_attributes.as_ref().unwrap().fileid);
}

/// Pages through `n` entries with a small count, checking every reply
/// against the count and that no entry is lost or repeated.
fn page_all(e: &Env, dir: &nfs_fh3, plus: bool, count: u32) -> Vec<Bytes> {
    let mut seen = Vec::new();
    let (mut cookie, mut verf) = (0u64, [0u8; 8]);
    let mut calls = 0;
    loop {
        calls += 1;
        assert!(calls < 100_000);
        let (entries, eof, v): (Vec<(Bytes, u64)>, bool, [u8; 8]) = if plus {
            let (r, len) = readdirplus_raw(e, dir, cookie, verf, count / 4, count);
            assert!(len <= count as usize, "reply {len} > maxcount {count}");
            let READDIRPLUS3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
            assert!(ok.reply.entries.iter().all(|x| x.name_handle.is_some() && x.name_attributes.is_some()));
            (ok.reply.entries.into_iter().map(|x| (x.name, x.cookie)).collect(), ok.reply.eof, ok.cookieverf)
        } else {
            let (r, len) = readdir_raw(e, dir, cookie, verf, count);
            assert!(len <= count as usize, "reply {len} > count {count}");
            let READDIR3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
            (ok.reply.entries.into_iter().map(|x| (x.name, x.cookie)).collect(), ok.reply.eof, ok.cookieverf)
        };
        verf = v;
        assert!(eof || !entries.is_empty());
        if let Some((_, c)) = entries.last() {
            cookie = *c;
        }
        seen.extend(entries.into_iter().map(|(n, _)| n));
        if eof {
            return seen;
        }
    }
}

#[test]
fn paging_ten_thousand_entries() {
    let e = rw_env();
    let root = e.root();
    let dir = e.mkdir(&root, "big");
    let fs = &e.fs[0];
    // Populate through the backend directly; 10,000 CREATE calls would
    // only slow the test down.
    let (dir_id, _) = vfs::Vfs::lookup(&**fs, vfs::Vfs::root(&**fs), b"big").unwrap();
    let owner = vfs::Owner { uid: 1000, gid: 1000 };
    let mut expected: HashSet<Bytes> = HashSet::new();
    for i in 0..10_000 {
        let name = format!("entry-with-a-longish-name-{i:05}");
        vfs::Vfs::create(&**fs, dir_id, name.as_bytes(), &vfs::CreateHow::Guarded(Default::default()), owner).unwrap();
        expected.insert(Bytes::from(name));
    }
    expected.insert(Bytes::from_static(b"."));
    expected.insert(Bytes::from_static(b".."));
    for (plus, count) in [(false, 512), (false, 4096), (true, 1024), (true, 32768)] {
        let seen = page_all(&e, &dir, plus, count);
        assert_eq!(seen.len(), expected.len(), "plus={plus} count={count}: duplicates or losses");
        let set: HashSet<Bytes> = seen.into_iter().collect();
        assert_eq!(set, expected, "plus={plus} count={count}");
    }
}

#[test]
fn paging_while_the_directory_changes() {
    let e = rw_env();
    let root = e.root();
    let dir = e.mkdir(&root, "d");
    for i in 0..300 {
        e.create_file(&dir, &format!("f{i:03}"));
    }
    // Read the first page, then remove some entries already seen and add
    // some new ones: the entries that stayed must all be listed once.
    let (r, _) = readdir_raw(&e, &dir, 0, [0; 8], 1024);
    let READDIR3res::NFS3_OK(first) = r else { panic!() };
    let seen_first: Vec<Bytes> = first.reply.entries.iter().map(|x| x.name.clone()).collect();
    for n in seen_first.iter().filter(|n| n.starts_with(b"f")).take(5) {
        let _: REMOVE3res =
            e.nfs(NFS3_REMOVE, &REMOVE3args { object: diropargs3 { dir: dir.clone(), name: n.clone() } });
    }
    let mut cookie = first.reply.entries.last().unwrap().cookie;
    let mut rest = Vec::new();
    loop {
        let (r, _) = readdir_raw(&e, &dir, cookie, first.cookieverf, 1024);
        let READDIR3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
        if let Some(l) = ok.reply.entries.last() {
            cookie = l.cookie;
        }
        rest.extend(ok.reply.entries.into_iter().map(|x| x.name));
        if ok.reply.eof {
            break;
        }
    }
    let all: Vec<Bytes> = seen_first.into_iter().chain(rest).collect();
    let unique: HashSet<&Bytes> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "no duplicates");
    for i in 0..300 {
        assert!(all.contains(&Bytes::from(format!("f{i:03}"))));
    }
}

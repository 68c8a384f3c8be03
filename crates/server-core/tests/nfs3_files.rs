//! NFSv3 procedures on files: GETATTR, SETATTR, LOOKUP, ACCESS, READLINK,
//! READ, WRITE, COMMIT, FSSTAT, FSINFO, PATHCONF.

mod common;

use bytes::Bytes;
use common::*;
use proto::nfs3::*;

#[test]
fn getattr_and_lookup() {
    let e = rw_env();
    let root = e.root();
    let a = e.getattr(&root).unwrap();
    assert_eq!(a.r#type, ftype3::NF3DIR);
    assert_eq!((a.uid, a.gid), (1000, 1000));
    let f = e.create_file(&root, "f");
    let (fh, attrs) = e.lookup(&root, "f").unwrap();
    assert_eq!(fh, f);
    assert_eq!(attrs.r#type, ftype3::NF3REG);
    assert_eq!(attrs.mode, 0o644);
    assert_eq!(e.lookup(&root, "missing"), Err(nfsstat3::NFS3ERR_NOENT));
    assert_eq!(e.lookup(&f, "x"), Err(nfsstat3::NFS3ERR_NOTDIR));
    assert_eq!(e.lookup(&root, ""), Err(nfsstat3::NFS3ERR_ACCES));
    assert_eq!(e.lookup(&root, "a/b"), Err(nfsstat3::NFS3ERR_INVAL));
    assert_eq!(e.lookup(&root, "a\0b"), Err(nfsstat3::NFS3ERR_INVAL));
    assert_eq!(e.lookup(&root, &"x".repeat(256)), Err(nfsstat3::NFS3ERR_NAMETOOLONG));
    // "." and ".." at the root stay at the root.
    assert_eq!(e.lookup(&root, ".").unwrap().0, root);
    assert_eq!(e.lookup(&root, "..").unwrap().0, root);
    let d = e.mkdir(&root, "d");
    assert_eq!(e.lookup(&d, "..").unwrap().0, root);
    // Failure replies carry the directory attributes.
    let r: LOOKUP3res =
        e.nfs(NFS3_LOOKUP, &LOOKUP3args { what: diropargs3 { dir: root.clone(), name: name_of("zz") } });
    match r {
        LOOKUP3res::default(nfsstat3::NFS3ERR_NOENT, fail) => assert!(fail.dir_attributes.is_some()),
        other => panic!("{other:?}"),
    }
    // Lookup needs search permission on the directory.
    let args = SETATTR3args {
        object: d.clone(),
        new_attributes: sattr3 { mode: Some(0o600), ..Default::default() },
        guard: None,
    };
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &args);
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
    let other = Cred::Sys(2000, 2000, vec![]);
    let r: LOOKUP3res = e.nfs_as(&other, NFS3_LOOKUP, &LOOKUP3args { what: diropargs3 { dir: d, name: name_of("x") } });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
}

#[test]
fn nanosecond_times() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "t");
    let t = nfstime3 { seconds: 1_700_000_000, nseconds: 123_456_789 };
    let args = SETATTR3args {
        object: f.clone(),
        new_attributes: sattr3 {
            atime: set_atime::SET_TO_CLIENT_TIME(t.clone()),
            mtime: set_mtime::SET_TO_CLIENT_TIME(t.clone()),
            ..Default::default()
        },
        guard: None,
    };
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &args);
    let SETATTR3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert_eq!(ok.obj_wcc.after.as_ref().unwrap().mtime, t);
    assert!(ok.obj_wcc.before.is_some());
    let a = e.getattr(&f).unwrap();
    assert_eq!((a.mtime.clone(), a.atime.clone()), (t.clone(), t));
    // nseconds out of range.
    let args = SETATTR3args {
        object: f,
        new_attributes: sattr3 {
            mtime: set_mtime::SET_TO_CLIENT_TIME(nfstime3 { seconds: 1, nseconds: 1_000_000_000 }),
            ..Default::default()
        },
        guard: None,
    };
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &args);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_INVAL);
}

#[test]
fn setattr_guard_and_permissions() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "g");
    let a = e.getattr(&f).unwrap();
    let set = |mode, guard| SETATTR3args {
        object: f.clone(),
        new_attributes: sattr3 { mode: Some(mode), ..Default::default() },
        guard,
    };
    let wrong = nfstime3 { seconds: a.ctime.seconds.wrapping_sub(10), nseconds: 0 };
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &set(0o600, Some(wrong)));
    let SETATTR3res::default(nfsstat3::NFS3ERR_NOT_SYNC, fail) = r else { panic!("{r:?}") };
    assert!(fail.obj_wcc.before.is_some() && fail.obj_wcc.after.is_some());
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &set(0o600, Some(a.ctime.clone())));
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
    assert_eq!(e.getattr(&f).unwrap().mode, 0o600);
    // Someone else may not chmod.
    let other = Cred::Sys(2000, 2000, vec![]);
    let r: SETATTR3res = e.nfs_as(&other, NFS3_SETATTR, &set(0o666, None));
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_PERM);
    // Nor chown to someone else, even the owner.
    let chown = SETATTR3args {
        object: f.clone(),
        new_attributes: sattr3 { uid: Some(2000), ..Default::default() },
        guard: None,
    };
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &chown);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_PERM);
    // Truncation by the owner works; by a stranger without write access not.
    e.write(&f, 0, b"hello", stable_how::FILE_SYNC);
    let trunc =
        SETATTR3args { object: f.clone(), new_attributes: sattr3 { size: Some(2), ..Default::default() }, guard: None };
    let r: SETATTR3res = e.nfs_as(&other, NFS3_SETATTR, &trunc);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &trunc);
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
    assert_eq!(e.getattr(&f).unwrap().size, 2);
    // Setting times to "now" needs write access or ownership.
    let now = SETATTR3args {
        object: f.clone(),
        new_attributes: sattr3 { mtime: set_mtime::default(time_how::SET_TO_SERVER_TIME), ..Default::default() },
        guard: None,
    };
    let r: SETATTR3res = e.nfs_as(&other, NFS3_SETATTR, &now);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &now);
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
}

#[test]
fn access_bits() {
    let e = rw_env();
    let root = e.root();
    let f = e.create_file(&root, "a");
    let all = 0x3f;
    let r: ACCESS3res = e.nfs(NFS3_ACCESS, &ACCESS3args { object: f.clone(), access: all });
    let ACCESS3res::NFS3_OK(ok) = r else { panic!() };
    assert_eq!(ok.access, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND);
    let other = Cred::Sys(2000, 2000, vec![]);
    let r: ACCESS3res = e.nfs_as(&other, NFS3_ACCESS, &ACCESS3args { object: f, access: all });
    let ACCESS3res::NFS3_OK(ok) = r else { panic!() };
    assert_eq!(ok.access, ACCESS3_READ);
    let r: ACCESS3res = e.nfs(NFS3_ACCESS, &ACCESS3args { object: root, access: ACCESS3_LOOKUP | ACCESS3_DELETE });
    let ACCESS3res::NFS3_OK(ok) = r else { panic!() };
    assert_eq!(ok.access, ACCESS3_LOOKUP | ACCESS3_DELETE, "only asked bits");
}

#[test]
fn read_write_commit() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "data");
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let r = e.write(&f, 0, &payload, stable_how::UNSTABLE);
    let WRITE3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert_eq!(ok.count, payload.len() as u32);
    assert_eq!(ok.verf, VERF);
    assert!(ok.file_wcc.before.is_some() && ok.file_wcc.after.is_some());
    assert_eq!(ok.file_wcc.after.unwrap().size, payload.len() as u64);
    for stable in [stable_how::DATA_SYNC, stable_how::FILE_SYNC] {
        let WRITE3res::NFS3_OK(ok) = e.write(&f, 0, &payload[..10], stable) else { panic!() };
        assert!(ok.committed >= stable);
    }
    // Read it back, in pieces, with eof right.
    let READ3res::NFS3_OK(ok) = e.read(&f, 0, 1 << 20) else { panic!() };
    assert_eq!(ok.count as usize, payload.len());
    assert!(ok.eof);
    assert_eq!(&ok.data[..], &payload[..]);
    let READ3res::NFS3_OK(ok) = e.read(&f, 1000, 5000) else { panic!() };
    assert_eq!(&ok.data[..], &payload[1000..6000]);
    assert!(!ok.eof);
    let READ3res::NFS3_OK(ok) = e.read(&f, 10_000_000, 10) else { panic!() };
    assert!(ok.eof && ok.data.is_empty());
    // The READ payload travels as its own segment (no copy).
    let rec = call_record(
        77,
        NFS,
        3,
        NFS3_READ,
        &user(),
        &xdr::to_bytes(&READ3args { file: f.clone(), offset: 0, count: 65536 }),
    );
    let out = e.raw(rec);
    let segs = out.reply.unwrap();
    assert!(
        segs.iter().any(|s| s.len() == 65536),
        "data segment kept whole: {:?}",
        segs.iter().map(|s| s.len()).collect::<Vec<_>>()
    );
    // COMMIT, whole file and a range.
    for (offset, count) in [(0, 0), (100, 1000)] {
        let r: COMMIT3res = e.nfs(NFS3_COMMIT, &COMMIT3args { file: f.clone(), offset, count });
        let COMMIT3res::NFS3_OK(ok) = r else { panic!() };
        assert_eq!(ok.verf, VERF);
    }
    // Reads of a directory and writes to it.
    let root = e.root();
    assert_eq!(status_of(&e.read(&root, 0, 10)), nfsstat3::NFS3ERR_ISDIR);
    assert_eq!(status_of(&e.write(&root, 0, b"x", stable_how::UNSTABLE)), nfsstat3::NFS3ERR_ISDIR);
}

#[test]
fn write_count_rules() {
    let e = env_with(
        "/export *(rw,insecure)\n",
        server_core::CoreSettings { wtmax: 8192, rtmax: 4096, ..Default::default() },
    );
    let f = e.create_file(&e.root(), "w");
    // count larger than the data: INVAL.
    let args = WRITE3args {
        file: f.clone(),
        offset: 0,
        count: 10,
        stable: stable_how::FILE_SYNC,
        data: Bytes::from_static(b"abc"),
    };
    let r: WRITE3res = e.nfs(NFS3_WRITE, &args);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_INVAL);
    // count smaller than the data: count bytes are written.
    let args = WRITE3args { count: 2, data: Bytes::from_static(b"abcdef"), ..args };
    let WRITE3res::NFS3_OK(ok) = e.nfs::<_, WRITE3res>(NFS3_WRITE, &args) else { panic!() };
    assert_eq!(ok.count, 2);
    assert_eq!(e.getattr(&f).unwrap().size, 2);
    // Above wtmax: a short write of wtmax bytes.
    let big = vec![1u8; 10_000];
    let WRITE3res::NFS3_OK(ok) = e.write(&f, 0, &big, stable_how::FILE_SYNC) else { panic!() };
    assert_eq!(ok.count, 8192);
    // READ is capped at rtmax.
    let READ3res::NFS3_OK(ok) = e.read(&f, 0, 100_000) else { panic!() };
    assert_eq!(ok.count, 4096);
    assert!(!ok.eof);
    // Offset beyond the largest file: FBIG.
    let r = e.write(&f, u64::MAX - 1, b"xy", stable_how::UNSTABLE);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_FBIG);
}

#[test]
fn async_export_keeps_requested_stability() {
    let e = env("/export *(rw,insecure,async)\n");
    let f = e.create_file(&e.root(), "a");
    let WRITE3res::NFS3_OK(ok) = e.write(&f, 0, b"data", stable_how::FILE_SYNC) else { panic!() };
    assert_eq!(ok.committed, stable_how::FILE_SYNC);
}

#[test]
fn read_permissions() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "secret");
    e.write(&f, 0, b"s3cr3t", stable_how::FILE_SYNC);
    let chmod = |mode| SETATTR3args {
        object: f.clone(),
        new_attributes: sattr3 { mode: Some(mode), ..Default::default() },
        guard: None,
    };
    let _: SETATTR3res = e.nfs(NFS3_SETATTR, &chmod(0o600));
    let other = Cred::Sys(2000, 2000, vec![]);
    let r: READ3res = e.nfs_as(&other, NFS3_READ, &READ3args { file: f.clone(), offset: 0, count: 10 });
    let READ3res::default(nfsstat3::NFS3ERR_ACCES, fail) = r else { panic!("{r:?}") };
    assert!(fail.file_attributes.is_some());
    // The owner reads and writes even with mode 000 (knfsd's owner override).
    let _: SETATTR3res = e.nfs(NFS3_SETATTR, &chmod(0o000));
    assert_eq!(status_of(&e.read(&f, 0, 10)), nfsstat3::NFS3_OK);
    assert_eq!(status_of(&e.write(&f, 0, b"x", stable_how::UNSTABLE)), nfsstat3::NFS3_OK);
    let r: WRITE3res = e.nfs_as(
        &other,
        NFS3_WRITE,
        &WRITE3args { file: f, offset: 0, count: 1, stable: stable_how::UNSTABLE, data: Bytes::from_static(b"x") },
    );
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
}

#[test]
fn readlink() {
    let e = rw_env();
    let root = e.root();
    let args = SYMLINK3args {
        r#where: diropargs3 { dir: root.clone(), name: name_of("l") },
        symlink: symlinkdata3 { symlink_attributes: Default::default(), symlink_data: name_of("../target/x") },
    };
    let SYMLINK3res::NFS3_OK(ok) = e.nfs::<_, SYMLINK3res>(NFS3_SYMLINK, &args) else { panic!() };
    let l = ok.obj.unwrap();
    let r: READLINK3res = e.nfs(NFS3_READLINK, &READLINK3args { symlink: l });
    let READLINK3res::NFS3_OK(ok) = r else { panic!() };
    assert_eq!(ok.data, "../target/x");
    assert_eq!(ok.symlink_attributes.unwrap().r#type, ftype3::NF3LNK);
    let f = e.create_file(&root, "notalink");
    let r: READLINK3res = e.nfs(NFS3_READLINK, &READLINK3args { symlink: f });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_INVAL);
}

#[test]
fn fsinfo_fsstat_pathconf() {
    let e = rw_env();
    let root = e.root();
    let FSINFO3res::NFS3_OK(i) = e.nfs::<_, FSINFO3res>(NFS3_FSINFO, &FSINFO3args { fsroot: root.clone() }) else {
        panic!()
    };
    assert_eq!((i.rtmax, i.rtpref, i.wtmax, i.wtpref), (1 << 20, 1 << 20, 1 << 20, 1 << 20));
    assert_eq!((i.rtmult, i.wtmult), (4096, 4096));
    assert_eq!(i.time_delta, nfstime3 { seconds: 0, nseconds: 1 });
    assert_eq!(i.properties, FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME);
    assert!(i.obj_attributes.is_some());
    let FSSTAT3res::NFS3_OK(s) = e.nfs::<_, FSSTAT3res>(NFS3_FSSTAT, &FSSTAT3args { fsroot: root.clone() }) else {
        panic!()
    };
    assert!(s.tbytes >= s.fbytes && s.fbytes >= s.abytes && s.tfiles > 0);
    let PATHCONF3res::NFS3_OK(p) = e.nfs::<_, PATHCONF3res>(NFS3_PATHCONF, &PATHCONF3args { object: root }) else {
        panic!()
    };
    assert_eq!(p.name_max, 255);
    assert!(p.no_trunc && p.chown_restricted && !p.case_insensitive && p.case_preserving);
}

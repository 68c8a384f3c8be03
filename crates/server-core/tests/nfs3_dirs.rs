//! NFSv3 procedures that change directories: CREATE, MKDIR, SYMLINK,
//! MKNOD, REMOVE, RMDIR, RENAME, LINK.

mod common;

use common::*;
use proto::nfs3::*;

fn at(dir: &nfs_fh3, name: &str) -> diropargs3 {
    diropargs3 { dir: dir.clone(), name: name_of(name) }
}

fn create(e: &Env, dir: &nfs_fh3, name: &str, how: createhow3) -> CREATE3res {
    e.nfs(NFS3_CREATE, &CREATE3args { r#where: at(dir, name), how })
}

#[test]
fn create_modes() {
    let e = rw_env();
    let root = e.root();
    let s = sattr3 { mode: Some(0o640), ..Default::default() };
    let CREATE3res::NFS3_OK(ok) = create(&e, &root, "u", createhow3::UNCHECKED(s.clone())) else { panic!() };
    let fh = ok.obj.unwrap();
    assert_eq!(ok.obj_attributes.as_ref().unwrap().mode, 0o640);
    assert_eq!((ok.obj_attributes.as_ref().unwrap().uid, ok.obj_attributes.unwrap().gid), (1000, 1000));
    assert!(ok.dir_wcc.before.is_some() && ok.dir_wcc.after.is_some());
    e.write(&fh, 0, b"content", stable_how::FILE_SYNC);
    // UNCHECKED on an existing file keeps it; with size 0 it truncates.
    let CREATE3res::NFS3_OK(ok) = create(&e, &root, "u", createhow3::UNCHECKED(Default::default())) else { panic!() };
    assert_eq!(ok.obj.unwrap(), fh);
    assert_eq!(e.getattr(&fh).unwrap().size, 7);
    let trunc = sattr3 { size: Some(0), ..Default::default() };
    let CREATE3res::NFS3_OK(_) = create(&e, &root, "u", createhow3::UNCHECKED(trunc)) else { panic!() };
    assert_eq!(e.getattr(&fh).unwrap().size, 0);
    // GUARDED on an existing name.
    let r = create(&e, &root, "u", createhow3::GUARDED(s.clone()));
    let CREATE3res::default(nfsstat3::NFS3ERR_EXIST, fail) = r else { panic!("{r:?}") };
    assert!(fail.dir_wcc.before.is_some());
    // Bad names.
    assert_eq!(status_of(&create(&e, &root, ".", createhow3::GUARDED(s.clone()))), nfsstat3::NFS3ERR_EXIST);
    assert_eq!(status_of(&create(&e, &root, "..", createhow3::GUARDED(s.clone()))), nfsstat3::NFS3ERR_EXIST);
    assert_eq!(status_of(&create(&e, &root, "a/b", createhow3::GUARDED(s.clone()))), nfsstat3::NFS3ERR_INVAL);
    assert_eq!(
        status_of(&create(&e, &root, &"n".repeat(300), createhow3::GUARDED(s.clone()))),
        nfsstat3::NFS3ERR_NAMETOOLONG
    );
    // In a file.
    assert_eq!(status_of(&create(&e, &fh, "x", createhow3::GUARDED(s.clone()))), nfsstat3::NFS3ERR_NOTDIR);
    // A non-root user cannot give the file away.
    let give = sattr3 { uid: Some(0), ..Default::default() };
    assert_eq!(status_of(&create(&e, &root, "g", createhow3::GUARDED(give))), nfsstat3::NFS3ERR_PERM);
    // Nor create in a directory they cannot write.
    let other = Cred::Sys(2000, 2000, vec![]);
    let r: CREATE3res =
        e.nfs_as(&other, NFS3_CREATE, &CREATE3args { r#where: at(&root, "o"), how: createhow3::GUARDED(s) });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
}

#[test]
fn exclusive_create_retransmission() {
    let e = rw_env();
    let root = e.root();
    let CREATE3res::NFS3_OK(first) = create(&e, &root, "x", createhow3::EXCLUSIVE(*b"verifier")) else { panic!() };
    let fh = first.obj.unwrap();
    // The same request again (a retransmission after a lost reply) succeeds
    // on the same file.
    let CREATE3res::NFS3_OK(again) = create(&e, &root, "x", createhow3::EXCLUSIVE(*b"verifier")) else { panic!() };
    assert_eq!(again.obj.unwrap(), fh);
    // Another verifier: someone else's create.
    let r = create(&e, &root, "x", createhow3::EXCLUSIVE(*b"other!!!"));
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_EXIST);
    // The client then sets the real attributes.
    let args = SETATTR3args {
        object: fh.clone(),
        new_attributes: sattr3 { mode: Some(0o600), ..Default::default() },
        guard: None,
    };
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &args);
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
    assert_eq!(e.getattr(&fh).unwrap().mode, 0o600);
}

#[test]
fn mkdir_symlink_mknod() {
    let e = rw_env();
    let root = e.root();
    let d = e.mkdir(&root, "d");
    assert_eq!(e.getattr(&d).unwrap().r#type, ftype3::NF3DIR);
    let r: MKDIR3res = e.nfs(NFS3_MKDIR, &MKDIR3args { r#where: at(&root, "d"), attributes: Default::default() });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_EXIST);
    let r: MKDIR3res = e.nfs(NFS3_MKDIR, &MKDIR3args { r#where: at(&root, ".."), attributes: Default::default() });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_EXIST);

    let r: SYMLINK3res = e.nfs(
        NFS3_SYMLINK,
        &SYMLINK3args {
            r#where: at(&d, "s"),
            symlink: symlinkdata3 { symlink_attributes: Default::default(), symlink_data: name_of("/etc/passwd") },
        },
    );
    let SYMLINK3res::NFS3_OK(ok) = r else { panic!() };
    assert_eq!(ok.obj_attributes.unwrap().r#type, ftype3::NF3LNK);
    let r: SYMLINK3res = e.nfs(
        NFS3_SYMLINK,
        &SYMLINK3args {
            r#where: at(&d, "empty"),
            symlink: symlinkdata3 { symlink_attributes: Default::default(), symlink_data: name_of("") },
        },
    );
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_INVAL);

    let r: MKNOD3res =
        e.nfs(NFS3_MKNOD, &MKNOD3args { r#where: at(&d, "fifo"), what: mknoddata3::NF3FIFO(Default::default()) });
    let MKNOD3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert_eq!(ok.obj_attributes.unwrap().r#type, ftype3::NF3FIFO);
    let r: MKNOD3res =
        e.nfs(NFS3_MKNOD, &MKNOD3args { r#where: at(&d, "sock"), what: mknoddata3::NF3SOCK(Default::default()) });
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
    let dev = devicedata3 { dev_attributes: Default::default(), spec: specdata3 { specdata1: 1, specdata2: 3 } };
    let r: MKNOD3res =
        e.nfs(NFS3_MKNOD, &MKNOD3args { r#where: at(&d, "null"), what: mknoddata3::NF3CHR(dev.clone()) });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_PERM, "devices need root");
    let r: MKNOD3res =
        e.nfs(NFS3_MKNOD, &MKNOD3args { r#where: at(&d, "reg"), what: mknoddata3::default(ftype3::NF3REG) });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_BADTYPE);
    // Root (not squashed here) may make devices.
    let e2 = env("/export *(rw,insecure,no_root_squash)\n");
    let r2 = e2.root();
    let r: MKNOD3res =
        e2.nfs_as(&common::root(), NFS3_MKNOD, &MKNOD3args { r#where: at(&r2, "null"), what: mknoddata3::NF3CHR(dev) });
    let MKNOD3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    let a = ok.obj_attributes.unwrap();
    assert_eq!((a.r#type, a.rdev), (ftype3::NF3CHR, specdata3 { specdata1: 1, specdata2: 3 }));
}

#[test]
fn remove_and_rmdir() {
    let e = rw_env();
    let root = e.root();
    let d = e.mkdir(&root, "d");
    let f = e.create_file(&d, "f");
    let rm =
        |dir: &nfs_fh3, n: &str| status_of(&e.nfs::<_, REMOVE3res>(NFS3_REMOVE, &REMOVE3args { object: at(dir, n) }));
    let rmdir =
        |dir: &nfs_fh3, n: &str| status_of(&e.nfs::<_, RMDIR3res>(NFS3_RMDIR, &RMDIR3args { object: at(dir, n) }));
    assert_eq!(rmdir(&root, "d"), nfsstat3::NFS3ERR_NOTEMPTY);
    assert_eq!(rmdir(&d, "."), nfsstat3::NFS3ERR_INVAL);
    assert_eq!(rmdir(&d, ".."), nfsstat3::NFS3ERR_EXIST);
    assert_eq!(rm(&root, "d"), nfsstat3::NFS3ERR_ISDIR);
    assert_eq!(rmdir(&d, "f"), nfsstat3::NFS3ERR_NOTDIR);
    assert_eq!(rm(&d, "missing"), nfsstat3::NFS3ERR_NOENT);
    let r: REMOVE3res = e.nfs(NFS3_REMOVE, &REMOVE3args { object: at(&d, "f") });
    let REMOVE3res::NFS3_OK(ok) = r else { panic!() };
    assert!(ok.dir_wcc.before.is_some() && ok.dir_wcc.after.is_some());
    // The removed file's handle is stale now.
    assert_eq!(e.getattr(&f), Err(nfsstat3::NFS3ERR_STALE));
    assert_eq!(rmdir(&root, "d"), nfsstat3::NFS3_OK);
    assert_eq!(e.getattr(&d), Err(nfsstat3::NFS3ERR_STALE));
}

#[test]
fn sticky_directory() {
    let e = env("/export *(rw,insecure,no_root_squash)\n");
    let root = e.root();
    let tmp = e.mkdir(&root, "tmp");
    let chmod = SETATTR3args {
        object: tmp.clone(),
        new_attributes: sattr3 { mode: Some(0o1777), ..Default::default() },
        guard: None,
    };
    let _: SETATTR3res = e.nfs(NFS3_SETATTR, &chmod);
    e.create_file(&tmp, "mine");
    let other = Cred::Sys(2000, 2000, vec![]);
    let r: REMOVE3res = e.nfs_as(&other, NFS3_REMOVE, &REMOVE3args { object: at(&tmp, "mine") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
    let r: RENAME3res = e.nfs_as(&other, NFS3_RENAME, &RENAME3args { from: at(&tmp, "mine"), to: at(&tmp, "stolen") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
    let r: REMOVE3res = e.nfs(NFS3_REMOVE, &REMOVE3args { object: at(&tmp, "mine") });
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
}

#[test]
fn rename_and_link() {
    let e = env("/export *(rw,insecure)\n/other *(rw,insecure)\n");
    let root = e.root();
    let a = e.mkdir(&root, "a");
    let b = e.mkdir(&root, "b");
    let f = e.create_file(&a, "f");
    let r: RENAME3res = e.nfs(NFS3_RENAME, &RENAME3args { from: at(&a, "f"), to: at(&b, "g") });
    let RENAME3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert!(ok.fromdir_wcc.after.is_some() && ok.todir_wcc.after.is_some());
    assert_eq!(e.lookup(&b, "g").unwrap().0, f, "handles survive a rename");
    assert_eq!(e.lookup(&a, "f"), Err(nfsstat3::NFS3ERR_NOENT));
    // Same directory.
    let r: RENAME3res = e.nfs(NFS3_RENAME, &RENAME3args { from: at(&b, "g"), to: at(&b, "h") });
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
    let r: RENAME3res = e.nfs(NFS3_RENAME, &RENAME3args { from: at(&b, "."), to: at(&b, "x") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_INVAL);
    let r: RENAME3res = e.nfs(NFS3_RENAME, &RENAME3args { from: at(&b, "nope"), to: at(&b, "x") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_NOENT);
    // A directory into itself.
    let r: RENAME3res = e.nfs(NFS3_RENAME, &RENAME3args { from: at(&root, "a"), to: at(&a, "inside") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_INVAL);
    // Across exports.
    let other = e.mount("/other");
    let r: RENAME3res = e.nfs(NFS3_RENAME, &RENAME3args { from: at(&b, "h"), to: at(&other, "h") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_XDEV);

    // LINK.
    let r: LINK3res = e.nfs(NFS3_LINK, &LINK3args { file: f.clone(), link: at(&a, "hard") });
    let LINK3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert_eq!(ok.file_attributes.unwrap().nlink, 2);
    assert!(ok.linkdir_wcc.after.is_some());
    assert_eq!(e.lookup(&a, "hard").unwrap().0, f);
    let r: LINK3res = e.nfs(NFS3_LINK, &LINK3args { file: f.clone(), link: at(&a, "hard") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_EXIST);
    let r: LINK3res = e.nfs(NFS3_LINK, &LINK3args { file: a.clone(), link: at(&b, "dirlink") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ISDIR);
    let r: LINK3res = e.nfs(NFS3_LINK, &LINK3args { file: f, link: at(&other, "x") });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_XDEV);
}

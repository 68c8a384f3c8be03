//! Handles, export rules and squashing as seen by NFSv3 procedures.

mod common;

use bytes::Bytes;
use common::*;
use proto::nfs3::*;
use server_core::fh::{FhCodec, HandleData};

fn at(dir: &nfs_fh3, name: &str) -> diropargs3 {
    diropargs3 { dir: dir.clone(), name: name_of(name) }
}

#[test]
fn forged_and_stale_handles() {
    let e = rw_env();
    let root = e.root();
    let f = e.create_file(&root, "f");
    for i in 0..f.data.len() {
        let mut d = f.data.to_vec();
        d[i] ^= 0x01;
        assert_eq!(e.getattr(&nfs_fh3 { data: Bytes::from(d) }), Err(nfsstat3::NFS3ERR_BADHANDLE), "byte {i}");
    }
    assert_eq!(e.getattr(&nfs_fh3 { data: Bytes::new() }), Err(nfsstat3::NFS3ERR_BADHANDLE));
    assert_eq!(e.getattr(&nfs_fh3 { data: f.data.slice(..20) }), Err(nfsstat3::NFS3ERR_BADHANDLE));
    // Correctly signed, but for an export that does not exist.
    let codec = FhCodec::new(SECRET);
    let attrs = e.getattr(&f).unwrap();
    let mut h = codec.decode(&f.data).unwrap();
    assert_eq!(h.fileid, attrs.fileid);
    h.export_id = 99;
    assert_eq!(e.getattr(&nfs_fh3 { data: Bytes::copy_from_slice(&codec.encode(&h)) }), Err(nfsstat3::NFS3ERR_STALE));
    // Right object, wrong generation (an earlier object with the same id).
    let h = HandleData { generation: codec.decode(&f.data).unwrap().generation ^ 1, ..codec.decode(&f.data).unwrap() };
    assert_eq!(e.getattr(&nfs_fh3 { data: Bytes::copy_from_slice(&codec.encode(&h)) }), Err(nfsstat3::NFS3ERR_STALE));
    // An id that was never allocated.
    let h = HandleData { fileid: 1 << 50, ..codec.decode(&f.data).unwrap() };
    assert_eq!(e.getattr(&nfs_fh3 { data: Bytes::copy_from_slice(&codec.encode(&h)) }), Err(nfsstat3::NFS3ERR_STALE));
    // Failure replies of a procedure with wcc data, on a bad handle.
    let r: WRITE3res = e.nfs(
        NFS3_WRITE,
        &WRITE3args {
            file: nfs_fh3 { data: Bytes::from_static(&[1; 40]) },
            offset: 0,
            count: 0,
            stable: stable_how::UNSTABLE,
            data: Bytes::new(),
        },
    );
    let WRITE3res::default(nfsstat3::NFS3ERR_BADHANDLE, fail) = r else { panic!("{r:?}") };
    assert_eq!(fail.file_wcc, wcc_data { before: None, after: None });
    // Handles are the same across a server restart with the same secret
    // (a new Core over the same backend).
    let rules = server_core::exports::parse_exports("/export *(rw,insecure)\n").unwrap().entries.remove(0).rules;
    let fs: std::sync::Arc<dyn vfs::Vfs> = e.fs[0].clone();
    let core2 = server_core::Core::new(
        Default::default(),
        vec![server_core::Export { id: 1, path: "/export".into(), fs, rules }],
        SECRET,
        VERF,
        server_core::ServicePorts { tcp: 2049, udp: None },
    );
    let mnt = call_record(1, MOUNT, 3, 1, &user(), &xdr::to_bytes(&Bytes::from_static(b"/export")));
    let proto::mount3::mountres3::MNT3_OK(ok) = parse_reply(core2.handle(mnt, &e.peer)).result() else { panic!() };
    assert_eq!(ok.fhandle, root.data);
}

#[test]
fn root_squash() {
    let e = env("/export *(rw,insecure)\n");
    let root = e.root();
    let pub_dir = e.mkdir(&root, "pub");
    let chmod = SETATTR3args {
        object: pub_dir.clone(),
        new_attributes: sattr3 { mode: Some(0o777), ..Default::default() },
        guard: None,
    };
    let _: SETATTR3res = e.nfs(NFS3_SETATTR, &chmod);
    // Root is squashed to nobody: cannot create in the user's 0755 root ...
    let mk = |dir: &nfs_fh3, n: &str| CREATE3args { r#where: at(dir, n), how: createhow3::GUARDED(Default::default()) };
    let r: CREATE3res = e.nfs_as(&common::root(), NFS3_CREATE, &mk(&root, "x"));
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
    // ... and what it creates in a world-writable directory is nobody's.
    let r: CREATE3res = e.nfs_as(&common::root(), NFS3_CREATE, &mk(&pub_dir, "y"));
    let CREATE3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    let a = ok.obj_attributes.unwrap();
    assert_eq!((a.uid, a.gid), (65534, 65534));
    // Root cannot chown either.
    let chown = SETATTR3args {
        object: ok.obj.unwrap(),
        new_attributes: sattr3 { uid: Some(0), ..Default::default() },
        guard: None,
    };
    let r: SETATTR3res = e.nfs_as(&common::root(), NFS3_SETATTR, &chown);
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_PERM);

    // no_root_squash: root is root.
    let e = env("/export *(rw,insecure,no_root_squash)\n");
    let r: CREATE3res = e.nfs_as(&common::root(), NFS3_CREATE, &mk(&e.root(), "x"));
    let CREATE3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert_eq!(ok.obj_attributes.unwrap().uid, 0);

    // all_squash with anonuid: everyone is that user.
    let e = env("/export *(rw,insecure,all_squash,anonuid=1000,anongid=1000)\n");
    let r: CREATE3res = e.nfs_as(&Cred::Sys(4242, 4242, vec![]), NFS3_CREATE, &mk(&e.root(), "x"));
    let CREATE3res::NFS3_OK(ok) = r else { panic!("{r:?}") };
    assert_eq!(ok.obj_attributes.unwrap().uid, 1000);
}

#[test]
fn read_only_export() {
    let e = env("/export *(ro,insecure)\n");
    let root = e.root();
    // Put a file there through the backend.
    let fs = &e.fs[0];
    let owner = vfs::Owner { uid: 1000, gid: 1000 };
    vfs::Vfs::create(&**fs, vfs::Vfs::root(&**fs), b"f", &vfs::CreateHow::Guarded(Default::default()), owner).unwrap();
    let (f, _) = e.lookup(&root, "f").unwrap();
    assert_eq!(status_of(&e.read(&f, 0, 10)), nfsstat3::NFS3_OK);
    let rofs = nfsstat3::NFS3ERR_ROFS;
    assert_eq!(status_of(&e.write(&f, 0, b"x", stable_how::FILE_SYNC)), rofs);
    let s = |r: &dyn Fn() -> nfsstat3| r();
    assert_eq!(
        s(&|| status_of(&e.nfs::<_, SETATTR3res>(
            NFS3_SETATTR,
            &SETATTR3args { object: f.clone(), new_attributes: Default::default(), guard: None }
        ))),
        rofs
    );
    assert_eq!(
        s(&|| status_of(&e.nfs::<_, CREATE3res>(
            NFS3_CREATE,
            &CREATE3args { r#where: at(&root, "n"), how: createhow3::UNCHECKED(Default::default()) }
        ))),
        rofs
    );
    assert_eq!(
        s(&|| status_of(
            &e.nfs::<_, MKDIR3res>(NFS3_MKDIR, &MKDIR3args { r#where: at(&root, "n"), attributes: Default::default() })
        )),
        rofs
    );
    assert_eq!(
        s(&|| status_of(&e.nfs::<_, SYMLINK3res>(
            NFS3_SYMLINK,
            &SYMLINK3args {
                r#where: at(&root, "n"),
                symlink: symlinkdata3 { symlink_attributes: Default::default(), symlink_data: name_of("t") }
            }
        ))),
        rofs
    );
    assert_eq!(
        s(&|| status_of(&e.nfs::<_, MKNOD3res>(
            NFS3_MKNOD,
            &MKNOD3args { r#where: at(&root, "n"), what: mknoddata3::NF3FIFO(Default::default()) }
        ))),
        rofs
    );
    assert_eq!(s(&|| status_of(&e.nfs::<_, REMOVE3res>(NFS3_REMOVE, &REMOVE3args { object: at(&root, "f") }))), rofs);
    assert_eq!(s(&|| status_of(&e.nfs::<_, RMDIR3res>(NFS3_RMDIR, &RMDIR3args { object: at(&root, "f") }))), rofs);
    assert_eq!(
        s(&|| status_of(
            &e.nfs::<_, RENAME3res>(NFS3_RENAME, &RENAME3args { from: at(&root, "f"), to: at(&root, "g") })
        )),
        rofs
    );
    assert_eq!(
        s(&|| status_of(&e.nfs::<_, LINK3res>(NFS3_LINK, &LINK3args { file: f.clone(), link: at(&root, "g") }))),
        rofs
    );
    assert_eq!(
        s(&|| status_of(&e.nfs::<_, COMMIT3res>(NFS3_COMMIT, &COMMIT3args { file: f.clone(), offset: 0, count: 0 }))),
        rofs
    );
    // ACCESS never grants modification there.
    let ACCESS3res::NFS3_OK(ok) = e.nfs::<_, ACCESS3res>(NFS3_ACCESS, &ACCESS3args { object: f, access: 0x3f }) else {
        panic!()
    };
    assert_eq!(ok.access, ACCESS3_READ);
}

#[test]
fn client_not_in_exports() {
    let mut e = env("/export 10.0.0.0/8(rw,insecure)\n");
    e.peer = peer("10.1.2.3:700");
    let root = e.root();
    e.peer = peer("192.168.1.1:700");
    assert_eq!(e.getattr(&root), Err(nfsstat3::NFS3ERR_ACCES));
    let r: READDIR3res =
        e.nfs(NFS3_READDIR, &READDIR3args { dir: root.clone(), cookie: 0, cookieverf: [0; 8], count: 4096 });
    assert_eq!(status_of(&r), nfsstat3::NFS3ERR_ACCES);
    // NULL is still answered.
    let r = e.call_as(NFS, 3, 0, &Cred::None, &[]);
    assert_eq!(r.accept_stat(), Some(proto::rpc::accept_stat::SUCCESS));
}

#[test]
fn secure_port_on_nfs_calls() {
    let mut e = env("/export *(rw)\n");
    let root = e.root();
    e.getattr(&root).unwrap();
    e.peer = peer("127.0.0.1:50000");
    assert_eq!(e.getattr(&root), Err(nfsstat3::NFS3ERR_ACCES));
}

/// A failed write-back loses unstable data: the verifier changes so that
/// clients resend it.
#[test]
fn commit_write_back_failure_changes_the_verifier() {
    commit_failure(vfs::VfsError::WriteBack(vfs::Errno::EIO), nfsstat3::NFS3ERR_IO, true);
}

/// Any other COMMIT error left the data where it was: the verifier stays.
#[test]
fn commit_failure_without_lost_data_keeps_the_verifier() {
    commit_failure(vfs::VfsError::Io(vfs::Errno::EIO), nfsstat3::NFS3ERR_IO, false);
    commit_failure(vfs::VfsError::Delay, nfsstat3::NFS3ERR_JUKEBOX, false);
}

/// COMMIT on a backend whose commit fails with `err`: the status it
/// answers, and whether the write verifier changed.
fn commit_failure(err: vfs::VfsError, status: nfsstat3, verifier_changes: bool) {
    use std::sync::Arc;
    use vfs::*;

    /// MemFs whose commit fails.
    struct FailingCommit(MemFs, VfsError);
    impl Vfs for FailingCommit {
        fn root(&self) -> FileId {
            self.0.root()
        }
        fn fsid(&self) -> u64 {
            self.0.fsid()
        }
        fn getattr(&self, id: FileId) -> VfsResult<Attrs> {
            self.0.getattr(id)
        }
        fn setattr(&self, id: FileId, s: &SetAttrs, g: Option<Timespec>) -> VfsResult<Attrs> {
            self.0.setattr(id, s, g)
        }
        fn lookup(&self, d: FileId, n: &[u8]) -> VfsResult<(FileId, Attrs)> {
            self.0.lookup(d, n)
        }
        fn readlink(&self, id: FileId) -> VfsResult<Bytes> {
            self.0.readlink(id)
        }
        fn read(&self, id: FileId, o: u64, c: u32) -> VfsResult<ReadResult> {
            self.0.read(id, o, c)
        }
        fn write(&self, id: FileId, o: u64, d: &[u8], s: Stability) -> VfsResult<WriteResult> {
            self.0.write(id, o, d, s)
        }
        fn commit(&self, _: FileId, _: u64, _: u32) -> VfsResult<()> {
            Err(self.1.clone())
        }
        fn create(&self, d: FileId, n: &[u8], h: &CreateHow, o: Owner) -> VfsResult<(FileId, Attrs)> {
            self.0.create(d, n, h, o)
        }
        fn mkdir(&self, d: FileId, n: &[u8], a: &SetAttrs, o: Owner) -> VfsResult<(FileId, Attrs)> {
            self.0.mkdir(d, n, a, o)
        }
        fn symlink(&self, d: FileId, n: &[u8], t: &[u8], a: &SetAttrs, o: Owner) -> VfsResult<(FileId, Attrs)> {
            self.0.symlink(d, n, t, a, o)
        }
        fn mknod(&self, d: FileId, n: &[u8], k: NodeKind, a: &SetAttrs, o: Owner) -> VfsResult<(FileId, Attrs)> {
            self.0.mknod(d, n, k, a, o)
        }
        fn remove(&self, d: FileId, n: &[u8]) -> VfsResult<()> {
            self.0.remove(d, n)
        }
        fn rmdir(&self, d: FileId, n: &[u8]) -> VfsResult<()> {
            self.0.rmdir(d, n)
        }
        fn rename(&self, a: FileId, b: &[u8], c: FileId, d: &[u8]) -> VfsResult<()> {
            self.0.rename(a, b, c, d)
        }
        fn link(&self, id: FileId, d: FileId, n: &[u8]) -> VfsResult<()> {
            self.0.link(id, d, n)
        }
        fn readdir(&self, d: FileId, c: u64, m: usize) -> VfsResult<ReadDir> {
            self.0.readdir(d, c, m)
        }
        fn readdir_plus(&self, d: FileId, c: u64, m: usize) -> VfsResult<ReadDirPlus> {
            self.0.readdir_plus(d, c, m)
        }
        fn fsstat(&self, id: FileId) -> VfsResult<FsStat> {
            self.0.fsstat(id)
        }
        fn change_is_ctime(&self) -> bool {
            self.0.change_is_ctime()
        }
        fn counters(&self) -> Vec<Counter> {
            self.0.counters()
        }
    }
    let fs = Arc::new(FailingCommit(
        MemFs::with_settings(vfs::memfs::MemFsSettings { root_owner: (1000, 1000), ..Default::default() }),
        err,
    ));
    let rules = server_core::exports::parse_exports("/x *(rw,insecure)\n").unwrap().entries.remove(0).rules;
    let core = server_core::Core::new(
        Default::default(),
        vec![server_core::Export { id: 1, path: "/x".into(), fs, rules }],
        SECRET,
        VERF,
        server_core::ServicePorts { tcp: 2049, udp: None },
    );
    let p = peer("127.0.0.1:700");
    // Every call gets its own xid, as from a real client: the resent WRITE
    // below must run again, not be answered from the duplicate request cache.
    let xid = std::cell::Cell::new(1);
    let call = |proc_: u32, args: Bytes| {
        xid.set(xid.get() + 1);
        parse_reply(core.handle(call_record(xid.get(), NFS, 3, proc_, &user(), &args), &p))
    };
    let mnt = call_record(1, MOUNT, 3, 1, &user(), &xdr::to_bytes(&Bytes::from_static(b"/x")));
    let proto::mount3::mountres3::MNT3_OK(ok) = parse_reply(core.handle(mnt, &p)).result() else { panic!() };
    let root = nfs_fh3 { data: ok.fhandle };
    let CREATE3res::NFS3_OK(c) = call(
        NFS3_CREATE,
        xdr::to_bytes(&CREATE3args { r#where: at(&root, "f"), how: createhow3::GUARDED(Default::default()) }),
    )
    .result() else {
        panic!()
    };
    let f = c.obj.unwrap();
    let WRITE3res::NFS3_OK(w) = call(
        NFS3_WRITE,
        xdr::to_bytes(&WRITE3args {
            file: f.clone(),
            offset: 0,
            count: 1,
            stable: stable_how::UNSTABLE,
            data: Bytes::from_static(b"x"),
        }),
    )
    .result() else {
        panic!()
    };
    assert_eq!(w.verf, VERF);
    let r: COMMIT3res =
        call(NFS3_COMMIT, xdr::to_bytes(&COMMIT3args { file: f.clone(), offset: 0, count: 0 })).result();
    assert_eq!(status_of(&r), status);
    if !verifier_changes {
        assert_eq!(core.write_verifier(), VERF, "nothing was lost");
        return;
    }
    assert_ne!(core.write_verifier(), VERF, "verifier changed so clients resend");
    let WRITE3res::NFS3_OK(w) = call(
        NFS3_WRITE,
        xdr::to_bytes(&WRITE3args {
            file: f,
            offset: 0,
            count: 1,
            stable: stable_how::UNSTABLE,
            data: Bytes::from_static(b"x"),
        }),
    )
    .result() else {
        panic!()
    };
    assert_ne!(w.verf, VERF);
}

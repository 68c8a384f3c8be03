//! A file removed while open (RFC 8881 section 18.16.4,
//! OPEN4_RESULT_PRESERVE_UNLINKED): on a backend that can keep it
//! (LocalFs), OPEN at minor version 1 promises that the file lives on
//! for its opens; REMOVE or RENAME over it then leaves it readable and
//! writable by handle, with no links, until the last open of it is
//! closed; then its handle is stale. MemFs cannot keep it, and NFSv4.0
//! has no such flag: no promise there.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs4::*;
use server_core::state::Nfs4Settings;
use server_core::{CoreSettings, ManualClock, MemStore};

type A = nfs_argop4;
type R = nfs_resop4;

/// Opens (creating) `file` in /export for reading and writing and writes
/// `data`: the handle, the open stateid and OPEN's rflags.
fn open_write(env: &Env, s: &mut Session, owner: &str, file: &str, data: &[u8]) -> (nfs_fh4, stateid4, u32) {
    let open = open_args(0, 0, owner, file, OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, 0, true);
    let write = write_op(&CURRENT_STATEID, 0, data);
    let r = s.run(env, vec![putfh(&env.mount("/export").data), A::OP_OPEN(open), A::OP_GETFH, write]);
    ok(&r);
    let R::OP_OPEN(OPEN4res::NFS4_OK(o)) = &r.resarray[1] else { panic!("{r:?}") };
    let R::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[2] else { panic!("{r:?}") };
    (fh.object.clone(), o.stateid.clone(), o.rflags)
}

/// FATTR4_NUMLINKS of `fh`, or the status that refused it.
fn numlinks(env: &Env, s: &mut Session, fh: &nfs_fh4) -> Result<u32, nfsstat4> {
    let mask = vec![0, 1 << (FATTR4_NUMLINKS - 32)];
    let r = s.run(env, vec![putfh(fh), A::OP_GETATTR(GETATTR4args { attr_request: mask })]);
    if r.status != nfsstat4::NFS4_OK {
        return Err(r.status);
    }
    let R::OP_GETATTR(GETATTR4res::NFS4_OK(g)) = &r.resarray[1] else { panic!("{r:?}") };
    Ok(u32::from_be_bytes(g.obj_attributes.attr_vals[..4].try_into().unwrap()))
}

fn read(env: &Env, s: &mut Session, fh: &nfs_fh4, sid: &stateid4) -> Bytes {
    let r = s.run(env, vec![putfh(fh), A::OP_READ(READ4args { stateid: sid.clone(), offset: 0, count: 100 })]);
    ok(&r);
    let R::OP_READ(READ4res::NFS4_OK(rd)) = &r.resarray[1] else { panic!("{r:?}") };
    rd.data.clone()
}

fn close(env: &Env, s: &mut Session, fh: &nfs_fh4, sid: &stateid4) {
    let r = s.run(env, vec![putfh(fh), A::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: sid.clone() })]);
    ok(&r);
}

fn remove(env: &Env, s: &mut Session, file: &str) {
    let r = s.run(env, vec![putfh(&env.mount("/export").data), A::OP_REMOVE(REMOVE4args { target: name(file) })]);
    ok(&r);
}

#[test]
fn a_removed_open_file_lives_until_its_last_close() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_on("/export *(rw,insecure)\n", vec![localfs(&dir)]);
    let mut a = Session::ready(&env, "a");
    let mut b = Session::ready(&env, "b");
    let (fh, sa, rflags) = open_write(&env, &mut a, "o", "f", b"kept data");
    assert_ne!(rflags & OPEN4_RESULT_PRESERVE_UNLINKED, 0);
    // A second client's open of the same file holds it too.
    let (_, sb, _) = open_write(&env, &mut b, "o", "f", b"KEPT");
    remove(&env, &mut a, "f");
    assert!(!dir.path().join("export/f").exists());
    assert_eq!(numlinks(&env, &mut a, &fh), Ok(0));
    assert_eq!(&read(&env, &mut a, &fh, &sa)[..], b"KEPT data");
    close(&env, &mut a, &fh, &sa);
    assert_eq!(&read(&env, &mut b, &fh, &sb)[..], b"KEPT data");
    close(&env, &mut b, &fh, &sb);
    assert_eq!(numlinks(&env, &mut a, &fh), Err(nfsstat4::NFS4ERR_STALE));
}

#[test]
fn a_file_renamed_over_while_open_lives_until_closed() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_on("/export *(rw,insecure)\n", vec![localfs(&dir)]);
    let mut a = Session::ready(&env, "a");
    let (fh, sid, _) = open_write(&env, &mut a, "o", "old", b"old");
    let (nfh, nsid, _) = open_write(&env, &mut a, "o", "new", b"new");
    close(&env, &mut a, &nfh, &nsid);
    let export = putfh(&env.mount("/export").data);
    let rename = A::OP_RENAME(RENAME4args { oldname: name("new"), newname: name("old") });
    ok(&a.run(&env, vec![export.clone(), A::OP_SAVEFH, export, rename]));
    assert_eq!(numlinks(&env, &mut a, &fh), Ok(0));
    assert_eq!(&read(&env, &mut a, &fh, &sid)[..], b"old");
    close(&env, &mut a, &fh, &sid);
    assert_eq!(numlinks(&env, &mut a, &fh), Err(nfsstat4::NFS4ERR_STALE));
    assert_eq!(std::fs::read(dir.path().join("export/old")).unwrap(), b"new");
}

/// The lease of a client that vanished ends its opens, and the kept file
/// goes with them.
#[test]
fn a_removed_open_file_goes_when_its_clients_lease_expires() {
    let dir = tempfile::tempdir().unwrap();
    let nfs4 = Nfs4Settings { lease_secs: 10, courtesy_secs: 100, ..Nfs4Settings::default() };
    let settings = CoreSettings { nfs4, ..CoreSettings::default() };
    let mut env = env_on_with("/export *(rw,insecure)\n", vec![localfs(&dir)], settings);
    let clock = Arc::new(ManualClock::default());
    env.core =
        env.core.with_nfs4_env(clock.clone(), Arc::new(RecordingBackchannel::default()), Arc::new(MemStore::default()));
    let mut a = Session::ready(&env, "a");
    let (fh, _, _) = open_write(&env, &mut a, "o", "f", b"x");
    remove(&env, &mut a, "f");
    let mut b = Session::ready(&env, "b");
    assert_eq!(numlinks(&env, &mut b, &fh), Ok(0));
    // Past lease and courtesy (b's too), the state of both is purged.
    clock.advance(Duration::from_secs(200));
    let mut c = Session::ready(&env, "c");
    ok(&c.run(&env, vec![A::OP_PUTROOTFH]));
    assert_eq!(numlinks(&env, &mut c, &fh), Err(nfsstat4::NFS4ERR_STALE));
}

#[test]
fn no_promise_where_the_file_cannot_be_kept() {
    // MemFs frees a file with its last name.
    let env = rw_env();
    let mut a = Session::ready(&env, "a");
    assert_eq!(open_write(&env, &mut a, "o", "f", b"x").2 & OPEN4_RESULT_PRESERVE_UNLINKED, 0);
    // NFSv4.2 keeps the promise of 4.1.
    let dir = tempfile::tempdir().unwrap();
    let env = env_on("/export *(rw,insecure)\n", vec![localfs(&dir)]);
    let mut c = Session::ready_minor(&env, "c", 2);
    assert_ne!(open_write(&env, &mut c, "o", "f", b"x").2 & OPEN4_RESULT_PRESERVE_UNLINKED, 0);
}

/// The promise holds whoever removes the name: an NFSv3 client's REMOVE,
/// or its RENAME over the file, leaves the NFSv4.1 client's open file
/// readable until it is closed.
#[test]
fn an_nfsv3_removal_keeps_the_promise() {
    use proto::nfs3::*;
    let dir = tempfile::tempdir().unwrap();
    let env = env_on("/export *(rw,insecure)\n", vec![localfs(&dir)]);
    let mut a = Session::ready(&env, "a");
    let (fh, sid, rflags) = open_write(&env, &mut a, "o", "f", b"kept by v4");
    assert_ne!(rflags & OPEN4_RESULT_PRESERVE_UNLINKED, 0);
    let (gfh, gsid, _) = open_write(&env, &mut a, "o", "g", b"kept too");
    let root = env.mount("/export");
    let at = |n: &str| diropargs3 { dir: root.clone(), name: Bytes::copy_from_slice(n.as_bytes()) };
    let r: REMOVE3res = env.call(NFS, 3, NFS3_REMOVE, &REMOVE3args { object: at("f") }).result();
    assert!(matches!(r, REMOVE3res::NFS3_OK(_)), "{r:?}");
    std::fs::write(dir.path().join("export/h"), b"new g").unwrap();
    let r: RENAME3res = env.call(NFS, 3, NFS3_RENAME, &RENAME3args { from: at("h"), to: at("g") }).result();
    assert!(matches!(r, RENAME3res::NFS3_OK(_)), "{r:?}");
    assert!(!dir.path().join("export/f").exists());
    assert_eq!(std::fs::read(dir.path().join("export/g")).unwrap(), b"new g");
    assert_eq!(&read(&env, &mut a, &fh, &sid)[..], b"kept by v4");
    assert_eq!(&read(&env, &mut a, &gfh, &gsid)[..], b"kept too");
    assert_eq!(numlinks(&env, &mut a, &fh), Ok(0));
    close(&env, &mut a, &fh, &sid);
    close(&env, &mut a, &gfh, &gsid);
    assert_eq!(numlinks(&env, &mut a, &fh), Err(nfsstat4::NFS4ERR_STALE));
}

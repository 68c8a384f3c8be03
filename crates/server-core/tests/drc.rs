//! The duplicate request cache: retransmitted non-idempotent NFSv3 calls
//! and NFSv4.0 COMPOUNDs get the first execution's reply; everything else
//! runs again.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs3::*;
use proto::nfs4::{
    createtype4, fattr4, nfs_argop4, nfs_resop4, nfsstat4, COMPOUND4args, COMPOUND4res, CREATE4args, CREATE4res,
    LOOKUP4args,
};
use server_core::{CoreSettings, ManualClock, MemStore, NoBackchannel, Outcome};

/// Far from the xids `Env::next_xid` hands out.
const XID: u32 = 0x4000_0000;

fn at(dir: &nfs_fh3, name: &str) -> diropargs3 {
    diropargs3 { dir: dir.clone(), name: name_of(name) }
}

fn nfs3_record<A: xdr::Encode>(xid: u32, proc_: u32, args: &A) -> Bytes {
    call_record(xid, NFS, 3, proc_, &user(), &xdr::to_bytes(args))
}

fn remove_record(xid: u32, dir: &nfs_fh3, name: &str) -> Bytes {
    nfs3_record(xid, NFS3_REMOVE, &REMOVE3args { object: at(dir, name) })
}

fn mkdir_record(xid: u32, dir: &nfs_fh3, name: &str) -> Bytes {
    let args = MKDIR3args { r#where: at(dir, name), attributes: sattr3 { mode: Some(0o755), ..Default::default() } };
    nfs3_record(xid, NFS3_MKDIR, &args)
}

fn reply_bytes(o: &Outcome) -> Bytes {
    join(o.reply.as_ref().expect("a reply"))
}

fn mkdir_status(o: Outcome) -> nfsstat3 {
    status_of(&parse_reply(o).result::<MKDIR3res>())
}

fn settings(entries: usize, max_reply: usize, secs: u32) -> CoreSettings {
    CoreSettings { drc_entries: entries, drc_max_reply_bytes: max_reply, drc_secs: secs, ..CoreSettings::default() }
}

#[test]
fn retransmitted_remove_gets_the_first_reply() {
    let e = rw_env();
    let root = e.root();
    e.create_file(&root, "f");
    let rec = remove_record(XID, &root, "f");
    let first = e.raw(rec.clone());
    let again = e.raw(rec);
    assert_eq!(again.label, "rpc.drc_replay");
    assert!(again.ok);
    assert_eq!(reply_bytes(&first), reply_bytes(&again));
    assert_eq!(status_of(&parse_reply(first).result::<REMOVE3res>()), nfsstat3::NFS3_OK);
    assert_eq!(status_of(&parse_reply(again).result::<REMOVE3res>()), nfsstat3::NFS3_OK);
    assert_eq!(e.lookup(&root, "f").unwrap_err(), nfsstat3::NFS3ERR_NOENT);
}

#[test]
fn retransmitted_mkdir_gets_the_first_reply() {
    let e = rw_env();
    let root = e.root();
    let rec = mkdir_record(XID, &root, "d");
    let first = e.raw(rec.clone());
    let again = e.raw(rec);
    assert_eq!(reply_bytes(&first), reply_bytes(&again));
    assert_eq!(mkdir_status(first), nfsstat3::NFS3_OK);
    assert_eq!(mkdir_status(again), nfsstat3::NFS3_OK);
    assert!(e.lookup(&root, "d").is_ok());
}

#[test]
fn same_xid_with_other_arguments_runs() {
    let e = rw_env();
    let root = e.root();
    e.create_file(&root, "a");
    e.create_file(&root, "b");
    let first = e.raw(remove_record(XID, &root, "a"));
    let other = e.raw(remove_record(XID, &root, "b"));
    assert_ne!(other.label, "rpc.drc_replay");
    assert_eq!(status_of(&parse_reply(first).result::<REMOVE3res>()), nfsstat3::NFS3_OK);
    assert_eq!(status_of(&parse_reply(other).result::<REMOVE3res>()), nfsstat3::NFS3_OK);
    assert_eq!(e.lookup(&root, "b").unwrap_err(), nfsstat3::NFS3ERR_NOENT);
    // Another user on the same host with the same xid and arguments is a
    // different call too.
    let as_other =
        call_record(XID, NFS, 3, NFS3_REMOVE, &common::root(), &xdr::to_bytes(&REMOVE3args { object: at(&root, "b") }));
    let r = e.raw(as_other);
    assert_ne!(r.label, "rpc.drc_replay");
    assert_eq!(status_of(&parse_reply(r).result::<REMOVE3res>()), nfsstat3::NFS3ERR_NOENT);
}

#[test]
fn keyed_by_address_not_port() {
    let e = rw_env();
    let root = e.root();
    let rec = mkdir_record(XID, &root, "d");
    assert_eq!(mkdir_status(e.core.handle(rec.clone(), &peer("127.0.0.1:700"))), nfsstat3::NFS3_OK);
    // A reconnected client resends from a new port: still a retransmission.
    let r = e.core.handle(rec.clone(), &peer("127.0.0.1:701"));
    assert_eq!(r.label, "rpc.drc_replay");
    assert_eq!(mkdir_status(r), nfsstat3::NFS3_OK);
    // Another host that happens to use the same xid is a new call.
    let r = e.core.handle(rec, &peer("127.0.0.2:700"));
    assert_ne!(r.label, "rpc.drc_replay");
    assert_eq!(mkdir_status(r), nfsstat3::NFS3ERR_EXIST);
}

#[test]
fn idempotent_calls_are_not_cached() {
    let e = rw_env();
    let root = e.root();
    let fh = e.create_file(&root, "f");
    let getattr = nfs3_record(XID, NFS3_GETATTR, &GETATTR3args { object: fh.clone() });
    let mode = |o: Outcome| match parse_reply(o).result::<GETATTR3res>() {
        GETATTR3res::NFS3_OK(ok) => ok.obj_attributes.mode,
        other => panic!("{other:?}"),
    };
    assert_eq!(mode(e.raw(getattr.clone())), 0o644);
    let set = SETATTR3args {
        object: fh.clone(),
        new_attributes: sattr3 { mode: Some(0o600), ..Default::default() },
        guard: None,
    };
    let r: SETATTR3res = e.nfs(NFS3_SETATTR, &set);
    assert_eq!(status_of(&r), nfsstat3::NFS3_OK);
    assert_eq!(mode(e.raw(getattr)), 0o600);

    e.write(&fh, 0, b"old", stable_how::FILE_SYNC);
    let read = nfs3_record(XID + 1, NFS3_READ, &READ3args { file: fh.clone(), offset: 0, count: 16 });
    let data = |o: Outcome| match parse_reply(o).result::<READ3res>() {
        READ3res::NFS3_OK(ok) => ok.data,
        other => panic!("{other:?}"),
    };
    assert_eq!(&data(e.raw(read.clone()))[..], b"old");
    e.write(&fh, 0, b"new", stable_how::FILE_SYNC);
    assert_eq!(&data(e.raw(read))[..], b"new");
}

fn name4(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn mkdir4_ops(name: &str) -> Vec<nfs_argop4> {
    vec![
        nfs_argop4::OP_PUTROOTFH,
        nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: name4("export") }),
        nfs_argop4::OP_CREATE(CREATE4args {
            objtype: createtype4::NF4DIR,
            objname: name4(name),
            createattrs: fattr4 { attrmask: vec![], attr_vals: Bytes::new() },
        }),
    ]
}

fn compound_record(xid: u32, minor: u32, ops: Vec<nfs_argop4>) -> Bytes {
    let args = COMPOUND4args { tag: name4("drc"), minorversion: minor, argarray: ops };
    call_record(xid, NFS4, 4, 1, &user(), &xdr::to_bytes(&args))
}

fn compound_status(o: Outcome) -> nfsstat4 {
    parse_reply(o).result::<COMPOUND4res>().status
}

#[test]
fn retransmitted_v40_create_gets_the_first_reply() {
    let e = rw_env();
    let rec = compound_record(XID, 0, mkdir4_ops("d"));
    let first = e.raw(rec.clone());
    let first_bytes = reply_bytes(&first);
    let r = parse_reply(first).result::<COMPOUND4res>();
    ok(&r);
    assert!(matches!(r.resarray.last(), Some(nfs_resop4::OP_CREATE(CREATE4res::NFS4_OK(_)))));
    // As pynfs RPLY14 does: the same call three times.
    for _ in 0..2 {
        let again = e.raw(rec.clone());
        assert_eq!(again.label, "rpc.drc_replay");
        assert_eq!(reply_bytes(&again), first_bytes);
        assert_eq!(compound_status(again), nfsstat4::NFS4_OK);
    }
    // A new xid is a new call.
    let other = e.raw(compound_record(XID + 1, 0, mkdir4_ops("d")));
    assert_eq!(compound_status(other), nfsstat4::NFS4ERR_EXIST);
}

#[test]
fn v41_compounds_are_left_to_the_session_reply_cache() {
    let e = rw_env();
    let mut s = Session::new(&e, "drc-client");
    let mut ops = vec![s.sequence(0)];
    ops.extend(mkdir4_ops("d"));
    let rec = compound_record(XID, 1, ops);
    let first = e.raw(rec.clone());
    assert_eq!(compound_status(first), nfsstat4::NFS4_OK);
    let again = e.raw(rec);
    assert_eq!(again.label, "nfs4.COMPOUND");
    assert_eq!(compound_status(again), nfsstat4::NFS4_OK);
}

#[test]
fn oldest_entry_is_evicted_when_full() {
    let e = env_with("/export *(rw,insecure)\n", settings(2, 4096, 120));
    let root = e.root();
    let recs: Vec<Bytes> = (0..3).map(|i| mkdir_record(XID + i, &root, &format!("d{i}"))).collect();
    for r in &recs {
        assert_eq!(mkdir_status(e.raw(r.clone())), nfsstat3::NFS3_OK);
    }
    assert_eq!(mkdir_status(e.raw(recs[2].clone())), nfsstat3::NFS3_OK);
    assert_eq!(mkdir_status(e.raw(recs[1].clone())), nfsstat3::NFS3_OK);
    let evicted = e.raw(recs[0].clone());
    assert_ne!(evicted.label, "rpc.drc_replay");
    assert_eq!(mkdir_status(evicted), nfsstat3::NFS3ERR_EXIST);
}

#[test]
fn zero_entries_disables_the_cache() {
    let e = env_with("/export *(rw,insecure)\n", settings(0, 4096, 120));
    let root = e.root();
    let rec = mkdir_record(XID, &root, "d");
    assert_eq!(mkdir_status(e.raw(rec.clone())), nfsstat3::NFS3_OK);
    assert_eq!(mkdir_status(e.raw(rec)), nfsstat3::NFS3ERR_EXIST);
}

#[test]
fn replies_above_the_size_limit_are_not_kept() {
    let e = env_with("/export *(rw,insecure)\n", settings(16, 32, 120));
    let root = e.root();
    let rec = mkdir_record(XID, &root, "d");
    assert_eq!(mkdir_status(e.raw(rec.clone())), nfsstat3::NFS3_OK);
    assert_eq!(mkdir_status(e.raw(rec)), nfsstat3::NFS3ERR_EXIST);
}

#[test]
fn entries_expire_after_drc_secs() {
    let mut e = env_with("/export *(rw,insecure)\n", settings(16, 4096, 10));
    let clock = Arc::new(ManualClock::default());
    e.core = e.core.with_nfs4_env(clock.clone(), Arc::new(NoBackchannel), Arc::new(MemStore::default()));
    let root = e.root();
    let rec = mkdir_record(XID, &root, "d");
    assert_eq!(mkdir_status(e.raw(rec.clone())), nfsstat3::NFS3_OK);
    clock.advance(Duration::from_secs(9));
    let r = e.raw(rec.clone());
    assert_eq!(r.label, "rpc.drc_replay");
    assert_eq!(mkdir_status(r), nfsstat3::NFS3_OK);
    clock.advance(Duration::from_secs(1));
    assert_eq!(mkdir_status(e.raw(rec)), nfsstat3::NFS3ERR_EXIST);
}

//! COMPOUND framing: minor versions, illegal operations, the pseudo root.

mod common;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs4::*;

#[test]
fn minor_version_3_is_refused() {
    let env = rw_env();
    let r = env.compound(3, vec![nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
    assert!(r.resarray.is_empty());
}

#[test]
fn root_handle_round_trips() {
    let env = rw_env();
    let r = env.compound(0, vec![nfs_argop4::OP_PUTROOTFH, nfs_argop4::OP_GETFH]);
    ok(&r);
    let nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[1] else { panic!() };
    let r = env.compound(0, vec![nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.object.clone() }), nfs_argop4::OP_GETFH]);
    ok(&r);
}

#[test]
fn forged_handle_is_badhandle() {
    let env = rw_env();
    let r = env.compound(0, vec![nfs_argop4::OP_PUTFH(PUTFH4args { object: Bytes::from_static(&[9; 40]) })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_BADHANDLE);
}

#[test]
fn no_filehandle_and_restorefh() {
    let env = rw_env();
    let r = env.compound(0, vec![nfs_argop4::OP_GETFH]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_NOFILEHANDLE);
    let r = env.compound(0, vec![nfs_argop4::OP_PUTROOTFH, nfs_argop4::OP_RESTOREFH]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_RESTOREFH);
}

#[test]
fn unknown_opcode_is_op_illegal() {
    let env = rw_env();
    // tag "t", minor 0, 2 ops: PUTROOTFH, then opcode 9999.
    let mut raw = Vec::new();
    for w in [1u32, u32::from_be_bytes(*b"t\0\0\0"), 0, 2, 24, 9999] {
        raw.extend_from_slice(&w.to_be_bytes());
    }
    raw[4..8].copy_from_slice(b"t\0\0\0");
    let r: COMPOUND4res = env.call_as(NFS4, 4, 1, &user(), &raw).result();
    assert_eq!(r.status, nfsstat4::NFS4ERR_OP_ILLEGAL);
    assert_eq!(r.resarray.len(), 2);
    assert!(matches!(r.resarray[1], nfs_resop4::OP_ILLEGAL(_)));
}

#[test]
fn v41_ops_outside_a_session() {
    let env = rw_env();
    let r = env.compound(1, vec![nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_OP_NOT_IN_SESSION);
    // SEQUENCE is a 4.1 operation: illegal in minor version 0.
    let r = env.compound(0, vec![nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args { rca_one_fs: false })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_OP_ILLEGAL);
}

//! NFSv4 open, lock and delegation state through whole COMPOUNDs:
//! OPEN/WRITE/READ/CLOSE, share reservations, byte-range locks between
//! clients, OPEN_DOWNGRADE, TEST_STATEID/FREE_STATEID, delegations.

mod common;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs4::*;
use std::sync::Arc;

use nfs_argop4 as A;
use nfs_resop4 as R;

/// An NFSv4.0 client id: SETCLIENTID + SETCLIENTID_CONFIRM, or (while
/// the server answers SETCLIENTID with NOTSUPP) an id of our own, which
/// lease renewal then does not check.
fn client40(env: &Env, name: &str) -> clientid4 {
    let args = SETCLIENTID4args {
        client: nfs_client_id4 { verifier: [7; 8], id: Bytes::copy_from_slice(name.as_bytes()) },
        callback: cb_client4 {
            cb_program: 0x40000000,
            cb_location: netaddr4 {
                na_r_netid: Bytes::from_static(b"tcp"),
                na_r_addr: Bytes::from_static(b"127.0.0.1.3.4"),
            },
        },
        callback_ident: 1,
    };
    let r = env.compound(0, vec![A::OP_SETCLIENTID(args)]);
    match &r.resarray[0] {
        R::OP_SETCLIENTID(SETCLIENTID4res::NFS4_OK(ok)) => {
            let c = SETCLIENTID_CONFIRM4args { clientid: ok.clientid, setclientid_confirm: ok.setclientid_confirm };
            ok_(&env.compound(0, vec![A::OP_SETCLIENTID_CONFIRM(c)]));
            ok.clientid
        }
        _ => name.bytes().fold(0x1000u64, |a, b| a.wrapping_mul(31).wrapping_add(b.into())),
    }
}

fn ok_(r: &COMPOUND4res) {
    ok(r)
}

/// The export's root as the current file handle (two operations, so
/// that the results of what follows sit at fixed indexes). The handle
/// comes from MOUNT: NFSv3 and NFSv4 handles are the same.
fn export_ops(env: &Env) -> Vec<nfs_argop4> {
    vec![A::OP_PUTROOTFH, A::OP_PUTFH(PUTFH4args { object: env.mount("/export").data })]
}

fn open_res(r: &COMPOUND4res, i: usize) -> OPEN4resok {
    opened(r, i).clone()
}

/// A 4.0 open (confirmed when the server asks): (file handle, stateid).
fn open40(
    env: &Env,
    seqid: &mut u32,
    client: clientid4,
    owner: &str,
    file: &str,
    access: u32,
    deny: u32,
) -> (nfs_fh4, stateid4) {
    let mut ops = export_ops(env);
    ops.push(A::OP_OPEN(open_args(*seqid, client, owner, file, access, deny, true)));
    ops.push(A::OP_GETFH);
    let r = env.compound(0, ops);
    ok(&r);
    *seqid += 1;
    let o = open_res(&r, 2);
    assert_ne!(o.rflags & OPEN4_RESULT_LOCKTYPE_POSIX, 0);
    let fh = fh_res(&r, 3);
    let mut sid = o.stateid;
    if o.rflags & OPEN4_RESULT_CONFIRM != 0 {
        let r = env.compound(
            0,
            vec![
                A::OP_PUTFH(PUTFH4args { object: fh.clone() }),
                A::OP_OPEN_CONFIRM(OPEN_CONFIRM4args { open_stateid: sid.clone(), seqid: *seqid }),
            ],
        );
        ok(&r);
        *seqid += 1;
        let R::OP_OPEN_CONFIRM(OPEN_CONFIRM4res::NFS4_OK(c)) = &r.resarray[1] else { panic!() };
        sid = c.open_stateid.clone();
    }
    (fh, sid)
}

fn anon() -> stateid4 {
    ANON_STATEID
}

#[test]
fn v40_open_write_read_close() {
    let env = rw_env();
    let c = client40(&env, "c1");
    let mut seq = 1;
    let (fh, sid) = open40(&env, &mut seq, c, "owner", "f1", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE);
    let r = env.compound(0, vec![putfh(&fh), write_op(&sid, 0, b"hello world"), read_op(&sid, 6, 100)]);
    ok(&r);
    let R::OP_WRITE(WRITE4res::NFS4_OK(w)) = &r.resarray[1] else { panic!() };
    assert_eq!(w.count, 11);
    let R::OP_READ(READ4res::NFS4_OK(rd)) = &r.resarray[2] else { panic!() };
    assert_eq!(&rd.data[..], b"world");
    assert!(rd.eof);
    // An older seqid of the stateid is OLD_STATEID.
    let old = stateid4 { seqid: sid.seqid - 1, ..sid.clone() };
    if old.seqid > 0 {
        let r = env.compound(0, vec![putfh(&fh), read_op(&old, 0, 1)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_OLD_STATEID);
    }
    // A forged one is BAD_STATEID.
    let mut forged = sid.clone();
    forged.other[11] ^= 0xff;
    let r = env.compound(0, vec![putfh(&fh), read_op(&forged, 0, 1)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_BAD_STATEID);
    // CLOSE, and its retransmission is replayed.
    let close = A::OP_CLOSE(CLOSE4args { seqid: seq, open_stateid: sid.clone() });
    let r1 = env.compound(0, vec![putfh(&fh), close.clone()]);
    ok(&r1);
    let r2 = env.compound(0, vec![putfh(&fh), close]);
    ok(&r2);
    assert_eq!(r1.resarray[1], r2.resarray[1]);
    seq += 1;
    // The stateid is gone; a seqid out of order is BAD_SEQID.
    let r = env.compound(0, vec![putfh(&fh), read_op(&sid, 0, 1)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_BAD_STATEID);
    let mut ops = export_ops(&env);
    ops.push(A::OP_OPEN(open_args(seq + 5, c, "owner", "f1", OPEN4_SHARE_ACCESS_READ, 0, false)));
    assert_eq!(env.compound(0, ops).status, nfsstat4::NFS4ERR_BAD_SEQID);
}

#[test]
fn v40_openmode_and_anonymous_io() {
    let env = rw_env();
    let c = client40(&env, "c1");
    let mut seq = 1;
    let (fh, sid) = open40(&env, &mut seq, c, "o", "ro", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE);
    let r = env.compound(0, vec![putfh(&fh), write_op(&sid, 0, b"x")]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_OPENMODE);
    // Anonymous writes meet the deny-write reservation; reads pass.
    let r = env.compound(0, vec![putfh(&fh), write_op(&anon(), 0, b"x")]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_LOCKED);
    ok(&env.compound(0, vec![putfh(&fh), read_op(&anon(), 0, 1)]));
    // OPEN of a directory.
    env.mkdir(&env.mount("/export"), "d");
    let mut ops = export_ops(&env);
    ops.push(A::OP_OPEN(open_args(seq, c, "o", "d", OPEN4_SHARE_ACCESS_READ, 0, false)));
    assert_eq!(env.compound(0, ops).status, nfsstat4::NFS4ERR_ISDIR);
}

#[test]
fn v40_share_deny_conflict_and_downgrade() {
    let env = rw_env();
    let c1 = client40(&env, "c1");
    let c2 = client40(&env, "c2");
    let (mut s1, mut s2) = (1, 1);
    let (fh, sid) = open40(&env, &mut s1, c1, "a", "shared", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE);
    let mut ops = export_ops(&env);
    ops.push(A::OP_OPEN(open_args(s2, c2, "b", "shared", OPEN4_SHARE_ACCESS_WRITE, 0, false)));
    let r = env.compound(0, ops);
    assert_eq!(r.status, nfsstat4::NFS4ERR_SHARE_DENIED);
    s2 += 1;
    // Downgrade to READ/NONE: "WRITE" alone was never opened -> INVAL.
    let dg = |seqid, sid: &stateid4, access, deny| {
        A::OP_OPEN_DOWNGRADE(OPEN_DOWNGRADE4args {
            open_stateid: sid.clone(),
            seqid,
            share_access: access,
            share_deny: deny,
        })
    };
    let r = env.compound(0, vec![putfh(&fh), dg(s1, &sid, OPEN4_SHARE_ACCESS_READ, 0)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
    s1 += 1;
    // Open again for READ/NONE by the same owner (upgrade: same other),
    // then downgrade to it.
    let mut ops = vec![putfh(&fh)];
    ops.push(A::OP_OPEN(OPEN4args {
        claim: open_claim4::CLAIM_PREVIOUS(open_delegation_type4::OPEN_DELEGATE_NONE),
        ..open_args(s1, c1, "a", "shared", OPEN4_SHARE_ACCESS_READ, 0, false)
    }));
    let r = env.compound(0, ops);
    assert_eq!(r.status, nfsstat4::NFS4ERR_NO_GRACE);
    s1 += 1;
    let mut ops = export_ops(&env);
    ops.push(A::OP_OPEN(open_args(s1, c1, "a", "shared", OPEN4_SHARE_ACCESS_READ, 0, false)));
    let r = env.compound(0, ops);
    ok(&r);
    s1 += 1;
    let up = open_res(&r, 2).stateid;
    assert_eq!(up.other, sid.other);
    assert_eq!(up.seqid, sid.seqid + 1);
    let r = env.compound(0, vec![putfh(&fh), dg(s1, &up, OPEN4_SHARE_ACCESS_READ, 0)]);
    ok(&r);
    s1 += 1;
    let R::OP_OPEN_DOWNGRADE(OPEN_DOWNGRADE4res::NFS4_OK(d)) = &r.resarray[1] else { panic!() };
    assert_eq!(d.open_stateid.seqid, up.seqid + 1);
    // Now the other client may open for writing.
    let mut ops = export_ops(&env);
    ops.push(A::OP_OPEN(open_args(s2, c2, "b", "shared", OPEN4_SHARE_ACCESS_WRITE, 0, false)));
    ok(&env.compound(0, ops));
    let _ = s1;
}

#[test]
fn v40_locks_between_clients() {
    let env = rw_env();
    let c1 = client40(&env, "c1");
    let c2 = client40(&env, "c2");
    let (mut s1, mut s2) = (1, 1);
    let (fh, o1) = open40(&env, &mut s1, c1, "a", "locked", OPEN4_SHARE_ACCESS_BOTH, 0);
    let (_, o2) = open40(&env, &mut s2, c2, "b", "locked", OPEN4_SHARE_ACCESS_BOTH, 0);
    let r = env.compound(0, vec![putfh(&fh), lock_new(s1, &o1, c1, "la", nfs_lock_type4::WRITE_LT, 0, 100)]);
    ok(&r);
    let R::OP_LOCK(LOCK4res::NFS4_OK(l1)) = &r.resarray[1] else { panic!() };
    let l1 = l1.lock_stateid.clone();
    // The other client is denied and told who holds the lock.
    let r = env.compound(0, vec![putfh(&fh), lock_new(s2, &o2, c2, "lb", nfs_lock_type4::READ_LT, 50, u64::MAX)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DENIED);
    s2 += 1;
    let R::OP_LOCK(LOCK4res::NFS4ERR_DENIED(d)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!((d.offset, d.length, d.locktype), (0, 100, nfs_lock_type4::WRITE_LT));
    assert_eq!(d.owner, lock_owner4 { clientid: c1, owner: name("la") });
    // LOCKT agrees; bad ranges are INVAL.
    let lockt = |off, len| {
        A::OP_LOCKT(LOCKT4args {
            locktype: nfs_lock_type4::WRITE_LT,
            offset: off,
            length: len,
            owner: lock_owner4 { clientid: c2, owner: name("lb") },
        })
    };
    assert_eq!(env.compound(0, vec![putfh(&fh), lockt(99, 1)]).status, nfsstat4::NFS4ERR_DENIED);
    ok(&env.compound(0, vec![putfh(&fh), lockt(100, u64::MAX)]));
    assert_eq!(env.compound(0, vec![putfh(&fh), lockt(5, 0)]).status, nfsstat4::NFS4ERR_INVAL);
    assert_eq!(env.compound(0, vec![putfh(&fh), lockt(u64::MAX, 2)]).status, nfsstat4::NFS4ERR_INVAL);
    // RELEASE_LOCKOWNER while locks are held.
    let rel =
        A::OP_RELEASE_LOCKOWNER(RELEASE_LOCKOWNER4args { lock_owner: lock_owner4 { clientid: c1, owner: name("la") } });
    assert_eq!(env.compound(0, vec![rel.clone()]).status, nfsstat4::NFS4ERR_LOCKS_HELD);
    // LOCKU, then the other client gets its lock.
    let r = env.compound(
        0,
        vec![
            putfh(&fh),
            A::OP_LOCKU(LOCKU4args {
                locktype: nfs_lock_type4::WRITE_LT,
                seqid: 1,
                lock_stateid: l1.clone(),
                offset: 0,
                length: 100,
            }),
        ],
    );
    ok(&r);
    let R::OP_LOCKU(LOCKU4res::NFS4_OK(u)) = &r.resarray[1] else { panic!() };
    assert_eq!(u.seqid, l1.seqid + 1);
    let r = env.compound(0, vec![putfh(&fh), lock_new(s2, &o2, c2, "lb", nfs_lock_type4::READ_LT, 50, u64::MAX)]);
    ok(&r);
    ok(&env.compound(0, vec![rel]));
}

fn export_ops41(env: &Env) -> Vec<nfs_argop4> {
    export_ops(env)
}

fn open41(s: &mut Session, env: &Env, owner: &str, file: &str, access: u32, deny: u32) -> COMPOUND4res {
    let mut ops = export_ops41(env);
    ops.push(A::OP_OPEN(open_args(0, 0, owner, file, access, deny, true)));
    ops.push(A::OP_GETFH);
    s.run(env, ops)
}

#[test]
fn v41_open_write_read_close() {
    let env = rw_env();
    let mut s = Session::ready(&env, "c1");
    let cur = stateid4 { seqid: 1, other: [0; 12] };
    let mut ops = export_ops41(&env);
    ops.push(A::OP_OPEN(open_args(0, 0, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0, true)));
    // The current stateid carries OPEN's stateid into WRITE, READ, CLOSE.
    ops.push(write_op(&cur, 0, b"abc"));
    ops.push(read_op(&cur, 0, 10));
    ops.push(A::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: cur.clone() }));
    let r = s.run(&env, ops);
    ok(&r);
    let o = open_res(&r, 2);
    assert_eq!(o.rflags & OPEN4_RESULT_CONFIRM, 0);
    let R::OP_READ(READ4res::NFS4_OK(rd)) = &r.resarray[4] else { panic!() };
    assert_eq!(&rd.data[..], b"abc");
    let R::OP_CLOSE(CLOSE4res::NFS4_OK(c)) = &r.resarray[5] else { panic!() };
    assert_eq!(*c, stateid4 { seqid: u32::MAX, other: [0; 12] });
}

#[test]
fn v41_share_deny_and_locks() {
    let env = rw_env();
    let mut a = Session::ready(&env, "a");
    let mut b = Session::ready(&env, "b");
    let r = open41(&mut a, &env, "o", "f", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE);
    ok(&r);
    let oa = open_res(&r, 2).stateid;
    let fh = fh_res(&r, 3);
    let r = open41(&mut b, &env, "o", "f", OPEN4_SHARE_ACCESS_WRITE, 0);
    assert_eq!(r.status, nfsstat4::NFS4ERR_SHARE_DENIED);
    let r = open41(&mut b, &env, "o", "f", OPEN4_SHARE_ACCESS_READ, 0);
    ok(&r);
    let ob = open_res(&r, 2).stateid;
    let r = a.run(&env, vec![putfh(&fh), lock_new(0, &oa, 0, "la", nfs_lock_type4::WRITE_LT, 0, u64::MAX)]);
    ok(&r);
    let R::OP_LOCK(LOCK4res::NFS4_OK(la)) = &r.resarray[1] else { panic!() };
    let r = b.run(&env, vec![putfh(&fh), lock_new(0, &ob, 0, "lb", nfs_lock_type4::READ_LT, 10, 1)]);
    let R::OP_LOCK(LOCK4res::NFS4ERR_DENIED(d)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!(d.owner.clientid, a.clientid);
    assert_eq!(d.length, u64::MAX);
    // TEST_STATEID: a's stateids are good for a, bad for b.
    let ts = |ids: Vec<stateid4>| A::OP_TEST_STATEID(TEST_STATEID4args { ts_stateids: ids });
    let r = a.run(&env, vec![ts(vec![oa.clone(), la.lock_stateid.clone(), anon()])]);
    let R::OP_TEST_STATEID(TEST_STATEID4res::NFS4_OK(t)) = &r.resarray[0] else { panic!() };
    assert_eq!(t.tsr_status_codes, vec![nfsstat4::NFS4_OK, nfsstat4::NFS4_OK, nfsstat4::NFS4ERR_BAD_STATEID]);
    let r = b.run(&env, vec![ts(vec![oa.clone()])]);
    let R::OP_TEST_STATEID(TEST_STATEID4res::NFS4_OK(t)) = &r.resarray[0] else { panic!() };
    assert_eq!(t.tsr_status_codes, vec![nfsstat4::NFS4ERR_BAD_STATEID]);
    // FREE_STATEID: an open or a lock stateid with locks is LOCKS_HELD.
    let free = |s: &stateid4| A::OP_FREE_STATEID(FREE_STATEID4args { fsa_stateid: s.clone() });
    assert_eq!(a.run(&env, vec![free(&oa)]).status, nfsstat4::NFS4ERR_LOCKS_HELD);
    assert_eq!(a.run(&env, vec![free(&la.lock_stateid)]).status, nfsstat4::NFS4ERR_LOCKS_HELD);
    let r = a.run(
        &env,
        vec![
            putfh(&fh),
            A::OP_LOCKU(LOCKU4args {
                locktype: nfs_lock_type4::WRITE_LT,
                seqid: 0,
                lock_stateid: la.lock_stateid.clone(),
                offset: 0,
                length: u64::MAX,
            }),
        ],
    );
    ok(&r);
    let R::OP_LOCKU(LOCKU4res::NFS4_OK(unlocked)) = &r.resarray[1] else { panic!() };
    ok(&a.run(&env, vec![free(unlocked)]));
    let r = a.run(&env, vec![ts(vec![unlocked.clone()])]);
    let R::OP_TEST_STATEID(TEST_STATEID4res::NFS4_OK(t)) = &r.resarray[0] else { panic!() };
    assert_eq!(t.tsr_status_codes, vec![nfsstat4::NFS4ERR_BAD_STATEID]);
    // b's lock now goes through.
    ok(&b.run(&env, vec![putfh(&fh), lock_new(0, &ob, 0, "lb", nfs_lock_type4::READ_LT, 10, 1)]));
}

// Delegation grant and recall need a back channel that answers CB_NULL:
// crates/cli/tests/nfs4.rs tests them over TCP.

#[test]
fn v41_an_owners_own_deny_binds_its_upgrades() {
    let env = rw_env();
    let mut a = Session::ready(&env, "a");
    ok(&open41(&mut a, &env, "o", "g", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_READ));
    // Already holding read access does not let the same owner read past
    // its own DENY_READ (RFC 7530 9.9), nor deny what it accesses.
    let r = open41(&mut a, &env, "o", "g", OPEN4_SHARE_ACCESS_READ, 0);
    assert_eq!(r.status, nfsstat4::NFS4ERR_SHARE_DENIED);
    let r = open41(&mut a, &env, "o", "g", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_WRITE);
    assert_eq!(r.status, nfsstat4::NFS4ERR_SHARE_DENIED);
    ok(&open41(&mut a, &env, "o", "g", OPEN4_SHARE_ACCESS_WRITE, 0));
}

fn size_attr(n: u64) -> fattr4 {
    fattr4 { attrmask: vec![1 << FATTR4_SIZE], attr_vals: Bytes::copy_from_slice(&n.to_be_bytes()) }
}

#[test]
fn v41_unchecked_open_of_an_existing_file_only_truncates() {
    let env = rw_env();
    let mut a = Session::ready(&env, "a");
    let unchecked = |owner: &str, size| {
        let mut args = open_args(0, 0, owner, "u", OPEN4_SHARE_ACCESS_BOTH, 0, true);
        args.openhow = openflag4::OPEN4_CREATE(createhow4::UNCHECKED4(size_attr(size)));
        let mut ops = export_ops41(&env);
        ops.push(A::OP_OPEN(args));
        ops.push(read_op(&stateid4 { seqid: 1, other: [0; 12] }, 0, 100));
        ops
    };
    let read_len = |r: &COMPOUND4res| match &r.resarray[3] {
        R::OP_READ(READ4res::NFS4_OK(rd)) => rd.data.len(),
        other => panic!("{other:?}"),
    };
    let r = a.run(&env, unchecked("o1", 32));
    ok(&r);
    assert_eq!(open_res(&r, 2).attrset, vec![1 << FATTR4_SIZE]);
    assert_eq!(read_len(&r), 32);
    // The file exists: its attributes stay (RFC 8881 18.16.3)...
    let r = a.run(&env, unchecked("o2", 16));
    ok(&r);
    assert!(open_res(&r, 2).attrset.iter().all(|w| *w == 0));
    assert_eq!(read_len(&r), 32);
    // ...except a size of zero, which truncates.
    let r = a.run(&env, unchecked("o3", 0));
    ok(&r);
    assert_eq!(open_res(&r, 2).attrset, vec![1 << FATTR4_SIZE]);
    assert_eq!(read_len(&r), 0);
}

#[test]
fn v41_a_client_that_wants_no_delegation_is_told_why() {
    let env = rw_env();
    let mut a = Session::ready(&env, "a");
    let r = open41(&mut a, &env, "o", "n", OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, 0);
    ok(&r);
    assert_eq!(
        open_res(&r, 2).delegation,
        open_delegation4::OPEN_DELEGATE_NONE_EXT(open_none_delegation4::default(why_no_delegation4::WND4_NOT_WANTED))
    );
    // No wish expressed: plain NONE (this session has no back channel).
    let r = open41(&mut a, &env, "o2", "n", OPEN4_SHARE_ACCESS_READ, 0);
    ok(&r);
    assert_eq!(open_res(&r, 2).delegation, open_delegation4::OPEN_DELEGATE_NONE);
}

#[test]
fn v41_new_opens_wait_for_reclaim_complete() {
    let env = rw_env();
    let mut a = Session::new(&env, "a");
    let r = open41(&mut a, &env, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0);
    assert_eq!(r.status, nfsstat4::NFS4ERR_GRACE, "before RECLAIM_COMPLETE (RFC 8881 18.51.3)");
    a.reclaim_complete(&env);
    ok(&open41(&mut a, &env, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0));
}

/// Two clients with "f" open for reading and writing, `a`'s lock-owner
/// "la" holding a write lock on its first 10 bytes.
struct TwoOpeners {
    a: Session,
    b: Session,
    fh: nfs_fh4,
    /// `b`'s open stateid.
    ob: stateid4,
    /// `a`'s lock stateid.
    la: stateid4,
}

fn two_openers_one_lock(env: &Env) -> TwoOpeners {
    let mut a = Session::ready(env, "a");
    let mut b = Session::ready(env, "b");
    let r = open41(&mut a, env, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0);
    ok(&r);
    let (oa, fh) = (open_res(&r, 2).stateid, fh_res(&r, 3));
    let r = open41(&mut b, env, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0);
    ok(&r);
    let ob = open_res(&r, 2).stateid;
    let r = a.run(env, vec![putfh(&fh), lock_new(0, &oa, 0, "la", nfs_lock_type4::WRITE_LT, 0, 10)]);
    let R::OP_LOCK(LOCK4res::NFS4_OK(la)) = &r.resarray[1] else { panic!("{r:?}") };
    TwoOpeners { a, b, fh, ob, la: la.lock_stateid.clone() }
}

/// With `mandatory_locks`, READ and WRITE over a range another lock-owner
/// holds a conflicting lock on are NFS4ERR_LOCKED (RFC 8881 section
/// 9.1.4); the holder's own I/O under its lock stateid goes through, and
/// so does I/O outside the range. Without it (the default) locks only
/// stop other LOCKs.
#[test]
fn mandatory_locks_bind_io_over_their_range() {
    for mandatory in [true, false] {
        let nfs4 = server_core::state::Nfs4Settings { mandatory_locks: mandatory, ..Default::default() };
        let env = env_with("/export *(rw,insecure)\n", server_core::CoreSettings { nfs4, ..Default::default() });
        let TwoOpeners { mut a, mut b, fh, ob, la } = two_openers_one_lock(&env);
        let locked = if mandatory { nfsstat4::NFS4ERR_LOCKED } else { nfsstat4::NFS4_OK };
        assert_eq!(b.run(&env, vec![putfh(&fh), write_op(&ob, 5, b"x")]).status, locked);
        assert_eq!(b.run(&env, vec![putfh(&fh), read_op(&ob, 0, 4)]).status, locked);
        assert_eq!(b.run(&env, vec![putfh(&fh), read_op(&anon(), 8, 4)]).status, locked, "special stateid");
        // The locks live in the file's shard: I/O they allow is let
        // through there, without the tables.
        let tables = env.core.nfs4_state_locked();
        ok(&b.run(&env, vec![putfh(&fh), write_op(&ob, 10, b"y")]));
        ok(&a.run(&env, vec![putfh(&fh), write_op(&la, 0, b"mine")]));
        assert_eq!(env.core.nfs4_state_locked() - tables, 0, "I/O the locks allow took the tables");
    }
}

/// How often the NFSv4 state tables' lock is taken by the commonest
/// compound, SEQUENCE + PUTFH + READ: once, by READ to check its stateid.
/// SEQUENCE claims its slot and caches the reply under its session's own
/// lock and renews the lease without a lock, so clients' compounds do not
/// queue behind each other there.
#[test]
fn clients_doing_io_and_opening_at_once_keep_their_state_apart() {
    // Threads of several clients read and write their own files (the
    // shard path) while opening and closing a file they share and one of
    // their own (the tables, then shards): no answer is wrong, no thread
    // takes two shards, and the state is whole at the end.
    let env = rw_env();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let env = &env;
            scope.spawn(move || {
                let mut s = Session::ready(env, &format!("c{t}"));
                let mine = format!("f{t}");
                let r = open41(&mut s, env, "o", &mine, OPEN4_SHARE_ACCESS_BOTH, 0);
                ok(&r);
                let (sid, fh) = (open_res(&r, 2).stateid, fh_res(&r, 3));
                for i in 0..200u32 {
                    let data = i.to_be_bytes();
                    ok(&s.run(env, vec![putfh(&fh), write_op(&sid, 0, &data)]));
                    let r = s.run(env, vec![putfh(&fh), read_op(&sid, 0, 4)]);
                    ok(&r);
                    let R::OP_READ(READ4res::NFS4_OK(rd)) = &r.resarray[1] else { panic!("{r:?}") };
                    assert_eq!(&rd.data[..], &data);
                    if i % 10 == 0 {
                        for file in ["shared", &format!("g{t}")] {
                            let r = open41(&mut s, env, "p", file, OPEN4_SHARE_ACCESS_READ, 0);
                            ok(&r);
                            let (other, fh) = (open_res(&r, 2).stateid, fh_res(&r, 3));
                            ok(&s.run(env, vec![putfh(&fh), read_op(&other, 0, 4)]));
                            ok(&s.run(env, vec![putfh(&fh), close_op(&other)]));
                        }
                    }
                }
                ok(&s.run(env, vec![putfh(&fh), close_op(&sid)]));
            });
        }
    });
    // Every open was closed: a newcomer may deny everyone every file.
    let mut late = Session::ready(&env, "late");
    for file in ["shared", "f0", "f1", "f2", "f3", "g0", "g3"] {
        ok(&open41(&mut late, &env, "o", file, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_BOTH));
    }
}

#[test]
fn a_read_compound_takes_one_file_shard_and_not_the_tables() {
    let env = rw_env();
    let mut a = Session::ready(&env, "a");
    let r = open41(&mut a, &env, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0);
    ok(&r);
    let (sid, fh) = (open_res(&r, 2).stateid, fh_res(&r, 3));
    ok(&a.run(&env, vec![putfh(&fh), write_op(&sid, 0, b"data")]));
    let (tables, shards) = (env.core.nfs4_state_locked(), env.core.nfs4_file_shards_locked());
    ok(&a.run(&env, vec![putfh(&fh), read_op(&sid, 0, 4)]));
    assert_eq!(env.core.nfs4_state_locked() - tables, 0, "SEQUENCE+PUTFH+READ took the tables' lock");
    assert_eq!(env.core.nfs4_file_shards_locked() - shards, 1, "SEQUENCE+PUTFH+READ took one file shard");
    // A WRITE through the same open is the same path.
    let (tables, shards) = (env.core.nfs4_state_locked(), env.core.nfs4_file_shards_locked());
    ok(&a.run(&env, vec![putfh(&fh), write_op(&sid, 4, b"more")]));
    assert_eq!((env.core.nfs4_state_locked() - tables, env.core.nfs4_file_shards_locked() - shards), (0, 1));
}

/// An NFSv4.1 OPEN and its CLOSE take their client's part of the state
/// and their file's shard, not the tables: opening and closing files does
/// not queue behind other clients. What a CLOSE released is gone at once:
/// another client may deny everything, the owner's lock stateid on the
/// file is gone with it.
#[test]
fn an_nfsv41_open_and_its_close_take_no_table_lock() {
    let env = rw_env();
    let mut a = Session::ready(&env, "a");
    // An OPEN that creates, and one that upgrades: the claim is checked
    // in the session's lease, the share modes and the delegation decided
    // in the file's shard.
    let tables = env.core.nfs4_state_locked();
    ok(&open41(&mut a, &env, "o", "f", OPEN4_SHARE_ACCESS_READ, 0));
    let r = open41(&mut a, &env, "o", "f", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_WRITE);
    ok(&r);
    assert_eq!(env.core.nfs4_state_locked() - tables, 0, "OPEN took the tables' lock");
    let (oa, fh) = (open_res(&r, 2).stateid, fh_res(&r, 3));
    assert_eq!(oa.seqid, 2, "the second OPEN upgraded the first");
    // The owner's own open counts: an upgrade may not deny what it reads.
    let r = open41(&mut a, &env, "o", "f", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_READ);
    assert_eq!(r.status, nfsstat4::NFS4ERR_SHARE_DENIED);
    // Another client's conflicting OPEN goes to the tables (the holder may
    // be a courtesy client) and is refused there.
    let mut c = Session::ready(&env, "c");
    let tables = env.core.nfs4_state_locked();
    let r = open41(&mut c, &env, "o", "f", OPEN4_SHARE_ACCESS_WRITE, 0);
    assert_eq!(r.status, nfsstat4::NFS4ERR_SHARE_DENIED);
    assert!(env.core.nfs4_state_locked() > tables);
    let r = a.run(&env, vec![putfh(&fh), lock_new(0, &oa, 0, "la", nfs_lock_type4::WRITE_LT, 0, 10)]);
    let R::OP_LOCK(LOCK4res::NFS4_OK(la)) = &r.resarray[1] else { panic!("{r:?}") };
    let la = la.lock_stateid.clone();
    let (tables, clients) = (env.core.nfs4_state_locked(), env.core.nfs4_clients_locked());
    let r = a.run(&env, vec![putfh(&fh), close_op(&oa)]);
    ok(&r);
    assert_eq!(env.core.nfs4_state_locked() - tables, 0, "CLOSE took the tables' lock");
    assert_eq!(env.core.nfs4_clients_locked() - clients, 1, "CLOSE took its client's part once");
    // Closed: the stateid is gone, and its lock stateid with it.
    assert_eq!(a.run(&env, vec![putfh(&fh), close_op(&oa)]).status, nfsstat4::NFS4ERR_BAD_STATEID);
    let r = a.run(&env, vec![putfh(&fh), lock_existing(0, &la, nfs_lock_type4::WRITE_LT, 0, 1)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_BAD_STATEID);
    let mut b = Session::ready(&env, "b");
    ok(&open41(&mut b, &env, "o", "f", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_BOTH));
}

/// An NFSv4.1 lock-owner's LOCKs (its first one too), its LOCKU and a
/// LOCKT take no table lock, the later ones only the file's shard; a
/// conflict with another client (whose lease may have run out) still goes
/// to the tables, and gets the same answer.
#[test]
fn an_nfsv41_lock_owner_locks_and_unlocks_in_one_file_shard() {
    let env = rw_env();
    let TwoOpeners { mut a, mut b, fh, ob, la } = two_openers_one_lock(&env);
    let counts = || (env.core.nfs4_state_locked(), env.core.nfs4_file_shards_locked());
    let (tables, shards) = counts();
    let r = a.run(&env, vec![putfh(&fh), lock_existing(0, &la, nfs_lock_type4::READ_LT, 100, 10)]);
    let R::OP_LOCK(LOCK4res::NFS4_OK(l2)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!((l2.lock_stateid.other, l2.lock_stateid.seqid), (la.other, la.seqid + 1));
    let lockt = A::OP_LOCKT(LOCKT4args {
        locktype: nfs_lock_type4::WRITE_LT,
        offset: 5,
        length: 1,
        owner: lock_owner4 { clientid: 0, owner: name("lb") },
    });
    assert_eq!(b.run(&env, vec![putfh(&fh), lockt.clone()]).status, nfsstat4::NFS4ERR_DENIED);
    let locku = |sid: &stateid4, offset, length| {
        A::OP_LOCKU(LOCKU4args {
            locktype: nfs_lock_type4::WRITE_LT,
            seqid: 0,
            lock_stateid: sid.clone(),
            offset,
            length,
        })
    };
    let r = a.run(&env, vec![putfh(&fh), locku(&l2.lock_stateid, 0, 10)]);
    let R::OP_LOCKU(LOCKU4res::NFS4_OK(u)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!(u.seqid, la.seqid + 2);
    ok(&b.run(&env, vec![putfh(&fh), lockt]));
    assert_eq!(counts(), (tables, shards + 4), "LOCK, two LOCKTs and LOCKU took one shard each");
    // A stale seqid is OLD_STATEID, from the tables as before.
    let r = a.run(&env, vec![putfh(&fh), lock_existing(0, &la, nfs_lock_type4::WRITE_LT, 0, 1)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_OLD_STATEID);
    // b's lock over a's read lock is DENIED (through the tables, which
    // ask whether a's lease ran out).
    let r = b.run(&env, vec![putfh(&fh), lock_new(0, &ob, 0, "lb", nfs_lock_type4::WRITE_LT, 105, 1)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_DENIED);
    // The same owner's write lock through a read-only open is OPENMODE.
    let r = open41(&mut b, &env, "ro", "f", OPEN4_SHARE_ACCESS_READ, 0);
    let oro = open_res(&r, 2).stateid;
    // A new lock-owner's first lock: its owner, lock stateid and range are
    // made in its client's part and the file's shard, not the tables.
    let tables = env.core.nfs4_state_locked();
    let r = b.run(&env, vec![putfh(&fh), lock_new(0, &oro, 0, "lr", nfs_lock_type4::READ_LT, 200, 1)]);
    let R::OP_LOCK(LOCK4res::NFS4_OK(lr)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!(env.core.nfs4_state_locked(), tables, "a new lock-owner's LOCK took the tables' lock");
    let lr = lr.lock_stateid.clone();
    assert_eq!(lr.seqid, 1);
    let r = b.run(&env, vec![putfh(&fh), lock_existing(0, &lr, nfs_lock_type4::WRITE_LT, 300, 1)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_OPENMODE);
}

#[test]
fn an_nfsv40_read_takes_one_file_shard_and_renews_through_it() {
    let env = rw_env();
    let c = client40(&env, "c1");
    let mut seq = 1;
    let (fh, sid) = open40(&env, &mut seq, c, "owner", "f1", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE);
    ok(&env.compound(0, vec![putfh(&fh), write_op(&sid, 0, b"data")]));
    let (tables, shards) = (env.core.nfs4_state_locked(), env.core.nfs4_file_shards_locked());
    let r = env.compound(0, vec![putfh(&fh), read_op(&sid, 0, 4)]);
    ok(&r);
    assert_eq!(env.core.nfs4_state_locked() - tables, 0, "PUTFH+READ took the tables' lock");
    assert_eq!(env.core.nfs4_file_shards_locked() - shards, 1);
    // The anonymous stateid is checked in the shard too.
    let anon = stateid4 { seqid: 0, other: [0; 12] };
    let tables = env.core.nfs4_state_locked();
    ok(&env.compound(0, vec![putfh(&fh), read_op(&anon, 0, 4)]));
    assert_eq!(env.core.nfs4_state_locked() - tables, 0);
    // The lease is renewed by the READs alone: a client that only reads
    // keeps its open against a conflicting one past its lease.
    let (env, clock, _) = env_with_nfs4(
        server_core::state::Nfs4Settings { lease_secs: 10, grace_secs: 0, ..Default::default() },
        Arc::new(server_core::MemStore::default()),
    );
    let c = client40(&env, "reader");
    let mut seq = 1;
    let (fh, sid) = open40(&env, &mut seq, c, "owner", "f1", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE);
    for _ in 0..3 {
        clock.advance(std::time::Duration::from_secs(6));
        ok(&env.compound(0, vec![putfh(&fh), read_op(&sid, 0, 1)]));
    }
    let d = client40(&env, "denier");
    let mut ops = export_ops(&env);
    ops.push(A::OP_OPEN(open_args(1, d, "o", "f1", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_BOTH, false)));
    assert_eq!(env.compound(0, ops).status, nfsstat4::NFS4ERR_SHARE_DENIED, "the reader's lease ran out");
}

#[test]
fn an_nfsv40_stateid_the_shard_cannot_settle_gets_its_error() {
    let env = rw_env();
    let c = client40(&env, "c1");
    let mut seq = 1;
    let (fh, sid) = open40(&env, &mut seq, c, "owner", "f1", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE);
    // A stateid the shard cannot settle still gets its error from the
    // tables: an older seqid is OLD_STATEID.
    if sid.seqid > 1 {
        let old = stateid4 { seqid: sid.seqid - 1, ..sid.clone() };
        assert_eq!(env.compound(0, vec![putfh(&fh), read_op(&old, 0, 1)]).status, nfsstat4::NFS4ERR_OLD_STATEID);
    }
}

//! NFSv4 client records, sessions, leases and the 4.0 client operations.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs4::*;
use server_core::state::Nfs4Settings;
use server_core::{MemStore, StableStore};
use xdr::{Decode, Decoder};

fn compound_bytes(tag: &str, ops: Vec<nfs_argop4>) -> Bytes {
    xdr::to_bytes(&COMPOUND4args { tag: Bytes::copy_from_slice(tag.as_bytes()), minorversion: 1, argarray: ops })
}

fn seq_args(s: &Session, slot: u32, seqid: u32, cache: bool) -> nfs_argop4 {
    nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
        sa_sessionid: s.sessionid,
        sa_sequenceid: seqid,
        sa_slotid: slot,
        sa_highest_slotid: slot,
        sa_cachethis: cache,
    })
}

fn status(env: &Env, bytes: &Bytes) -> nfsstat4 {
    env.call_as(NFS4, 4, 1, &user(), bytes).result::<COMPOUND4res>().status
}

#[test]
fn session_setup_and_use() {
    let env = rw_env();
    let mut s = Session::new(&env, "client-a");
    let r = s.run_on(&env, 0, 0, vec![nfs_argop4::OP_PUTROOTFH, nfs_argop4::OP_GETFH]);
    ok(&r);
    let q = seq_res(&r);
    assert_eq!(q.sr_sequenceid, 1);
    assert_eq!(q.sr_highest_slotid, 15);
    assert!(q.sr_status_flags & SEQ4_STATUS_CB_PATH_DOWN != 0, "no back channel was bound");
    // A second session for the same client.
    let EXCHANGE_ID4res::NFS4_OK(eid) = exchange_id_as(&env, &user(), "client-a", [1; 8], 0) else { panic!() };
    assert_eq!(eid.eir_clientid, s.clientid);
    assert!(eid.eir_flags & EXCHGID4_FLAG_CONFIRMED_R != 0);
    let res = create_session(&env, create_session_args(s.clientid, eid.eir_sequenceid, 0, 4));
    let CREATE_SESSION4res::NFS4_OK(cs) = res else { panic!("{res:?}") };
    assert_ne!(cs.csr_sessionid, s.sessionid);
}

#[test]
fn retransmission_gets_the_identical_reply() {
    let env = rw_env();
    let s = Session::new(&env, "replay");
    let req = compound_bytes("x", vec![seq_args(&s, 0, 1, true), nfs_argop4::OP_PUTROOTFH, nfs_argop4::OP_GETFH]);
    let a = env.call_as(NFS4, 4, 1, &user(), &req);
    let b = env.call_as(NFS4, 4, 1, &user(), &req);
    assert_ne!(a.xid, b.xid);
    assert_eq!(a.rest, b.rest, "the replay is byte-identical");
    ok(&a.result());
    // Same slot and sequence id, different request.
    let other = compound_bytes("x", vec![seq_args(&s, 0, 1, true), nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(status(&env, &other), nfsstat4::NFS4ERR_SEQ_FALSE_RETRY);
    // Not cached: a retry gets RETRY_UNCACHED_REP.
    let req = compound_bytes("y", vec![seq_args(&s, 1, 1, false), nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(status(&env, &req), nfsstat4::NFS4_OK);
    assert_eq!(status(&env, &req), nfsstat4::NFS4ERR_RETRY_UNCACHED_REP);
}

#[test]
fn slot_and_sequence_errors() {
    let env = rw_env();
    let s = Session::new(&env, "errors");
    // Sequence id 0 on a fresh slot: the contrived cached MISORDERED.
    let req = compound_bytes("x", vec![seq_args(&s, 0, 0, true), nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(status(&env, &req), nfsstat4::NFS4ERR_SEQ_MISORDERED);
    let req = compound_bytes("x", vec![seq_args(&s, 0, 2, true), nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(status(&env, &req), nfsstat4::NFS4ERR_SEQ_MISORDERED);
    let req = compound_bytes("x", vec![seq_args(&s, 16, 1, true), nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(status(&env, &req), nfsstat4::NFS4ERR_BADSLOT);
    // channel() asks for 32 operations.
    let mut ops = vec![seq_args(&s, 0, 1, true)];
    ops.extend(std::iter::repeat_n(nfs_argop4::OP_PUTROOTFH, 40));
    assert_eq!(status(&env, &compound_bytes("x", ops)), nfsstat4::NFS4ERR_TOO_MANY_OPS);
    // The slot was not consumed by the refused requests.
    let req = compound_bytes("x", vec![seq_args(&s, 0, 1, true), nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(status(&env, &req), nfsstat4::NFS4_OK);
    let mut bad = s.sessionid;
    bad[15] ^= 0xff;
    let req = compound_bytes(
        "x",
        vec![nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
            sa_sessionid: bad,
            sa_sequenceid: 1,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        })],
    );
    assert_eq!(status(&env, &req), nfsstat4::NFS4ERR_BADSESSION);
}

#[test]
fn target_highest_slot_follows_load() {
    let nfs4 = Nfs4Settings { initial_target_slots: 4, ..Nfs4Settings::default() };
    let (env, clock, _) = env_with_nfs4(nfs4, Arc::new(MemStore::default()));
    let mut s = Session::with(&env, "busy", 0, 64);
    assert_eq!(s.seq.len(), 64);
    let r = s.run_on(&env, 0, 0, vec![]);
    assert_eq!(seq_res(&r).sr_target_highest_slotid, 3);
    assert_eq!(seq_res(&r).sr_highest_slotid, 63);
    // The client keeps the whole target busy: it doubles per window.
    let mut target = 4;
    for _ in 0..3 {
        for slot in 0..target {
            s.run_on(&env, slot, target - 1, vec![]);
        }
        clock.advance(Duration::from_millis(1100));
        let r = s.run_on(&env, 0, 0, vec![]);
        let t = seq_res(&r).sr_target_highest_slotid + 1;
        assert_eq!(t, target * 2, "target doubles under load");
        target = t;
    }
    // Requests above the target but within the table still work.
    let r = s.run_on(&env, 60, 60, vec![nfs_argop4::OP_PUTROOTFH]);
    ok(&r);
    let peak = seq_res(&r).sr_target_highest_slotid + 1;
    assert!(peak >= 61);
    // Idle: the target comes down gradually.
    clock.advance(Duration::from_secs(2));
    let r = s.run_on(&env, 0, 0, vec![]);
    let t1 = seq_res(&r).sr_target_highest_slotid + 1;
    assert!(t1 < peak && t1 > 4, "lowered gradually: {peak} -> {t1}");
    clock.advance(Duration::from_secs(60));
    let r = s.run_on(&env, 0, 0, vec![]);
    let t2 = seq_res(&r).sr_target_highest_slotid + 1;
    assert!(t2 < t1, "{t1} -> {t2}");
    assert!(t2 >= 1);
}

#[test]
fn courtesy_then_expiry() {
    let nfs4 = Nfs4Settings { lease_secs: 10, courtesy_secs: 100, ..Nfs4Settings::default() };
    let (env, clock, _) = env_with_nfs4(nfs4, Arc::new(MemStore::default()));
    let mut s = Session::new(&env, "sleepy");
    // Past the lease, no conflict: a courtesy client keeps everything.
    clock.advance(Duration::from_secs(30));
    ok(&s.run(&env, vec![nfs_argop4::OP_PUTROOTFH]));
    // Past lease plus courtesy: expired, its sessions gone.
    clock.advance(Duration::from_secs(200));
    let r = s.run(&env, vec![nfs_argop4::OP_PUTROOTFH]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_BADSESSION);
    // A 4.0 client learns EXPIRED from RENEW.
    let id = setclientid(&env, &user(), "v40-sleepy", [3; 8]).unwrap();
    ok(&env.compound(0, vec![confirm_op(id.clone())]));
    clock.advance(Duration::from_secs(200));
    let r = env.compound(0, vec![nfs_argop4::OP_RENEW(RENEW4args { clientid: id.clientid })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_EXPIRED);
}

fn setclientid(env: &Env, cred: &Cred, name: &str, verifier: [u8; 8]) -> Result<SETCLIENTID4resok, SETCLIENTID4res> {
    let args = SETCLIENTID4args {
        client: nfs_client_id4 { verifier, id: Bytes::copy_from_slice(name.as_bytes()) },
        callback: cb_client4 {
            cb_program: 0x40000000,
            cb_location: netaddr4 {
                na_r_netid: Bytes::from_static(b"tcp"),
                na_r_addr: Bytes::from_static(b"127.0.0.1.3.1"),
            },
        },
        callback_ident: 1,
    };
    let r = env.compound_as(cred, 0, vec![nfs_argop4::OP_SETCLIENTID(args)]);
    match r.resarray.into_iter().next() {
        Some(nfs_resop4::OP_SETCLIENTID(SETCLIENTID4res::NFS4_OK(ok))) => Ok(ok),
        Some(nfs_resop4::OP_SETCLIENTID(other)) => Err(other),
        other => panic!("{other:?}"),
    }
}

fn confirm_op(id: SETCLIENTID4resok) -> nfs_argop4 {
    nfs_argop4::OP_SETCLIENTID_CONFIRM(SETCLIENTID_CONFIRM4args {
        clientid: id.clientid,
        setclientid_confirm: id.setclientid_confirm,
    })
}

#[test]
fn v40_setclientid_confirm_renew() {
    let env = rw_env();
    let id = setclientid(&env, &user(), "v40", [1; 8]).unwrap();
    let renew = |c: clientid4| env.compound(0, vec![nfs_argop4::OP_RENEW(RENEW4args { clientid: c })]).status;
    assert_eq!(renew(id.clientid), nfsstat4::NFS4ERR_STALE_CLIENTID, "unconfirmed");
    let mut wrong = id.clone();
    wrong.setclientid_confirm[0] ^= 1;
    assert_eq!(env.compound(0, vec![confirm_op(wrong)]).status, nfsstat4::NFS4ERR_STALE_CLIENTID);
    ok(&env.compound(0, vec![confirm_op(id.clone())]));
    ok(&env.compound(0, vec![confirm_op(id.clone())]));
    assert_eq!(renew(id.clientid), nfsstat4::NFS4_OK);
    assert_eq!(renew(id.clientid ^ (1 << 40)), nfsstat4::NFS4ERR_STALE_CLIENTID);
    // Callback update: same verifier keeps the client id.
    let upd = setclientid(&env, &user(), "v40", [1; 8]).unwrap();
    assert_eq!(upd.clientid, id.clientid);
    ok(&env.compound(0, vec![confirm_op(upd)]));
    // Reboot: a new verifier, a new id; the old one goes on confirm.
    let new = setclientid(&env, &user(), "v40", [2; 8]).unwrap();
    assert_ne!(new.clientid, id.clientid);
    assert_eq!(renew(id.clientid), nfsstat4::NFS4_OK);
    ok(&env.compound(0, vec![confirm_op(new.clone())]));
    assert_eq!(renew(id.clientid), nfsstat4::NFS4ERR_STALE_CLIENTID);
    assert_eq!(renew(new.clientid), nfsstat4::NFS4_OK);
    // Another principal with the same id string: the record holds no
    // state, so it is not in use (RFC 7530 9.1.2) and the newcomer gets it.
    let other = setclientid(&env, &Cred::Sys(2000, 2000, vec![]), "v40", [1; 8]);
    assert!(other.is_ok(), "{other:?}");
    // 4.0 operations are not part of 4.1.
    let mut s = Session::new(&env, "v41");
    let r = s.run(&env, vec![nfs_argop4::OP_RENEW(RENEW4args { clientid: s.clientid })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_NOTSUPP);
}

#[test]
fn exchange_id_cases() {
    let env = rw_env();
    // Update without a confirmed record.
    let r = exchange_id_as(&env, &user(), "eid", [1; 8], EXCHGID4_FLAG_UPD_CONFIRMED_REC_A);
    assert!(matches!(r, EXCHANGE_ID4res::default(nfsstat4::NFS4ERR_NOENT)), "{r:?}");
    // Unknown flags.
    let r = exchange_id_as(&env, &user(), "eid", [1; 8], EXCHGID4_FLAG_CONFIRMED_R);
    assert!(matches!(r, EXCHANGE_ID4res::default(nfsstat4::NFS4ERR_INVAL)), "{r:?}");
    // An unconfirmed record is replaced each time.
    let EXCHANGE_ID4res::NFS4_OK(a) = exchange_id_as(&env, &user(), "eid", [1; 8], 0) else { panic!() };
    let EXCHANGE_ID4res::NFS4_OK(b) = exchange_id_as(&env, &user(), "eid", [1; 8], 0) else { panic!() };
    assert_ne!(a.eir_clientid, b.eir_clientid);
    assert_eq!(a.eir_flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
    let res = create_session(&env, create_session_args(a.eir_clientid, a.eir_sequenceid, 0, 8));
    assert!(matches!(res, CREATE_SESSION4res::default(nfsstat4::NFS4ERR_STALE_CLIENTID)), "{res:?}");
    // CREATE_SESSION replay cache.
    let args = create_session_args(b.eir_clientid, b.eir_sequenceid, 0, 8);
    let CREATE_SESSION4res::NFS4_OK(s1) = create_session(&env, args.clone()) else { panic!() };
    let CREATE_SESSION4res::NFS4_OK(s2) = create_session(&env, args.clone()) else { panic!() };
    assert_eq!(s1.csr_sessionid, s2.csr_sessionid);
    let res = create_session(&env, create_session_args(b.eir_clientid, b.eir_sequenceid + 5, 0, 8));
    assert!(matches!(res, CREATE_SESSION4res::default(nfsstat4::NFS4ERR_SEQ_MISORDERED)), "{res:?}");
    // Update with the right verifier and principal; wrong verifier; wrong principal.
    let r = exchange_id_as(&env, &user(), "eid", [1; 8], EXCHGID4_FLAG_UPD_CONFIRMED_REC_A);
    assert!(matches!(r, EXCHANGE_ID4res::NFS4_OK(ref ok) if ok.eir_clientid == b.eir_clientid), "{r:?}");
    let r = exchange_id_as(&env, &user(), "eid", [9; 8], EXCHGID4_FLAG_UPD_CONFIRMED_REC_A);
    assert!(matches!(r, EXCHANGE_ID4res::default(nfsstat4::NFS4ERR_NOT_SAME)), "{r:?}");
    let r = exchange_id_as(&env, &root(), "eid", [1; 8], EXCHGID4_FLAG_UPD_CONFIRMED_REC_A);
    assert!(matches!(r, EXCHANGE_ID4res::default(nfsstat4::NFS4ERR_PERM)), "{r:?}");
    // Another principal while the client holds a session and a lease.
    let r = exchange_id_as(&env, &root(), "eid", [1; 8], 0);
    assert!(matches!(r, EXCHANGE_ID4res::default(nfsstat4::NFS4ERR_CLID_INUSE)), "{r:?}");
    // Client restart: new verifier, new id; the old sessions last until
    // the new id is confirmed.
    let EXCHANGE_ID4res::NFS4_OK(c) = exchange_id_as(&env, &user(), "eid", [2; 8], 0) else { panic!() };
    assert_ne!(c.eir_clientid, b.eir_clientid);
    let mut old = Session { clientid: b.eir_clientid, sessionid: s1.csr_sessionid, seq: vec![0; 8], minor: 1 };
    ok(&old.run(&env, vec![nfs_argop4::OP_PUTROOTFH]));
    let CREATE_SESSION4res::NFS4_OK(_) =
        create_session(&env, create_session_args(c.eir_clientid, c.eir_sequenceid, 0, 8))
    else {
        panic!()
    };
    assert_eq!(old.run(&env, vec![nfs_argop4::OP_PUTROOTFH]).status, nfsstat4::NFS4ERR_BADSESSION);
    // State protection other than SP4_NONE.
    let eid = EXCHANGE_ID4args {
        eia_clientowner: client_owner4 { co_verifier: [1; 8], co_ownerid: Bytes::from_static(b"ssv") },
        eia_flags: 0,
        eia_state_protect: state_protect4_a::SP4_MACH_CRED(state_protect_ops4 {
            spo_must_enforce: vec![],
            spo_must_allow: vec![],
        }),
        eia_client_impl_id: vec![],
    };
    let r = env.compound(1, vec![nfs_argop4::OP_EXCHANGE_ID(eid)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
}

#[test]
fn destroy_clientid_and_session() {
    let env = rw_env();
    let s = Session::new(&env, "doomed");
    let dc = |id| env.compound(1, vec![nfs_argop4::OP_DESTROY_CLIENTID(DESTROY_CLIENTID4args { dca_clientid: id })]);
    assert_eq!(dc(s.clientid).status, nfsstat4::NFS4ERR_CLIENTID_BUSY);
    let ds =
        || env.compound(1, vec![nfs_argop4::OP_DESTROY_SESSION(DESTROY_SESSION4args { dsa_sessionid: s.sessionid })]);
    ok(&ds());
    assert_eq!(ds().status, nfsstat4::NFS4ERR_BADSESSION);
    ok(&dc(s.clientid));
    assert_eq!(dc(s.clientid).status, nfsstat4::NFS4ERR_STALE_CLIENTID);
    let res = create_session(&env, create_session_args(s.clientid, 2, 0, 4));
    assert!(matches!(res, CREATE_SESSION4res::default(nfsstat4::NFS4ERR_STALE_CLIENTID)), "{res:?}");
}

#[test]
fn bind_conn_and_set_ssv() {
    let env = rw_env();
    let mut s = Session::new(&env, "binder");
    let r = env.compound(
        1,
        vec![nfs_argop4::OP_BIND_CONN_TO_SESSION(BIND_CONN_TO_SESSION4args {
            bctsa_sessid: s.sessionid,
            bctsa_dir: channel_dir_from_client4::CDFC4_FORE_OR_BOTH,
            bctsa_use_conn_in_rdma_mode: false,
        })],
    );
    ok(&r);
    let nfs_resop4::OP_BIND_CONN_TO_SESSION(BIND_CONN_TO_SESSION4res::NFS4_OK(b)) = &r.resarray[0] else { panic!() };
    assert_eq!(b.bctsr_sessid, s.sessionid);
    assert_eq!(b.bctsr_dir, channel_dir_from_server4::CDFS4_BOTH);
    let r = s.run(&env, vec![nfs_argop4::OP_SET_SSV(SET_SSV4args { ssa_ssv: Bytes::new(), ssa_digest: Bytes::new() })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
}

#[test]
fn grace_and_reclaim_complete() {
    let store = Arc::new(MemStore::default());
    store.insert(b"returning");
    let nfs4 = Nfs4Settings::default();
    let (env, _clock, _) = env_with_nfs4(nfs4, store.clone());
    let mut s = Session::new(&env, "returning");
    let rc = nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args { rca_one_fs: false });
    ok(&s.run(&env, vec![rc.clone()]));
    let r = s.run(&env, vec![rc.clone()]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_COMPLETE_ALREADY);
    // A new client gets its record written on CREATE_SESSION, and
    // loses it on DESTROY_CLIENTID.
    let n = Session::new(&env, "newcomer");
    assert!(store.load().iter().any(|r| r == b"newcomer"));
    let ds = nfs_argop4::OP_DESTROY_SESSION(DESTROY_SESSION4args { dsa_sessionid: n.sessionid });
    ok(&env.compound(1, vec![ds]));
    ok(&env.compound(1, vec![nfs_argop4::OP_DESTROY_CLIENTID(DESTROY_CLIENTID4args { dca_clientid: n.clientid })]));
    assert!(!store.load().iter().any(|r| r == b"newcomer"));
}

#[test]
fn back_channel_probe_and_reply() {
    let (mut env, _clock, cb) = env_with_nfs4(Nfs4Settings::default(), Arc::new(MemStore::default()));
    env.peer.conn = 7;
    let mut s = Session::with(&env, "callme", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, 8);
    let sent = cb.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    let (conn, rec) = &sent[0];
    assert_eq!(*conn, 7);
    let mut d = Decoder::new(rec.clone());
    let msg = proto::rpc::rpc_msg::decode(&mut d).unwrap();
    let proto::rpc::rpc_msg_body::CALL(call) = msg.body else { panic!() };
    assert_eq!((call.prog, call.vers, call.proc), (0x40000000, 1, 0));
    // Not answered yet: the path is not reported down.
    let r = s.run_on(&env, 0, 0, vec![]);
    assert_eq!(seq_res(&r).sr_status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0);
    // The client answers CB_NULL.
    let mut reply = xdr::Encoder::new();
    for v in [msg.xid, 1, 0, 0, 0, 0] {
        reply.u32(v);
    }
    let out = env.raw(reply.into_bytes());
    assert!(out.reply.is_none());
    assert_eq!(out.label, "nfs4.cb_reply");
    // Still up after the answer.
    let r = s.run_on(&env, 0, 0, vec![]);
    assert_eq!(seq_res(&r).sr_status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0);
}

/// The connection a back channel is bound to closes: the client's next
/// SEQUENCE says the path is down (so it binds another connection before
/// a recall needs one), and binding one brings it back.
#[test]
fn a_closed_back_channel_connection_is_reported_down_at_once() {
    let (mut env, _clock, cb) = env_with_nfs4(Nfs4Settings::default(), Arc::new(MemStore::default()));
    env.peer.conn = 7;
    let mut s = Session::with(&env, "callme", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, 8);
    let (_, probe) = cb.sent.lock().unwrap()[0].clone();
    env.raw(cb_null_reply(&probe));
    let r = s.run_on(&env, 0, 0, vec![]);
    assert_eq!(seq_res(&r).sr_status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0);
    // Another connection closing changes nothing.
    env.core.connection_closed(8);
    let r = s.run_on(&env, 0, 0, vec![]);
    assert_eq!(seq_res(&r).sr_status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0);
    env.core.connection_closed(7);
    let r = s.run_on(&env, 0, 0, vec![]);
    assert_ne!(seq_res(&r).sr_status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0, "no callback had to fail first");
    // The client binds a new connection for the back channel.
    env.peer.conn = 9;
    let bind = nfs_argop4::OP_BIND_CONN_TO_SESSION(BIND_CONN_TO_SESSION4args {
        bctsa_sessid: s.sessionid,
        bctsa_dir: channel_dir_from_client4::CDFC4_BACK_OR_BOTH,
        bctsa_use_conn_in_rdma_mode: false,
    });
    ok(&env.compound(1, vec![bind]));
    let n = cb.sent.lock().unwrap().len();
    let (conn, probe) = cb.sent.lock().unwrap()[n - 1].clone();
    assert_eq!(conn, 9, "probed on the new connection");
    env.raw(cb_null_reply(&probe));
    let r = s.run_on(&env, 0, 0, vec![]);
    assert_eq!(seq_res(&r).sr_status_flags & SEQ4_STATUS_CB_PATH_DOWN, 0);
}

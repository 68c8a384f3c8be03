//! NLM's asynchronous procedures: TEST_MSG, LOCK_MSG, UNLOCK_MSG and
//! friends answer with an empty reply, and the result goes to the calling
//! host's lock manager as a `_RES` call through the core's transport.

mod common;

use bytes::Bytes;
use common::outbound::*;
use common::*;
use proto::nlm::*;
use server_core::{CoreSettings, OutReply};

fn alock(host: &str, fh: &proto::nfs3::nfs_fh3, svid: u32, off: u64, len: u64) -> nlm4_lock {
    nlm4_lock {
        caller_name: Bytes::copy_from_slice(host.as_bytes()),
        fh: fh.data.clone(),
        oh: Bytes::copy_from_slice(format!("{host}-{svid}").as_bytes()),
        svid,
        l_offset: off,
        l_len: len,
    }
}

fn lockargs(cookie: &'static [u8], l: nlm4_lock) -> nlm4_lockargs {
    nlm4_lockargs {
        cookie: Bytes::from_static(cookie),
        block: false,
        exclusive: true,
        alock: l,
        reclaim: false,
        state: 1,
    }
}

/// Sends a `_MSG` call and checks its empty reply.
fn msg<A: xdr::Encode>(e: &Env, proc_: u32, args: &A) {
    let r = e.call(NLM_PROG, 4, proc_, args);
    r.result_with(|_| Ok(()));
}

/// The one call handed over, decoded as the `_RES` procedure `proc_`.
fn one_res<R: xdr::Decode>(out: &RecordingOutbound, proc_: u32) -> (server_core::OutCall, R) {
    let mut calls = out.take();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let c = calls.remove(0);
    let (prog, vers, p, args) = decode_call(&c);
    assert_eq!((prog, vers, p), (NLM_PROG, 4, proc_));
    (c, xdr::from_bytes(args).expect("results decode"))
}

#[test]
fn results_go_back_as_res_calls() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = e.create_file(&e.root(), "f");
    msg(&e, NLM_LOCK_MSG, &lockargs(b"l1", alock("a", &f, 1, 0, 100)));
    let (c, r): (_, nlm4_res) = one_res(&out, NLM_LOCK_RES);
    assert_eq!((&r.cookie[..], r.stat.stat), (&b"l1"[..], nlm4_stats::nlm4_granted));
    // The caller is on our host and registered no lock manager: its
    // portmapper is asked.
    assert_eq!((c.host, c.from, c.port, c.portmap_port), (e.peer.addr.ip(), e.peer.local.ip(), None, 111));
    assert!(!c.udp);
    msg(
        &e,
        NLM_TEST_MSG,
        &nlm4_testargs { cookie: Bytes::from_static(b"t1"), exclusive: false, alock: alock("b", &f, 2, 50, 1) },
    );
    let (_, r): (_, nlm4_testres) = one_res(&out, NLM_TEST_RES);
    assert_eq!(&r.cookie[..], b"t1");
    match r.stat {
        nlm4_testrply::nlm4_denied(h) => assert_eq!((h.svid, h.l_offset, h.l_len, h.exclusive), (1, 0, 100, true)),
        other => panic!("{other:?}"),
    }
    msg(&e, NLM_LOCK_MSG, &lockargs(b"l2", alock("b", &f, 2, 50, 1)));
    let (_, r): (_, nlm4_res) = one_res(&out, NLM_LOCK_RES);
    assert_eq!(r.stat.stat, nlm4_stats::nlm4_denied);
    msg(&e, NLM_UNLOCK_MSG, &nlm4_unlockargs { cookie: Bytes::from_static(b"u1"), alock: alock("a", &f, 1, 0, 100) });
    let (_, r): (_, nlm4_res) = one_res(&out, NLM_UNLOCK_RES);
    assert_eq!((&r.cookie[..], r.stat.stat), (&b"u1"[..], nlm4_stats::nlm4_granted));
    msg(
        &e,
        NLM_GRANTED_MSG,
        &nlm4_testargs { cookie: Bytes::from_static(b"g"), exclusive: true, alock: alock("b", &f, 2, 0, 1) },
    );
    let (_, r): (_, nlm4_res) = one_res(&out, NLM_GRANTED_RES);
    assert_eq!(r.stat.stat, nlm4_stats::nlm4_denied);
}

#[test]
fn a_local_lock_manager_is_called_on_its_registered_port() {
    let (mut e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = e.create_file(&e.root(), "f");
    let set = proto::portmap::pmap2_mapping { prog: NLM_PROG, vers: 4, prot: 6, port: 4045 };
    let ok: u32 = e.call(PMAP, 2, proto::portmap::PMAP2_SET, &set).result();
    assert_eq!(ok, 1);
    msg(&e, NLM_LOCK_MSG, &lockargs(b"l", alock("a", &f, 1, 0, 1)));
    let (c, _): (_, nlm4_res) = one_res(&out, NLM_LOCK_RES);
    assert_eq!(c.port, Some(4045));
    // A remote caller is called at its own address, from ours.
    e.peer = peer("10.0.0.9:800");
    e.peer.local = "10.0.0.1:2049".parse().unwrap();
    msg(&e, NLM_LOCK_MSG, &lockargs(b"m", alock("z", &f, 1, 10, 1)));
    let (c, _): (_, nlm4_res) = one_res(&out, NLM_LOCK_RES);
    assert_eq!((c.host.to_string(), c.from.to_string(), c.port), ("10.0.0.9".into(), "10.0.0.1".into(), None));
}

#[test]
fn an_unanswered_result_is_sent_again_on_a_tick_then_dropped() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = e.create_file(&e.root(), "f");
    assert!(!e.core.nlm_busy());
    msg(&e, NLM_LOCK_MSG, &lockargs(b"l", alock("a", &f, 1, 0, 1)));
    let (c, _): (_, nlm4_res) = one_res(&out, NLM_LOCK_RES);
    assert!(e.core.nlm_busy());
    e.core.outbound_done(c.id, OutReply::TimedOut);
    assert!(out.take().is_empty(), "resent before the tick");
    e.core.nlm_tick();
    let (again, _): (_, nlm4_res) = one_res(&out, NLM_LOCK_RES);
    assert_eq!(again.id, c.id);
    // Tried twice (`result_tries`): dropped.
    e.core.outbound_done(again.id, OutReply::Unreachable);
    e.core.nlm_tick();
    assert!(out.take().is_empty());
    assert!(!e.core.nlm_busy());
    // An answered result is done.
    msg(&e, NLM_UNLOCK_MSG, &nlm4_unlockargs { cookie: Bytes::new(), alock: alock("a", &f, 1, 0, 1) });
    let (c, _): (_, nlm4_res) = one_res(&out, NLM_UNLOCK_RES);
    e.core.outbound_done(c.id, OutReply::Reply(reply_to(&c, &[])));
    assert!(!e.core.nlm_busy());
}

#[test]
fn without_a_transport_the_msg_procedures_are_not_offered() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "f");
    let r = e.call(NLM_PROG, 4, NLM_LOCK_MSG, &lockargs(b"l", alock("a", &f, 1, 0, 1)));
    assert_eq!(r.accept_stat(), Some(proto::rpc::accept_stat::PROC_UNAVAIL));
    // Results sent to us are taken and ignored.
    let r = e.call(
        NLM_PROG,
        4,
        NLM_LOCK_RES,
        &nlm4_res { cookie: Bytes::new(), stat: nlm4_stat { stat: nlm4_stats::nlm4_granted } },
    );
    r.result_with(|_| Ok(()));
}

//! Blocking NLM locks: a LOCK with `block` set that meets a conflict
//! waits (`nlm4_blocked`) in the one lock manager NFSv4 uses too, is
//! granted in arrival order when the range comes free, whatever freed
//! it, and the client is told with NLM_GRANTED; a client that never
//! acknowledges loses the grant to the next waiter.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::outbound::*;
use common::v4::*;
use common::*;
use proto::nfs4::*;
use proto::nlm::*;
use server_core::{CoreSettings, NlmSettings, OutCall, OutReply};

type A = nfs_argop4;
type R = nfs_resop4;

fn alock(host: &str, fh: &Bytes, svid: u32, off: u64, len: u64) -> nlm4_lock {
    nlm4_lock {
        caller_name: Bytes::copy_from_slice(host.as_bytes()),
        fh: fh.clone(),
        oh: Bytes::copy_from_slice(format!("{host}-{svid}").as_bytes()),
        svid,
        l_offset: off,
        l_len: len,
    }
}

fn lock_as(e: &Env, proc_: u32, cookie: &str, l: nlm4_lock, exclusive: bool, block: bool) -> nlm4_stats {
    let cookie = Bytes::copy_from_slice(cookie.as_bytes());
    let a = nlm4_lockargs { cookie: cookie.clone(), block, exclusive, alock: l, reclaim: false, state: 1 };
    let r: nlm4_res = e.call(NLM_PROG, 4, proc_, &a).result();
    assert_eq!(r.cookie, cookie);
    r.stat.stat
}

fn lock(e: &Env, cookie: &str, l: nlm4_lock, exclusive: bool, block: bool) -> nlm4_stats {
    lock_as(e, NLM_LOCK, cookie, l, exclusive, block)
}

fn unlock(e: &Env, l: nlm4_lock) -> nlm4_stats {
    let r: nlm4_res = e.call(NLM_PROG, 4, NLM_UNLOCK, &nlm4_unlockargs { cookie: Bytes::new(), alock: l }).result();
    r.stat.stat
}

fn cancel(e: &Env, l: nlm4_lock, exclusive: bool) -> nlm4_stats {
    let a = nlm4_cancargs { cookie: Bytes::new(), block: true, exclusive, alock: l };
    let r: nlm4_res = e.call(NLM_PROG, 4, NLM_CANCEL, &a).result();
    r.stat.stat
}

fn test(e: &Env, l: nlm4_lock, exclusive: bool) -> nlm4_testrply {
    let a = nlm4_testargs { cookie: Bytes::new(), exclusive, alock: l };
    let r: nlm4_testres = e.call(NLM_PROG, 4, NLM_TEST, &a).result();
    r.stat
}

/// The one GRANTED call handed over, with its arguments.
fn one_grant(out: &RecordingOutbound) -> (OutCall, nlm4_testargs) {
    let mut calls = out.take();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let c = calls.remove(0);
    let (prog, vers, proc_, args) = decode_call(&c);
    assert_eq!((prog, vers, proc_), (NLM_PROG, 4, NLM_GRANTED));
    (c, xdr::from_bytes(args).expect("nlm4_testargs"))
}

/// The client's answer `stat` to GRANTED call `c`.
fn answer(e: &Env, c: &OutCall, stat: nlm4_stats) {
    let res = nlm4_res { cookie: Bytes::new(), stat: nlm4_stat { stat } };
    e.core.outbound_done(c.id, OutReply::Reply(reply_to(c, &xdr::to_bytes(&res))));
}

fn quick_retries() -> CoreSettings {
    let nlm = NlmSettings { grant_retries: 3, grant_retry_ms: 100, grant_retry_max_ms: 150, ..NlmSettings::default() };
    CoreSettings { nlm, ..CoreSettings::default() }
}

fn file(e: &Env) -> Bytes {
    e.create_file(&e.root(), "f").data
}

#[test]
fn a_blocked_lock_is_granted_when_the_holder_unlocks() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = file(&e);
    assert_eq!(lock(&e, "a1", alock("a", &f, 1, 0, 100), true, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b1", alock("b", &f, 2, 50, 10), true, true), nlm4_stats::nlm4_blocked);
    assert_eq!(e.core.nlm_blocked(), 1);
    assert!(out.take().is_empty());
    // Asking again keeps its place (and takes the new cookie).
    assert_eq!(lock(&e, "b2", alock("b", &f, 2, 50, 10), true, true), nlm4_stats::nlm4_blocked);
    assert_eq!(e.core.nlm_blocked(), 1);
    assert_eq!(unlock(&e, alock("a", &f, 1, 0, 100)), nlm4_stats::nlm4_granted);
    let (c, g) = one_grant(&out);
    assert_eq!(
        (&g.cookie[..], g.exclusive, g.alock.svid, g.alock.l_offset, g.alock.l_len),
        (&b"b2"[..], true, 2, 50, 10)
    );
    assert_eq!(e.core.nlm_blocked(), 0);
    // B holds it from the unlock on.
    assert!(matches!(test(&e, alock("c", &f, 3, 55, 1), false), nlm4_testrply::nlm4_denied(h) if h.svid == 2));
    answer(&e, &c, nlm4_stats::nlm4_granted);
    assert!(!e.core.nlm_busy());
    assert_eq!(e.core.nlm_grants(), (1, 0, 0));
    assert!(matches!(test(&e, alock("c", &f, 3, 55, 1), false), nlm4_testrply::nlm4_denied(_)));
}

#[test]
fn waiters_are_served_in_order_and_readers_do_not_overtake_a_writer() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 0), false, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 0), true, true), nlm4_stats::nlm4_blocked);
    assert_eq!(lock(&e, "c", alock("c", &f, 3, 0, 0), true, true), nlm4_stats::nlm4_blocked);
    // A reader fits beside A's read lock but not before the waiting writers.
    assert_eq!(lock(&e, "d", alock("d", &f, 4, 0, 10), false, false), nlm4_stats::nlm4_denied);
    assert_eq!(unlock(&e, alock("a", &f, 1, 0, 0)), nlm4_stats::nlm4_granted);
    let (c, g) = one_grant(&out);
    assert_eq!(g.alock.svid, 2, "the first waiter first");
    answer(&e, &c, nlm4_stats::nlm4_granted);
    assert_eq!(unlock(&e, alock("b", &f, 2, 0, 0)), nlm4_stats::nlm4_granted);
    let (_, g) = one_grant(&out);
    assert_eq!(g.alock.svid, 3);
}

#[test]
fn an_unacknowledged_grant_is_given_up_and_passed_on() {
    let (e, clock, out) = env_with_nlm(quick_retries());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 0), true, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 0), true, true), nlm4_stats::nlm4_blocked);
    assert_eq!(lock(&e, "c", alock("c", &f, 3, 0, 0), true, true), nlm4_stats::nlm4_blocked);
    unlock(&e, alock("a", &f, 1, 0, 0));
    let (c, _) = one_grant(&out);
    e.core.outbound_done(c.id, OutReply::TimedOut);
    // Not sent again before its time.
    e.core.nlm_tick();
    assert!(out.take().is_empty());
    clock.advance(Duration::from_millis(100));
    e.core.nlm_tick();
    let (c2, g) = one_grant(&out);
    assert_eq!((c2.id, g.alock.svid), (c.id, 2));
    e.core.outbound_done(c2.id, OutReply::Unreachable);
    clock.advance(Duration::from_millis(150));
    e.core.nlm_tick();
    let (c3, _) = one_grant(&out);
    // The third failure gives up: the lock goes to C.
    e.core.outbound_done(c3.id, OutReply::NoService);
    let (c4, g) = one_grant(&out);
    assert_ne!(c4.id, c.id);
    assert_eq!(g.alock.svid, 3);
    assert_eq!(e.core.nlm_grants(), (0, 0, 1));
    assert!(matches!(test(&e, alock("b", &f, 2, 0, 1), true), nlm4_testrply::nlm4_denied(h) if h.svid == 3));
}

#[test]
fn a_refused_grant_is_released_at_once() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 10), true, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 10), true, true), nlm4_stats::nlm4_blocked);
    unlock(&e, alock("a", &f, 1, 0, 10));
    let (c, _) = one_grant(&out);
    answer(&e, &c, nlm4_stats::nlm4_denied);
    assert_eq!(e.core.nlm_grants(), (0, 1, 0));
    assert!(matches!(test(&e, alock("c", &f, 3, 0, 10), true), nlm4_testrply::default(nlm4_stats::nlm4_granted)));
}

#[test]
fn cancel_before_and_after_the_grant() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 10), true, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 10), true, true), nlm4_stats::nlm4_blocked);
    assert_eq!(cancel(&e, alock("b", &f, 2, 0, 10), true), nlm4_stats::nlm4_granted);
    assert_eq!(e.core.nlm_blocked(), 0);
    assert_eq!(cancel(&e, alock("b", &f, 2, 0, 10), true), nlm4_stats::nlm4_denied);
    unlock(&e, alock("a", &f, 1, 0, 10));
    assert!(out.take().is_empty(), "a cancelled request is not granted");
    // Cancelled after the grant, before the client acknowledged it.
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 10), true, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 10), true, true), nlm4_stats::nlm4_blocked);
    unlock(&e, alock("a", &f, 1, 0, 10));
    let (c, _) = one_grant(&out);
    assert_eq!(cancel(&e, alock("b", &f, 2, 0, 10), true), nlm4_stats::nlm4_granted);
    assert!(matches!(test(&e, alock("c", &f, 3, 0, 10), true), nlm4_testrply::default(nlm4_stats::nlm4_granted)));
    // The late answer matches nothing.
    answer(&e, &c, nlm4_stats::nlm4_granted);
    assert!(!e.core.nlm_busy());
}

#[test]
fn asking_again_after_the_grant_is_granted_and_ends_the_callback() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 10), true, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 10), true, true), nlm4_stats::nlm4_blocked);
    unlock(&e, alock("a", &f, 1, 0, 10));
    let (c, _) = one_grant(&out);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 10), true, true), nlm4_stats::nlm4_granted);
    // A "denied" to the stale GRANTED no longer releases B's lock.
    answer(&e, &c, nlm4_stats::nlm4_denied);
    assert!(matches!(test(&e, alock("c", &f, 3, 0, 10), true), nlm4_testrply::nlm4_denied(h) if h.svid == 2));
}

#[test]
fn free_all_drops_the_hosts_waiters() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 0), true, true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 0), true, true), nlm4_stats::nlm4_blocked);
    assert_eq!(lock(&e, "c", alock("c", &f, 3, 0, 0), true, true), nlm4_stats::nlm4_blocked);
    let r = e.call(NLM_PROG, 4, NLM_FREE_ALL, &nlm4_notify { name: Bytes::from_static(b"b"), state: 3 });
    r.result_with(|_| Ok(()));
    assert_eq!(e.core.nlm_blocked(), 1);
    // A restarting: C is next.
    let r = e.call(NLM_PROG, 4, NLM_FREE_ALL, &nlm4_notify { name: Bytes::from_static(b"a"), state: 3 });
    r.result_with(|_| Ok(()));
    let (_, g) = one_grant(&out);
    assert_eq!(g.alock.svid, 3);
}

#[test]
fn lock_msg_waits_and_is_told_with_granted_msg() {
    let (e, clock, out) = env_with_nlm(quick_retries());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 0), true, true), nlm4_stats::nlm4_granted);
    let a = nlm4_lockargs {
        cookie: Bytes::from_static(b"m"),
        block: true,
        exclusive: true,
        alock: alock("b", &f, 2, 0, 0),
        reclaim: false,
        state: 1,
    };
    e.call(NLM_PROG, 4, NLM_LOCK_MSG, &a).result_with(|_| Ok(()));
    let calls = out.take();
    assert_eq!(calls.len(), 1);
    let (_, _, proc_, args) = decode_call(&calls[0]);
    assert_eq!(proc_, NLM_LOCK_RES);
    let r: nlm4_res = xdr::from_bytes(args).unwrap();
    assert_eq!(r.stat.stat, nlm4_stats::nlm4_blocked);
    unlock(&e, alock("a", &f, 1, 0, 0));
    let calls = out.take();
    assert_eq!(calls.len(), 1);
    let (_, _, proc_, _) = decode_call(&calls[0]);
    assert_eq!(proc_, NLM_GRANTED_MSG);
    // The void reply, then the client's GRANTED_RES with the cookie.
    e.core.outbound_done(calls[0].id, OutReply::Reply(reply_to(&calls[0], &[])));
    assert!(e.core.nlm_busy());
    let res = nlm4_res { cookie: Bytes::from_static(b"m"), stat: nlm4_stat { stat: nlm4_stats::nlm4_granted } };
    e.call(NLM_PROG, 4, NLM_GRANTED_RES, &res).result_with(|_| Ok(()));
    assert_eq!(e.core.nlm_grants(), (1, 0, 0));
    clock.advance(Duration::from_secs(60));
    e.core.nlm_tick();
    assert!(out.take().is_empty());
}

/// An NFSv4 client's locks and an NLM waiter meet in one lock manager:
/// LOCKU and CLOSE wake the waiter, and a v4 LOCK does not overtake it.
#[test]
fn nfsv4_releases_wake_nlm_waiters() {
    let (e, _clock, out) = env_with_nlm(CoreSettings::default());
    let mut s = Session::ready(&e, "v4");
    let mut ops = vec![A::OP_PUTROOTFH, A::OP_PUTFH(PUTFH4args { object: e.mount("/export").data })];
    ops.push(A::OP_OPEN(open_args(0, 0, "o", "f", OPEN4_SHARE_ACCESS_BOTH, 0, true)));
    ops.push(A::OP_GETFH);
    let r = s.run(&e, ops);
    ok(&r);
    let open = opened(&r, 2).stateid.clone();
    let fh = fh_res(&r, 3);
    let r = s.run(&e, vec![putfh(&fh), lock_new(0, &open, 0, "lo", nfs_lock_type4::WRITE_LT, 0, 5)]);
    let R::OP_LOCK(LOCK4res::NFS4_OK(l)) = &r.resarray[1] else { panic!("{r:?}") };
    let lsid = l.lock_stateid.clone();
    assert_eq!(lock(&e, "b", alock("b", &fh, 2, 0, 10), true, true), nlm4_stats::nlm4_blocked);
    // Another v4 owner's LOCK of free bytes B waits for is refused.
    let r = s.run(&e, vec![putfh(&fh), lock_new(0, &open, 0, "l2", nfs_lock_type4::WRITE_LT, 200, 10)]);
    assert!(matches!(&r.resarray[1], R::OP_LOCK(LOCK4res::NFS4_OK(_))), "bytes nobody waits for");
    let r = s.run(&e, vec![putfh(&fh), lock_new(0, &open, 0, "l3", nfs_lock_type4::READ_LT, 5, 1)]);
    assert!(matches!(&r.resarray[1], R::OP_LOCK(LOCK4res::NFS4ERR_DENIED(_))), "{r:?}");
    let locku = A::OP_LOCKU(LOCKU4args {
        locktype: nfs_lock_type4::WRITE_LT,
        seqid: 0,
        lock_stateid: lsid,
        offset: 0,
        length: 5,
    });
    ok(&s.run(&e, vec![putfh(&fh), locku]));
    let (_, g) = one_grant(&out);
    assert_eq!(g.alock.svid, 2);
    // CLOSE (which drops the owner's locks) wakes the next.
    let r = s.run(&e, vec![putfh(&fh), lock_new(0, &open, 0, "l4", nfs_lock_type4::WRITE_LT, 300, 10)]);
    assert!(matches!(&r.resarray[1], R::OP_LOCK(LOCK4res::NFS4_OK(_))));
    assert_eq!(lock(&e, "c", alock("c", &fh, 3, 300, 1), true, true), nlm4_stats::nlm4_blocked);
    ok(&s.run(&e, vec![putfh(&fh), close_op(&open)]));
    let (_, g) = one_grant(&out);
    assert_eq!(g.alock.svid, 3);
}

#[test]
fn without_a_transport_or_in_grace_a_blocking_lock_is_refused() {
    let e = rw_env();
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 0), true, false), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 0), true, true), nlm4_stats::nlm4_denied);
    // A grace period after a restart with known clients.
    let store = Arc::new(server_core::MemStore::default());
    server_core::StableStore::insert(&*store, b"known client");
    let (mut g, _clock, _out) = env_with_nlm(CoreSettings::default());
    g.core = g.core.with_nfs4_env(
        Arc::new(server_core::ManualClock::default()),
        Arc::new(server_core::NoBackchannel),
        store,
    );
    let f = file(&g);
    assert_eq!(lock(&g, "b", alock("b", &f, 2, 0, 0), true, true), nlm4_stats::nlm4_denied_grace_period);
}

/// A blocked LOCK, as any NLM lock, takes only its file's shard.
#[test]
fn a_blocked_lock_takes_only_its_files_shard() {
    let (e, _clock, _out) = env_with_nlm(CoreSettings::default());
    let f = file(&e);
    assert_eq!(lock(&e, "a", alock("a", &f, 1, 0, 0), true, true), nlm4_stats::nlm4_granted);
    let (tables, shards) = (e.core.nfs4_state_locked(), e.core.nfs4_file_shards_locked());
    assert_eq!(lock(&e, "b", alock("b", &f, 2, 0, 0), true, true), nlm4_stats::nlm4_blocked);
    assert_eq!(e.core.nfs4_state_locked() - tables, 0);
    assert_eq!(e.core.nfs4_file_shards_locked() - shards, 1);
}

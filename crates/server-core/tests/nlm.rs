//! NLM v4 and NSM: locks between NFSv3 hosts, ranges, FREE_ALL and
//! SM_NOTIFY releasing a restarted host's locks, stale handles.

mod common;

use bytes::Bytes;
use common::*;
use proto::nlm::*;
use proto::nsm::*;

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

fn lock(e: &Env, l: nlm4_lock, exclusive: bool) -> nlm4_stats {
    let a =
        nlm4_lockargs { cookie: Bytes::from_static(b"c"), block: false, exclusive, alock: l, reclaim: false, state: 1 };
    let r: nlm4_res = e.call(NLM_PROG, 4, NLM_LOCK, &a).result();
    assert_eq!(&r.cookie[..], b"c");
    r.stat.stat
}

fn test(e: &Env, l: nlm4_lock, exclusive: bool) -> nlm4_testrply {
    let a = nlm4_testargs { cookie: Bytes::new(), exclusive, alock: l };
    let r: nlm4_testres = e.call(NLM_PROG, 4, NLM_TEST, &a).result();
    r.stat
}

fn unlock(e: &Env, l: nlm4_lock) -> nlm4_stats {
    let r: nlm4_res = e.call(NLM_PROG, 4, NLM_UNLOCK, &nlm4_unlockargs { cookie: Bytes::new(), alock: l }).result();
    r.stat.stat
}

#[test]
fn two_hosts_contend_for_a_range() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "f");
    assert_eq!(lock(&e, alock("a", &f, 1, 0, 100), true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, alock("b", &f, 7, 50, 10), true), nlm4_stats::nlm4_denied);
    // Shared locks by both are fine outside A's range; length 0 is to EOF.
    assert_eq!(lock(&e, alock("b", &f, 7, 100, 0), false), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, alock("a", &f, 1, 200, 5), false), nlm4_stats::nlm4_granted);
    match test(&e, alock("b", &f, 7, 0, 1), false) {
        nlm4_testrply::nlm4_denied(h) => {
            assert!(h.exclusive);
            assert_eq!((h.svid, h.l_offset, h.l_len), (1, 0, 100));
        }
        other => panic!("{other:?}"),
    }
    // A splits its lock by unlocking the middle; B gets the hole.
    assert_eq!(unlock(&e, alock("a", &f, 1, 40, 20)), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, alock("b", &f, 7, 45, 10), true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, alock("b", &f, 7, 30, 20), true), nlm4_stats::nlm4_denied);
    // Unlocking what is not held is granted.
    assert_eq!(unlock(&e, alock("c", &f, 3, 0, 0)), nlm4_stats::nlm4_granted);
}

/// NLM's lock holders have no owners in the NFSv4 tables: outside a
/// grace period a LOCK, TEST or UNLOCK takes only its file's shard, so
/// hosts locking different files share no lock.
#[test]
fn nlm_locks_take_only_their_files_shard() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "f");
    let (tables, shards) = (e.core.nfs4_state_locked(), e.core.nfs4_file_shards_locked());
    assert_eq!(lock(&e, alock("a", &f, 1, 0, 10), true), nlm4_stats::nlm4_granted);
    assert!(matches!(test(&e, alock("b", &f, 2, 5, 1), false), nlm4_testrply::nlm4_denied(_)));
    assert_eq!(unlock(&e, alock("a", &f, 1, 0, 10)), nlm4_stats::nlm4_granted);
    assert_eq!(e.core.nfs4_state_locked() - tables, 0, "NLM took the NFSv4 tables' lock");
    assert_eq!(e.core.nfs4_file_shards_locked() - shards, 3);
}

#[test]
fn restarted_host_loses_its_locks() {
    let e = rw_env();
    let f = e.create_file(&e.root(), "f");
    assert_eq!(lock(&e, alock("a", &f, 1, 0, 0), true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, alock("b", &f, 2, 0, 0), true), nlm4_stats::nlm4_denied);
    let r = e.call(NLM_PROG, 4, NLM_FREE_ALL, &nlm4_notify { name: Bytes::from_static(b"a"), state: 3 });
    assert!(r.accept_stat().is_some());
    assert_eq!(lock(&e, alock("b", &f, 2, 0, 0), true), nlm4_stats::nlm4_granted);
    // SM_NOTIFY from B's status monitor does the same.
    let _ = e.call(SM_PROG, 1, SM_NOTIFY, &stat_chge { mon_name: Bytes::from_static(b"b"), state: 5 });
    assert_eq!(lock(&e, alock("a", &f, 1, 0, 0), true), nlm4_stats::nlm4_granted);
}

#[test]
fn stale_and_forged_handles() {
    let e = rw_env();
    let mut fh = e.create_file(&e.root(), "f");
    let mut raw = fh.data.to_vec();
    raw[5] ^= 1;
    fh.data = Bytes::from(raw);
    assert_eq!(lock(&e, alock("a", &fh, 1, 0, 0), true), nlm4_stats::nlm4_stale_fh);
}

#[test]
fn status_monitor_answers() {
    let e = rw_env();
    let r: sm_stat_res = e.call(SM_PROG, 1, SM_STAT, &sm_name { mon_name: Bytes::from_static(b"x") }).result();
    assert_eq!(r.res_stat, sm_res::stat_succ);
    assert_eq!(r.state % 2, 1, "NSM state is odd while up");
}

//! NSM on the server's side: hosts granted NLM locks are monitored
//! durably, so that after a restart the grace period holds their ranges
//! for their reclaims (NLM has no RECLAIM_COMPLETE: it runs its length);
//! the NSM state grows at each start; a host's restart (SM_NOTIFY under
//! any name, from its address; FREE_ALL) frees its locks and ends its
//! monitoring. After a restart each host of before is told with
//! SM_NOTIFY, retried until it answers, and then no longer monitored
//! until its reclaims.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::outbound::*;
use common::v4::*;
use common::*;
use proto::nlm::*;
use proto::nsm::*;
use server_core::state::Nfs4Settings;
use server_core::{CoreSettings, ManualClock, MemStore};
use xdr::Decode;

fn alock(host: &str, fh: &proto::nfs3::nfs_fh3, off: u64, len: u64) -> nlm4_lock {
    nlm4_lock {
        caller_name: Bytes::copy_from_slice(host.as_bytes()),
        fh: fh.data.clone(),
        oh: Bytes::copy_from_slice(host.as_bytes()),
        svid: 1,
        l_offset: off,
        l_len: len,
    }
}

fn lock(e: &Env, l: nlm4_lock, reclaim: bool) -> nlm4_stats {
    let a = nlm4_lockargs { cookie: Bytes::new(), block: false, exclusive: true, alock: l, reclaim, state: 1 };
    let r: nlm4_res = e.call(NLM_PROG, 4, NLM_LOCK, &a).result();
    r.stat.stat
}

fn nsm_state(e: &Env) -> i32 {
    let r: sm_stat_res = e.call(SM_PROG, 1, SM_STAT, &sm_name { mon_name: Bytes::from_static(b"x") }).result();
    r.state
}

const GRACE_SECS: u32 = 10;

/// A server whose NFSv4 and NLM state is kept in `store`, exporting
/// `fs`: started again on both, it is the same server restarted.
fn start(fs: &Arc<vfs::MemFs>, store: &Arc<MemStore>) -> (Env, Arc<ManualClock>) {
    let nfs4 = Nfs4Settings { grace_secs: GRACE_SECS, lease_secs: GRACE_SECS, ..Nfs4Settings::default() };
    let settings = CoreSettings { nfs4, ..CoreSettings::default() };
    let backend: Arc<dyn vfs::Vfs> = fs.clone();
    let mut e = env_on_with("/export *(rw,insecure)\n", vec![backend], settings);
    let clock = Arc::new(ManualClock::default());
    e.core = e.core.with_nfs4_env(clock.clone(), Arc::new(RecordingBackchannel::default()), store.clone());
    (e, clock)
}

#[test]
fn monitored_hosts_reclaim_in_the_grace_period_after_a_restart() {
    let (fs, store) = (memfs(), Arc::new(MemStore::default()));
    let (e, _) = start(&fs, &store);
    let f = e.create_file(&e.root(), "f");
    let before = nsm_state(&e);
    assert_eq!(before % 2, 1);
    assert_eq!(lock(&e, alock("a", &f, 0, 100), false), nlm4_stats::nlm4_granted);

    let (e, clock) = start(&fs, &store);
    let after = nsm_state(&e);
    assert!(after > before && after % 2 == 1, "{before} then {after}");
    // B may not take A's range, nor any other, until A has reclaimed.
    assert_eq!(lock(&e, alock("b", &f, 0, 10), false), nlm4_stats::nlm4_denied_grace_period);
    assert_eq!(lock(&e, alock("a", &f, 0, 100), true), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, alock("b", &f, 200, 10), false), nlm4_stats::nlm4_denied_grace_period);
    clock.advance(Duration::from_secs(GRACE_SECS.into()));
    assert_eq!(lock(&e, alock("b", &f, 0, 10), false), nlm4_stats::nlm4_denied);
    assert_eq!(lock(&e, alock("b", &f, 200, 10), false), nlm4_stats::nlm4_granted);
}

/// A host that said it restarted is no longer monitored: the next start
/// has nobody to wait for.
#[test]
fn a_restarted_host_is_freed_and_forgotten() {
    let (fs, store) = (memfs(), Arc::new(MemStore::default()));
    let (mut e, _) = start(&fs, &store);
    let f = e.create_file(&e.root(), "f");
    e.peer = peer("10.0.0.5:700");
    assert_eq!(lock(&e, alock("a", &f, 0, 0), false), nlm4_stats::nlm4_granted);
    // Its status monitor names it otherwise ("a.example"); its address
    // is what the server knows it by. (Not on loopback: there every
    // client of the machine shares the address.)
    let n = stat_chge { mon_name: Bytes::from_static(b"a.example"), state: 7 };
    e.peer = peer("127.0.0.1:700");
    let _ = e.call(SM_PROG, 1, SM_NOTIFY, &n);
    assert_eq!(lock(&e, alock("b", &f, 0, 0), false), nlm4_stats::nlm4_denied);
    e.peer = peer("10.0.0.5:700");
    let _ = e.call(SM_PROG, 1, SM_NOTIFY, &n);
    assert_eq!(lock(&e, alock("b", &f, 0, 0), false), nlm4_stats::nlm4_granted);
    let _ = e.call(NLM_PROG, 4, NLM_FREE_ALL, &nlm4_notify { name: Bytes::from_static(b"b"), state: 3 });
    let (e, _) = start(&fs, &store);
    assert_eq!(lock(&e, alock("c", &f, 0, 0), false), nlm4_stats::nlm4_granted, "no grace period");
}

/// Two processes of one host hold locks under names of their own (as
/// nfsx's clients do): SM_NOTIFY naming one of them frees that one
/// alone, not every host at the address.
#[test]
fn a_known_name_frees_that_host_alone() {
    let (fs, store) = (memfs(), Arc::new(MemStore::default()));
    let (mut e, _) = start(&fs, &store);
    let (f, g) = (e.create_file(&e.root(), "f"), e.create_file(&e.root(), "g"));
    e.peer = peer("10.0.0.6:700");
    assert_eq!(lock(&e, alock("host.nfsx-1", &f, 0, 0), false), nlm4_stats::nlm4_granted);
    assert_eq!(lock(&e, alock("host.nfsx-2", &g, 0, 0), false), nlm4_stats::nlm4_granted);
    let n = stat_chge { mon_name: Bytes::from_static(b"host.nfsx-1"), state: 9 };
    let _ = e.call(SM_PROG, 1, SM_NOTIFY, &n);
    e.peer = peer("10.0.0.7:700");
    assert_eq!(lock(&e, alock("other", &f, 0, 0), false), nlm4_stats::nlm4_granted, "freed");
    assert_eq!(lock(&e, alock("other", &g, 0, 0), false), nlm4_stats::nlm4_denied, "still held");
}

/// The restarted server calls SM_NOTIFY on each host of before, at the
/// address its locks came from, naming itself by the address they came
/// to, with the new state; an unanswered call is made again later, and
/// an answered one ends the host's monitoring (its reclaim starts it
/// again).
#[test]
fn hosts_of_before_are_notified_until_they_answer() {
    let (fs, store) = (memfs(), Arc::new(MemStore::default()));
    let (mut e, _) = start(&fs, &store);
    let f = e.create_file(&e.root(), "f");
    e.peer = peer("10.0.0.5:700");
    e.peer.local = "10.0.0.1:2049".parse().unwrap();
    assert_eq!(lock(&e, alock("a", &f, 0, 0), false), nlm4_stats::nlm4_granted);

    let (mut e, clock) = start(&fs, &store);
    let out = Arc::new(RecordingOutbound::default());
    e.core = e.core.with_outbound(out.clone());
    let state = nsm_state(&e);
    assert!(e.core.nlm_busy());
    e.core.nlm_tick();
    let calls = out.take();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let c = &calls[0];
    assert_eq!((c.host, c.from, c.port), ("10.0.0.5".parse().unwrap(), "10.0.0.1".parse().unwrap(), None));
    let (prog, vers, proc_, args) = decode_call(c);
    assert_eq!((prog, vers, proc_), (SM_PROG, SM_VERS, SM_NOTIFY));
    let n = stat_chge::decode(&mut xdr::Decoder::new(args)).unwrap();
    assert_eq!((&n.mon_name[..], n.state), (&b"10.0.0.1"[..], state));

    // Unanswered: again after a while, not before.
    e.core.outbound_done(c.id, server_core::OutReply::Unreachable);
    e.core.nlm_tick();
    assert!(out.take().is_empty());
    clock.advance(Duration::from_secs(2));
    e.core.nlm_tick();
    let calls = out.take();
    assert_eq!(calls.len(), 1);
    e.core.outbound_done(calls[0].id, server_core::OutReply::Reply(reply_to(&calls[0], &[])));
    assert_eq!(e.core.nsm_counts(), (0, 1, 0));
    assert!(!e.core.nlm_busy());
    // A reclaimed lock monitors the host again.
    e.peer = peer("10.0.0.5:700");
    assert_eq!(lock(&e, alock("a", &f, 0, 0), true), nlm4_stats::nlm4_granted);
    assert_eq!(e.core.nsm_counts().0, 1);
}

//! The NFSv4.1 client against the server's own protocol core
//! (`server_core::Core` over MemFs, `common/core_bridge.rs`) on tokio's
//! paused clock: a lease that runs out while the client is cut off, slots
//! reused by many requests in turn and at once, a delegation recalled over
//! the back channel for another client's OPEN, and a server reboot with
//! the open reclaimed in the grace period. Leases, grace periods and
//! backoff run in virtual time, so each test takes milliseconds.

#[path = "common/core_bridge.rs"]
mod core_bridge;

use std::collections::HashMap;
use std::time::Duration;

use client::{Client, OpenOptions};
use core_bridge::{within, Bridge, Port, Seen};
use proto::nfs4::{
    nfs_argop4, nfs_cb_opnum4, nfs_opnum4 as Op, nfsstat4, open_claim4, open_delegation4, stateid4, OPEN4res,
    SEQUENCE4res,
};
use server_core::state::Nfs4Settings;

const LEASE: Duration = Duration::from_secs(6);

/// Short leases, no courtesy time: a client that stops renewing loses its
/// state one lease later (the core expires it at its next request).
fn nfs4() -> Nfs4Settings {
    Nfs4Settings { lease_secs: LEASE.as_secs() as u32, grace_secs: 10, courtesy_secs: 0, ..Nfs4Settings::default() }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8).collect()
}

/// Each compound's main operation and its status, for the record of what
/// a client sent.
fn summary(seen: &[Seen]) -> Vec<(Op, Option<nfsstat4>)> {
    seen.iter().map(|s| (s.main_op(), s.status())).collect()
}

/// The compounds that came through listener `port`.
fn through(seen: Vec<Seen>, port: usize) -> Vec<Seen> {
    seen.into_iter().filter(|s| s.port == port).collect()
}

/// `len` bytes from the start of `f`, read until they are all there.
async fn read_in(f: &mut client::File, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let mut n = 0;
    while n < len {
        let got = f.read(n as u64, &mut out[n..]).await.unwrap();
        assert!(got > 0, "end of file at {n} of {len}");
        n += got;
    }
    out
}

/// The stateid a compound's WRITE carries.
fn write_stateid(s: &Seen) -> Option<stateid4> {
    s.args.argarray.iter().find_map(|o| match o {
        nfs_argop4::OP_WRITE(w) => Some(w.stateid.clone()),
        _ => None,
    })
}

/// The stateid an OPEN that succeeded returned.
fn opened(s: &Seen) -> Option<stateid4> {
    match s.open_reply()? {
        OPEN4res::NFS4_OK(ok) => Some(ok.stateid.clone()),
        _ => None,
    }
}

/// Client A, through its own listener, opens "f" (holding a write
/// delegation) and writes it; then it is cut off for three leases, client
/// B opens and writes the file meanwhile, and A comes back, finds its
/// session gone and establishes itself again.
struct CutOff {
    bridge: Bridge,
    pa: Port,
    a: Client,
    /// B, still mounted (it holds a delegation on "f").
    _b: Client,
    /// A's file, opened before the cut.
    fa: client::File,
    /// The log from A's return on.
    back: usize,
}

async fn cut_off_past_the_lease() -> CutOff {
    let bridge = Bridge::new(nfs4());
    let (pa, pb) = (bridge.port().await, bridge.port().await);
    let a = pa.mount().await;
    let na = a.nfs41().unwrap().clone();
    let mut fa = a.open("f", OpenOptions::create().with_sync(true)).await.unwrap();
    fa.write(0, b"from A").await.unwrap();
    assert_eq!(na.delegations_held(), 1, "a write delegation: the back channel is up");

    // While it reaches the server, A keeps its lease with SEQUENCEs, one
    // every third of the lease.
    let m = bridge.mark();
    tokio::time::sleep(LEASE * 2).await;
    let renewals = through(bridge.since(m), pa.index);
    assert!(
        (5..=7).contains(&renewals.len())
            && renewals.iter().all(|s| s.renewal() && s.status() == Some(nfsstat4::NFS4_OK)),
        "{:?}",
        summary(&renewals)
    );

    // Cut off for three leases: its next renewal waits in the socket.
    pa.pause();
    let cut = bridge.now();
    tokio::time::sleep(LEASE * 3).await;

    // B opens the file A has open, and held a write delegation on, at
    // once: nothing is recalled, A's state is gone (no courtesy time).
    let b = pb.mount().await;
    let m = bridge.mark();
    let mut fb = b.open("f", OpenOptions::read_write().with_sync(true)).await.unwrap();
    let opens: Vec<Seen> = through(bridge.since(m), pb.index).into_iter().filter(|s| s.has(Op::OP_OPEN)).collect();
    assert_eq!(summary(&opens), [(Op::OP_OPEN, Some(nfsstat4::NFS4_OK))]);
    let recalls = bridge.with_log(|l| l.callbacks.iter().filter(|c| c.at >= cut && c.proc_ == 1).count());
    assert_eq!(recalls, 0, "nothing recalled from an expired client");
    fb.write(0, b"from B").await.unwrap();
    fb.close().await.unwrap();

    // A is back.
    let back = bridge.mark();
    pa.resume();
    let a_port = pa.index;
    bridge
        .until(|l| {
            let since = l.compounds.get(back..).unwrap_or_default();
            since.iter().any(|s| s.port == a_port && s.has(Op::OP_RECLAIM_COMPLETE))
        })
        .await;
    // Whatever else it sends at once (the renewal that failed, again).
    tokio::time::sleep(Duration::from_millis(50)).await;
    CutOff { bridge, pa, a, _b: b, fa, back }
}

#[tokio::test(start_paused = true)]
async fn a_client_cut_off_past_its_lease_loses_its_state_and_starts_again() {
    within(async {
        let CutOff { bridge, pa, a, _b, fa, back } = cut_off_past_the_lease().await;
        let na = a.nfs41().unwrap().clone();

        // Its waiting renewal finds the session gone (BADSESSION), the
        // client id too (STALE_CLIENTID): a new client id and session; the
        // open cannot be reclaimed outside a grace period (NO_GRACE); the
        // renewal then goes through.
        use nfsstat4::*;
        let seen = through(bridge.since(back), pa.index);
        assert_eq!(
            summary(&seen),
            [
                (Op::OP_SEQUENCE, Some(NFS4ERR_BADSESSION)),
                (Op::OP_CREATE_SESSION, Some(NFS4ERR_STALE_CLIENTID)),
                (Op::OP_EXCHANGE_ID, Some(NFS4_OK)),
                (Op::OP_CREATE_SESSION, Some(NFS4_OK)),
                (Op::OP_OPEN, Some(NFS4ERR_NO_GRACE)),
                (Op::OP_RECLAIM_COMPLETE, Some(NFS4_OK)),
                (Op::OP_SEQUENCE, Some(NFS4_OK)),
            ]
        );
        assert!(matches!(seen[4].open().unwrap().claim, open_claim4::CLAIM_PREVIOUS(_)));
        let counters = na.counters();
        assert_eq!((counters.sessions_created, counters.reclaims, na.delegations_held()), (2, 0, 0), "{counters:?}");

        // The new client works, and sees what B wrote.
        let mut g = a.open("f", OpenOptions::read()).await.unwrap();
        assert_eq!(read_in(&mut g, 6).await, b"from B");
        g.close().await.unwrap();
        a.write_file("g", b"after").await.unwrap();
        assert_eq!(bridge.file("g").unwrap(), b"after");
        drop(fa);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn io_on_an_open_lost_with_the_lease_fails_instead_of_writing_over_another_client() {
    within(async {
        // The clients and A's listener stay: only the open is lost.
        let CutOff { bridge, mut fa, _b, a: _a, pa: _pa, .. } = cut_off_past_the_lease().await;
        // RFC 8881 section 8.4.3: state the server revoked while the client
        // was cut off is lost to it; I/O under it must fail (Linux: EIO),
        // not go on without it.
        let r = fa.write(0, b"A again").await;
        assert!(r.is_err(), "a WRITE through an open the server expired succeeded");
        assert_eq!(bridge.file("f").unwrap(), b"from B");
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn slots_are_reused_in_turn_and_at_once_and_follow_the_servers_target() {
    within(async {
        // Sixteen slots, of which the server first asks for two.
        let bridge = Bridge::new(Nfs4Settings { max_slots: 16, initial_target_slots: 2, ..nfs4() });
        let p = bridge.port().await;
        let c = p.mount().await;
        let n = c.nfs41().unwrap().clone();
        let root = c.root().data.clone();

        // One at a time: every request on slot 0.
        let m = bridge.mark();
        for _ in 0..100 {
            n.getattr(&root).await.unwrap();
        }
        let seen = bridge.since(m);
        assert_eq!(seen.len(), 100);
        assert!(seen.iter().all(|s| s.sequence().map(|q| q.sa_slotid) == Some(0)));

        // 32 at once, six times a second apart: the server doubles its
        // target after each busy second, and the client follows it up to
        // the sixteen slots the session has.
        let mut highest = Vec::new();
        for _ in 0..6 {
            let r = bridge.mark();
            let calls: Vec<_> = (0..32)
                .map(|_| {
                    let (n, fh) = (n.clone(), root.clone());
                    tokio::spawn(async move { n.getattr(&fh).await })
                })
                .collect();
            for t in calls {
                t.await.unwrap().expect("a caller waits for a slot rather than fail");
            }
            highest.push(bridge.since(r).iter().filter_map(|s| s.sequence().map(|q| q.sa_slotid)).max().unwrap());
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
        assert_eq!(highest.first(), Some(&1), "two slots at first: {highest:?}");
        assert!(highest.windows(2).all(|w| w[0] <= w[1]) && highest.last() == Some(&15), "{highest:?}");

        // Nothing out of order in all of it: each slot's sequence id one
        // up from its last, every request answered OK, and no slot used
        // above the highest target the server had announced.
        let all = bridge.since(0);
        let mut last: HashMap<([u8; 16], u32), u32> = HashMap::new();
        let mut target = None;
        let mut getattrs = 0;
        for s in all.iter().filter(|s| s.sequence().is_some()) {
            let q = s.sequence().unwrap();
            assert_eq!(s.status(), Some(nfsstat4::NFS4_OK), "{:?}", s.reply);
            if let Some(prev) = last.insert((q.sa_sessionid, q.sa_slotid), q.sa_sequenceid) {
                assert_eq!(q.sa_sequenceid, prev.wrapping_add(1), "slot {}", q.sa_slotid);
            }
            assert!(q.sa_slotid <= target.unwrap_or(0), "slot {} above target {target:?}", q.sa_slotid);
            if let Some(SEQUENCE4res::NFS4_OK(ok)) = s.sequence_reply() {
                target = Some(target.unwrap_or(0).max(ok.sr_target_highest_slotid));
            }
            getattrs += usize::from(s.main_op() == Op::OP_GETATTR);
        }
        assert!(getattrs >= 100 + 6 * 32);
        assert_eq!(n.counters().sessions_created, 1);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn another_clients_open_recalls_the_delegation_over_the_back_channel() {
    within(async {
        let bridge = Bridge::new(nfs4());
        let (pa, pb) = (bridge.port().await, bridge.port().await);
        let (a, b) = (pa.mount().await, pb.mount().await);
        let (na, nb) = (a.nfs41().unwrap().clone(), b.nfs41().unwrap().clone());

        // A writes under a write delegation: the data stays in its cache.
        let mut fa = a.open("f", OpenOptions::create()).await.unwrap();
        let data = pattern(100_000, 3);
        fa.write(0, &data).await.unwrap();
        assert_eq!(na.delegations_held(), 1);
        assert_eq!(bridge.file("f").unwrap(), b"", "cached under the delegation");

        // B's OPEN for writing: the core recalls the delegation on A's back
        // channel and answers DELAY; A writes back and returns it; B's
        // OPEN, tried again, gets the file.
        let m = bridge.mark();
        let t0 = bridge.now();
        let mut fb = b.open("f", OpenOptions::read_write()).await.unwrap();
        let took = bridge.now() - t0;
        let seen = bridge.since(m);
        let (by_a, by_b) = (through(seen.clone(), pa.index), through(seen.clone(), pb.index));
        let opens: Vec<Seen> = by_b.into_iter().filter(|s| s.has(Op::OP_OPEN)).collect();
        let statuses: Vec<_> = opens.iter().map(Seen::status).collect();
        assert!(
            statuses.len() >= 2
                && statuses.iter().rev().skip(1).all(|s| *s == Some(nfsstat4::NFS4ERR_DELAY))
                && statuses.last() == Some(&Some(nfsstat4::NFS4_OK)),
            "{statuses:?}"
        );
        let a_conn = by_a.first().unwrap().conn;
        let recall = bridge.with_log(|l| {
            l.callbacks.iter().filter(|c| c.proc_ == 1).map(|c| (c.conn, c.ops.clone(), c.sent)).collect::<Vec<_>>()
        });
        assert_eq!(recall, [(a_conn, vec![nfs_cb_opnum4::OP_CB_SEQUENCE, nfs_cb_opnum4::OP_CB_RECALL], true)]);
        assert!(bridge.with_log(|l| l.cb_replies.iter().any(|(_, c)| *c == a_conn)), "A answered the recall");
        // A's writes, then its DELEGRETURN, all before B's OPEN went through.
        let steps = summary(&by_a);
        assert_eq!(steps.last(), Some(&(Op::OP_DELEGRETURN, Some(nfsstat4::NFS4_OK))), "{steps:?}");
        assert!(steps
            .iter()
            .rev()
            .skip(1)
            .all(|s| matches!(s, (Op::OP_WRITE | Op::OP_COMMIT, Some(nfsstat4::NFS4_OK)))));
        assert!(steps.iter().any(|s| s.0 == Op::OP_WRITE));
        assert!(by_a.last().unwrap().at <= opens.last().unwrap().at);
        let returned = seen.iter().position(|s| s.has(Op::OP_DELEGRETURN)).unwrap();
        let granted = seen.iter().position(|s| s.has(Op::OP_OPEN) && s.status() == Some(nfsstat4::NFS4_OK)).unwrap();
        assert!(returned < granted);
        assert!(took < Duration::from_secs(1), "B waited {took:?}");
        assert_eq!((na.counters().recalls, na.delegations_held()), (1, 0));
        assert!(nb.counters().delay_retries >= 1);

        // B sees what A wrote.
        assert!(read_in(&mut fb, data.len()).await == data);
        fb.close().await.unwrap();
        fa.close().await.unwrap();
        assert!(bridge.file("f").unwrap() == data);
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn after_a_reboot_the_open_is_reclaimed_in_grace_and_the_file_stays_readable() {
    within(async {
        let bridge = Bridge::new(nfs4());
        let (pa, pb) = (bridge.port().await, bridge.port().await);
        let (a, b) = (pa.mount().await, pb.mount().await);
        let na = a.nfs41().unwrap().clone();
        let how = OpenOptions { read: true, write: true, create: true, sync: true, ..Default::default() };
        let mut f = a.open("r", how).await.unwrap();
        f.write(0, b"before").await.unwrap();
        // B holds state too, and will not come back in time to reclaim it:
        // the grace period then lasts its whole length.
        let mut fb = b.open("other", OpenOptions::create()).await.unwrap();
        fb.write(0, b"b").await.unwrap();
        fb.flush().await.unwrap();
        let m = bridge.mark();
        let first_open =
            bridge.with_log(|l| l.compounds.iter().find(|s| s.port == pa.index && s.has(Op::OP_OPEN)).cloned());
        let Some(OPEN4res::NFS4_OK(old)) = first_open.as_ref().and_then(Seen::open_reply).cloned() else { panic!() };
        let open_delegation4::OPEN_DELEGATE_WRITE(deleg) = &old.delegation else { panic!("{:?}", old.delegation) };
        let (old, deleg) = (old.stateid.clone(), deleg.stateid.clone());

        // A's next WRITE is on its way when the server goes down.
        pa.pause();
        pb.pause();
        let write = tokio::spawn(async move {
            let r = f.write(6, b" after").await;
            (f, r)
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t0 = bridge.now();
        bridge.reboot().await;
        pa.resume();
        let (mut f, r) = write.await.unwrap();
        r.expect("the WRITE completes after the reboot");
        let took = bridge.now() - t0;

        // Sent again on a new connection: the session and then the client
        // id are stale; a new client id reclaims the open (CLAIM_PREVIOUS)
        // and says it is done, and the WRITE goes through under the
        // reclaimed open. (The new connection's BIND_CONN_TO_SESSION, which
        // finds the session gone, races with the resent WRITE.)
        use nfsstat4::*;
        let seen: Vec<Seen> =
            through(bridge.since(m), pa.index).into_iter().filter(|s| !s.has(Op::OP_BIND_CONN_TO_SESSION)).collect();
        assert!(seen.iter().all(|s| s.boot == 1));
        assert_eq!(
            summary(&seen),
            [
                (Op::OP_WRITE, Some(NFS4ERR_BADSESSION)),
                (Op::OP_CREATE_SESSION, Some(NFS4ERR_STALE_CLIENTID)),
                (Op::OP_EXCHANGE_ID, Some(NFS4_OK)),
                (Op::OP_CREATE_SESSION, Some(NFS4_OK)),
                (Op::OP_OPEN, Some(NFS4_OK)),
                (Op::OP_RECLAIM_COMPLETE, Some(NFS4_OK)),
                (Op::OP_WRITE, Some(NFS4_OK)),
            ]
        );
        assert!(matches!(seen[4].open().unwrap().claim, open_claim4::CLAIM_PREVIOUS(_)));
        let new = opened(&seen[4]).unwrap();
        assert_ne!(new.other, old.other);
        // I/O names an open's stateid with seqid 0, "its current seqid"
        // (RFC 8881 section 8.2.2).
        let current = |s: &stateid4| stateid4 { seqid: 0, other: s.other };
        // Before, under the write delegation (not reclaimed: the open's
        // stateid takes its place); after, under the reclaimed open.
        assert_eq!(write_stateid(&seen[0]), Some(deleg));
        assert_eq!(write_stateid(&seen[6]), Some(current(&new)));
        assert!(took < Duration::from_millis(1100), "the reclaim waited: {took:?}");

        // A new open waits out the grace period (B never reclaimed).
        let m = bridge.mark();
        let t1 = bridge.now();
        a.write_file("new", b"n").await.unwrap();
        let waited = bridge.now() - t1;
        let opens: Vec<_> =
            through(bridge.since(m), pa.index).iter().filter(|s| s.has(Op::OP_OPEN)).map(Seen::status).collect();
        assert!(opens.len() > 2 && opens.last() == Some(&Some(NFS4_OK)), "{opens:?}");
        assert!(opens.iter().rev().skip(1).all(|s| *s == Some(NFS4ERR_GRACE)), "{opens:?}");
        let grace_left = Duration::from_secs(10) - (t1 - t0 - Duration::from_secs(1));
        assert!(
            waited >= grace_left && waited < grace_left + Duration::from_millis(1100),
            "{waited:?}, {grace_left:?}"
        );

        // The reclaimed file reads back whole, under the reclaimed open.
        let m = bridge.mark();
        assert_eq!(read_in(&mut f, 12).await, b"before after");
        f.close().await.unwrap();
        for s in through(bridge.since(m), pa.index) {
            for op in &s.args.argarray {
                match op {
                    nfs_argop4::OP_READ(r) => assert_eq!(r.stateid, current(&new)),
                    nfs_argop4::OP_CLOSE(c) => assert_eq!(c.open_stateid.other, new.other),
                    _ => {}
                }
            }
        }
        assert_eq!(bridge.file("r").unwrap(), b"before after");
        let counters = na.counters();
        assert_eq!((counters.reclaims, counters.sessions_created), (1, 2), "{counters:?}");
        drop(fb);
    })
    .await
}

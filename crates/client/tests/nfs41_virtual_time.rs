//! The NFSv4.1 client against a scripted fake server
//! (`common/fake41`) on tokio's paused clock: the slot table following
//! the server's target up and down, a misordered sequence id and a lost
//! reply, a session lost with requests in flight, a reply that does not
//! decode, a recall while writes are in flight and one that overtakes the
//! OPEN granting the delegation, lease renewal and the loss of a lease,
//! and a server reboot with reclaim during its grace period. Lease
//! periods, grace periods and backoff run in virtual time, so each test
//! takes milliseconds of wall time.

#[path = "common/fake41/mod.rs"]
mod fake41;

use std::time::Duration;

use bytes::Bytes;
use client::{Client, Fattr, OpenOptions};
use fake41::{within, Fake, Fault, Match, Seen};
use proto::nfs3::ftype3;
use proto::nfs4::{nfs_argop4, nfs_opnum4 as Op, nfs_resop4, nfsstat4, open_claim4, stable_how4, stateid4, OPEN4res};
use tokio::task::JoinHandle;
use tokio::time::Instant;

async fn mount(fake: &Fake) -> Client {
    Client::connect(&fake.url(), fake41::virtual_settings()).await.expect("mount")
}

/// Gives the client a moment (of virtual time) to send whatever else it
/// would, before a test checks that it did not.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8).collect()
}

fn seqid(s: &Seen) -> u32 {
    s.seq.as_ref().expect("a SEQUENCE").sa_sequenceid
}

/// What each compound was for: its main operation (or SEQUENCE for a
/// renewal) and the status it got.
/// The requests seen but the BIND_CONN_TO_SESSION the client sends on
/// each new connection, whose place among the others is a race.
fn without_binds(seen: Vec<Seen>) -> Vec<Seen> {
    seen.into_iter().filter(|s| !s.has(Op::OP_BIND_CONN_TO_SESSION)).collect()
}

fn summary(seen: &[Seen]) -> Vec<(Op, nfsstat4)> {
    seen.iter()
        .map(|s| {
            let main = s.ops.iter().map(|o| o.discriminant()).find(|o| !matches!(o, Op::OP_PUTFH | Op::OP_PUTROOTFH));
            (main.unwrap_or(Op::OP_SEQUENCE), s.status())
        })
        .collect()
}

/// `k` concurrent GETATTRs of `fh`.
fn getattrs(c: &Client, fh: &Bytes, k: usize) -> Vec<JoinHandle<client::Result<Fattr>>> {
    (0..k)
        .map(|_| {
            let (n, fh) = (c.nfs41().expect("v4.1").clone(), fh.clone());
            tokio::spawn(async move { n.getattr(&fh).await })
        })
        .collect()
}

async fn all_ok(calls: Vec<JoinHandle<client::Result<Fattr>>>) {
    for t in calls {
        let a = t.await.expect("task").expect("a caller waits for a slot rather than fail");
        assert_eq!(a.r#type, ftype3::NF3DIR);
    }
}

/// The stateid an OPEN's reply carried.
fn opened(s: &Seen) -> stateid4 {
    s.reply
        .resarray
        .iter()
        .find_map(|r| match r {
            nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok)) => Some(ok.stateid.clone()),
            _ => None,
        })
        .expect("an OPEN that succeeded")
}

#[tokio::test(start_paused = true)]
async fn the_slot_table_follows_the_servers_target_up_and_down() {
    within(async {
        let fake = Fake::start(|s| {
            s.slots = 16;
            s.target_highest_slotid = Some(0);
        })
        .await;
        let c = mount(&fake).await;
        let root = c.root().data.clone();

        // One slot wanted (target 0): sixteen callers take turns on it.
        let m = fake.mark();
        all_ok(getattrs(&c, &root, 16)).await;
        let seen = fake.since(m);
        assert_eq!(seen.len(), 16);
        assert!(seen.iter().all(|s| s.slot() == Some(0)), "{:?}", seen.iter().map(Seen::slot).collect::<Vec<_>>());

        // Target 7: once a reply says so, eight requests go out together.
        fake.with(|s| s.target_highest_slotid = Some(7));
        c.nfs41().unwrap().getattr(&root).await.unwrap();
        fake.hold(Some(Match::Sequenced));
        let calls = getattrs(&c, &root, 16);
        fake.until(|s| s.held() >= 8).await;
        settle().await;
        assert_eq!(fake.with(|s| s.held_slots()), (0..8).collect::<Vec<u32>>(), "slots 0-7 in flight at once");

        // Down to two slots (target 1) while those eight are outstanding:
        // their replies say so, every request after them uses slot 0 or 1,
        // and the callers queued meanwhile wait for those.
        let m = fake.mark();
        fake.with(|s| s.target_highest_slotid = Some(1));
        fake.hold(None);
        fake.release();
        all_ok(calls).await;
        let after = fake.since(m);
        assert_eq!(after.len(), 8);
        assert!(after.iter().all(|s| s.slot() <= Some(1)), "{:?}", after.iter().map(Seen::slot).collect::<Vec<_>>());

        // And it stays at two in flight.
        let m = fake.mark();
        fake.hold(Some(Match::Sequenced));
        let calls = getattrs(&c, &root, 16);
        fake.until(|s| s.held() >= 2).await;
        settle().await;
        assert_eq!(fake.with(|s| s.held_slots()), vec![0, 1]);
        fake.hold(None);
        fake.release();
        all_ok(calls).await;
        assert!(fake.since(m).iter().all(|s| s.slot() <= Some(1)));
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_misordered_sequence_and_a_lost_reply_cost_a_retry_and_no_slot() {
    within(async {
        let fake = Fake::start(|s| s.slots = 4).await;
        let c = mount(&fake).await;
        let n = c.nfs41().unwrap().clone();
        let root = c.root().data.clone();

        // NFS4ERR_SEQ_MISORDERED: the request did not run; after a
        // backoff it goes again on the same slot and sequence id.
        let m = fake.mark();
        fake.inject(Match::Op(Op::OP_GETATTR), Fault::Sequence(nfsstat4::NFS4ERR_SEQ_MISORDERED));
        assert_eq!(n.getattr(&root).await.expect("retried").r#type, ftype3::NF3DIR);
        let seen = fake.since(m);
        assert_eq!(
            summary(&seen),
            [(Op::OP_GETATTR, nfsstat4::NFS4ERR_SEQ_MISORDERED), (Op::OP_GETATTR, nfsstat4::NFS4_OK)]
        );
        assert_eq!((seen[0].slot(), seqid(&seen[0])), (seen[1].slot(), seqid(&seen[1])));
        assert!(seen[1].at - seen[0].at >= Duration::from_millis(1), "backed off");
        assert_eq!(n.counters().delay_retries, 1);

        // A lost reply: the server ran the request, then the connection
        // closed. The client sends it again on a new connection, and the
        // server answers from the slot's reply cache.
        let m = fake.mark();
        fake.inject(Match::Op(Op::OP_GETATTR), Fault::DropReply);
        assert_eq!(n.getattr(&root).await.expect("sent again").r#type, ftype3::NF3DIR);
        let seen = without_binds(fake.since(m));
        assert_eq!(seen.len(), 2, "{:?}", summary(&seen));
        assert!(seen[1].replay && seen[1].conn != seen[0].conn);
        assert_eq!((seen[0].slot(), seqid(&seen[0])), (seen[1].slot(), seqid(&seen[1])));

        // The back channel went with that connection: the client binds the
        // new one (at once after the reconnect, or when a reply says the
        // path is down, SEQ4_STATUS_CB_PATH_DOWN_SESSION).
        n.getattr(&root).await.unwrap();
        fake.until(|s| s.log.iter().any(|x| x.has(Op::OP_BIND_CONN_TO_SESSION))).await;

        // No slot was lost: four requests are in flight together again,
        // every sequence id one up from its slot's last (the fake checks).
        fake.hold(Some(Match::Sequenced));
        let calls = getattrs(&c, &root, 8);
        fake.until(|s| s.held() >= 4).await;
        settle().await;
        assert_eq!(fake.with(|s| s.held_slots()), vec![0, 1, 2, 3]);
        fake.hold(None);
        fake.release();
        all_ok(calls).await;
        let misordered = fake.since(0).iter().filter(|s| s.status() == nfsstat4::NFS4ERR_SEQ_MISORDERED).count();
        assert_eq!(misordered, 1, "only the scripted one");
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_session_lost_with_a_request_in_flight_is_replaced_once_without_mixing_slots() {
    within(async {
        let fake = Fake::start(|s| s.slots = 2).await;
        let c = mount(&fake).await;
        let n = c.nfs41().unwrap().clone();
        let root = c.root().data.clone();

        // A is in flight on the first session when the server loses it.
        fake.hold(Some(Match::Sequenced));
        let a = getattrs(&c, &root, 1);
        fake.until(|s| s.held() == 1).await;
        fake.hold(None);
        fake.lose_sessions();
        // Four callers get NFS4ERR_BADSESSION (two at a time): one makes
        // a new session, the others wait for it and go on with it.
        let m = fake.mark();
        all_ok(getattrs(&c, &root, 4)).await;
        let creates = fake.since(m).iter().filter(|s| s.has(Op::OP_CREATE_SESSION)).count();
        assert_eq!(creates, 1, "{:?}", summary(&fake.since(m)));

        // Both slots of the new session are busy, a third caller waits,
        // when A's late reply (from the old session) comes in: its slot
        // is not the new session's slot of the same number.
        fake.hold(Some(Match::Sequenced));
        let calls = getattrs(&c, &root, 3);
        fake.until(|s| s.held() == 3).await;
        settle().await;
        fake.release_one();
        settle().await;
        assert_eq!(fake.violations(), Vec::<String>::new());
        assert_eq!(fake.with(|s| s.held()), 2, "nothing more sent while both slots are busy");
        fake.hold(None);
        fake.release();
        all_ok(a).await;
        all_ok(calls).await;
        let misordered = fake.since(0).iter().filter(|s| s.status() == nfsstat4::NFS4ERR_SEQ_MISORDERED).count();
        assert_eq!(misordered, 0);
        assert_eq!(n.counters().sessions_created, 2);
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_reply_is_a_clear_error_and_the_slot_goes_on() {
    within(async {
        let fake = Fake::start(|_| {}).await;
        let c = mount(&fake).await;
        let n = c.nfs41().unwrap().clone();
        let root = c.root().data.clone();

        // The server ran the request; its reply does not decode.
        fake.inject(Match::Op(Op::OP_GETATTR), Fault::Garbage);
        let err = n.getattr(&root).await.expect_err("garbage is an error");
        assert!(matches!(err, client::Error::Decode { .. }), "{err:?}");
        assert!(err.to_string().contains("malformed reply"), "{err}");
        n.getattr(&root).await.expect("the slot's next sequence id is the server's");

        // The server did not run it: the client's next sequence id on the
        // slot is one ahead, the server says so (SEQ_MISORDERED), and the
        // client steps back and goes on.
        fake.inject(Match::Op(Op::OP_GETATTR), Fault::GarbageUnexecuted);
        assert!(matches!(n.getattr(&root).await, Err(client::Error::Decode { .. })));
        let m = fake.mark();
        n.getattr(&root).await.expect("recovers the slot");
        let seen = fake.since(m);
        assert_eq!(
            summary(&seen),
            [(Op::OP_GETATTR, nfsstat4::NFS4ERR_SEQ_MISORDERED), (Op::OP_GETATTR, nfsstat4::NFS4_OK)]
        );
        assert_eq!(seqid(&seen[1]) + 1, seqid(&seen[0]));
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_recall_while_writes_are_in_flight_flushes_them_all_before_delegreturn() {
    within(async {
        let fake = Fake::start(|s| {
            s.delegate_writes = true;
            s.maxrw = 8192;
        })
        .await;
        let c = mount(&fake).await;
        let n = c.nfs41().unwrap().clone();
        let mut f = c.open("f", OpenOptions::create()).await.unwrap();
        let fh = f.handle().data.clone();
        assert_eq!(n.delegations_held(), 1);
        let deleg = fake.with(|s| {
            s.log.iter().find_map(|x| {
                x.reply.resarray.iter().find_map(|r| match r {
                    nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok)) => match &ok.delegation {
                        proto::nfs4::open_delegation4::OPEN_DELEGATE_WRITE(d) => Some(d.stateid.clone()),
                        _ => None,
                    },
                    _ => None,
                })
            })
        });
        let deleg = deleg.expect("a write delegation");

        // Eight full 8 KiB blocks go out as WRITEs behind the writer (their
        // replies held); the last 1000 bytes stay cached.
        fake.hold(Some(Match::Op(Op::OP_WRITE)));
        let data = pattern(8 * 8192 + 1000, 5);
        for (i, chunk) in data.chunks(4096).enumerate() {
            f.write((i * 4096) as u64, chunk).await.unwrap();
        }
        fake.until(|s| s.held() >= 1).await;
        settle().await;
        let in_flight = fake.with(|s| s.held());
        assert!(in_flight >= 2, "{in_flight} WRITEs in flight");

        // The recall is answered at once, the delegation returned later.
        let res = fake.recall(&fh).await;
        assert_eq!(res.status, nfsstat4::NFS4_OK, "{res:?}");
        assert!(matches!(res.resarray.last(), Some(proto::nfs4::nfs_cb_resop4::OP_CB_RECALL(r)) if r.status == nfsstat4::NFS4_OK));
        settle().await;
        assert!(!fake.with(|s| s.log.iter().any(|x| x.has(Op::OP_DELEGRETURN))), "returned with WRITEs unanswered");
        fake.hold(None);
        fake.release();
        fake.until(|s| s.log.iter().any(|x| x.has(Op::OP_DELEGRETURN))).await;
        f.close().await.unwrap();

        let log = fake.since(0);
        let returned = log.iter().position(|x| x.has(Op::OP_DELEGRETURN)).unwrap();
        let writes: Vec<usize> = (0..log.len()).filter(|&i| log[i].write().is_some()).collect();
        assert!(writes.iter().all(|&i| i < returned), "a WRITE after DELEGRETURN: {:?}", summary(&log[returned..]));
        // Everything written is on the server before the delegation goes.
        let mut server = vec![0u8; data.len()];
        for &i in &writes {
            let w = log[i].write().unwrap();
            assert_eq!(log[i].status(), nfsstat4::NFS4_OK);
            server[w.offset as usize..w.offset as usize + w.data.len()].copy_from_slice(&w.data);
        }
        assert!(server == data, "the bytes written before DELEGRETURN");
        if writes.iter().any(|&i| log[i].write().unwrap().stable == stable_how4::UNSTABLE4) {
            let commit = log.iter().rposition(|x| x.has(Op::OP_COMMIT)).expect("a COMMIT for unstable WRITEs");
            assert!(writes.iter().all(|&i| i < commit) && commit < returned);
        }
        let returned_id = log[returned].ops.iter().find_map(|o| match o {
            nfs_argop4::OP_DELEGRETURN(a) => Some(a.deleg_stateid.clone()),
            _ => None,
        });
        assert_eq!(returned_id, Some(deleg));
        assert!(log[returned..].iter().any(|x| x.has(Op::OP_CLOSE)));
        assert_eq!(fake.file("f").unwrap(), data);
        assert_eq!((n.counters().recalls, n.delegations_held()), (1, 0));
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_recall_that_overtakes_the_grant_waits_for_it_or_asks_to_be_sent_again() {
    within(async {
        let fake = Fake::start(|s| s.delegate_writes = true).await;
        let c = mount(&fake).await;
        let n = c.nfs41().unwrap().clone();
        let returned = |fh: Bytes| {
            move |s: &fake41::State| {
                s.log.iter().any(|x| {
                    x.has(Op::OP_DELEGRETURN)
                        && x.ops.iter().any(|o| matches!(o, nfs_argop4::OP_PUTFH(p) if p.object == fh))
                })
            }
        };
        let open_late = |name: &'static str| {
            let c = c.clone();
            tokio::spawn(async move { c.open(name, OpenOptions::create()).await })
        };

        // The OPEN that grants the delegation is answered after the
        // recall arrives, within the client's wait: the recall finds the
        // delegation and it goes back.
        fake.hold(Some(Match::Op(Op::OP_OPEN)));
        let open = open_late("g");
        fake.until(|s| s.held() == 1).await;
        let g = fake41::handle("g");
        let (res, ()) = tokio::join!(fake.recall(&g), async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            fake.hold(None);
            fake.release();
        });
        assert_eq!(res.status, nfsstat4::NFS4_OK, "{res:?}");
        let f = open.await.unwrap().expect("the OPEN completes");
        fake.until(returned(g)).await;
        f.close().await.unwrap();

        // Answered only after the client's wait: the recall names the
        // OPEN (referring calls), whose reply the client has not seen, so
        // the client asks for the recall again later (NFS4ERR_DELAY, RFC
        // 8881 section 2.10.6.3) rather than saying it holds no such
        // delegation; the next recall finds it.
        fake.hold(Some(Match::Op(Op::OP_OPEN)));
        let open = open_late("h");
        fake.until(|s| s.held() == 1).await;
        let res = fake.recall(&fake41::handle("h")).await;
        assert_eq!(res.status, nfsstat4::NFS4ERR_DELAY, "{res:?}");
        fake.hold(None);
        fake.release();
        let f = open.await.unwrap().expect("the OPEN completes");
        assert_eq!(fake.recall(&fake41::handle("h")).await.status, nfsstat4::NFS4_OK);
        fake.until(returned(fake41::handle("h"))).await;
        f.close().await.unwrap();
        assert_eq!((n.counters().recalls, n.delegations_held()), (2, 0));
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn an_idle_client_renews_its_lease_and_reestablishes_a_lost_one() {
    within(async {
        let fake = Fake::start(|s| s.lease_time = 9).await;
        let c = mount(&fake).await;
        let n = c.nfs41().unwrap().clone();
        let root = c.root().data.clone();

        // Idle for a minute: a SEQUENCE alone every third of the lease.
        let m = fake.mark();
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(60)).await;
        let seen = fake.since(m);
        assert!(seen.iter().all(Seen::renewal), "{:?}", summary(&seen));
        assert!((19..=20).contains(&seen.len()), "{} renewals in 60 s", seen.len());
        let mut last = start;
        for s in &seen {
            let gap = s.at - last;
            assert!(gap <= Duration::from_millis(3050), "{gap:?} between renewals");
            last = s.at;
        }

        // After each way of losing it, the client makes the session (and
        // the client id) again, and the renewal that failed goes through.
        let renewed = |from: usize| {
            move |s: &fake41::State| s.log[from..].iter().any(|x| x.renewal() && x.status() == nfsstat4::NFS4_OK)
        };
        use nfsstat4::*;
        type Steps = Vec<(Op, nfsstat4)>;
        let renewal = Op::OP_SEQUENCE;
        let new_client: Steps = vec![
            (Op::OP_EXCHANGE_ID, NFS4_OK),
            (Op::OP_CREATE_SESSION, NFS4_OK),
            (Op::OP_RECLAIM_COMPLETE, NFS4_OK),
            (renewal, NFS4_OK),
        ];
        let cases: Vec<(&str, Steps)> = vec![
            // The server lost the session: a new one for the same client id.
            ("badsession", vec![(renewal, NFS4ERR_BADSESSION), (Op::OP_CREATE_SESSION, NFS4_OK), (renewal, NFS4_OK)]),
            // The lease expired and the server forgot the client (RFC 8881
            // section 8.4.3): BADSESSION, STALE_CLIENTID for CREATE_SESSION,
            // then a new client id.
            (
                "expired lease",
                [
                    vec![(renewal, NFS4ERR_BADSESSION), (Op::OP_CREATE_SESSION, NFS4ERR_STALE_CLIENTID)],
                    new_client.clone(),
                ]
                .concat(),
            ),
            ("stale clientid", [vec![(renewal, NFS4ERR_STALE_CLIENTID)], new_client.clone()].concat()),
            ("expired", [vec![(renewal, NFS4ERR_EXPIRED)], new_client.clone()].concat()),
        ];
        for (i, (case, steps)) in cases.into_iter().enumerate() {
            let m = fake.mark();
            match case {
                "badsession" => fake.inject(Match::Renewal, Fault::Sequence(NFS4ERR_BADSESSION)),
                "expired lease" => fake.expire_clients(),
                "stale clientid" => fake.inject(Match::Renewal, Fault::Sequence(NFS4ERR_STALE_CLIENTID)),
                _ => fake.inject(Match::Renewal, Fault::Sequence(NFS4ERR_EXPIRED)),
            }
            fake.until(renewed(m)).await;
            assert_eq!(summary(&fake.since(m)), steps, "{case}");
            n.getattr(&root).await.unwrap_or_else(|e| panic!("{case}: the next call fails: {e}"));
            assert_eq!(n.counters().sessions_created, i as u64 + 2, "{case}");
        }

        // Renewals go on at the same pace, on the newest session.
        let m = fake.mark();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let seen = fake.since(m);
        let newest = seen.last().and_then(Seen::sessionid);
        assert!(seen.len() >= 3 && seen.iter().all(|s| s.renewal() && s.sessionid() == newest), "{:?}", summary(&seen));
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn after_a_reboot_the_open_is_reclaimed_in_grace_and_the_write_in_flight_completes() {
    within(async {
        let fake = Fake::start(|s| s.put_file("r", b"0123456789ab")).await;
        let c = mount(&fake).await;
        let n = c.nfs41().unwrap().clone();
        let mut f = c.open("r", OpenOptions::read_write().with_sync(true)).await.unwrap();
        f.write(0, b"before").await.unwrap();
        let old = fake.with(|s| opened(s.log.iter().find(|x| x.has(Op::OP_OPEN)).unwrap()));

        // The next WRITE is in flight when the server goes down.
        fake.hold(Some(Match::Op(Op::OP_WRITE)));
        let m = fake.mark();
        let write = tokio::spawn(async move {
            let r = f.write(6, b" after").await;
            (f, r)
        });
        fake.until(|s| s.held() == 1).await;
        let rebooted = Instant::now();
        fake.reboot(Duration::from_secs(5));
        let (mut f, r) = write.await.unwrap();
        r.expect("the WRITE completes after the reboot");
        let took = rebooted.elapsed();

        // Sent again on a new connection; the session and then the client
        // id are gone; a new client reclaims its open (CLAIM_PREVIOUS) and
        // says it is done; the WRITE waits out the grace period.
        // (The new connection's BIND_CONN_TO_SESSION, which finds the
        // session gone, goes out beside the resent WRITE.)
        let seen = without_binds(fake.since(m));
        let steps = summary(&seen);
        use nfsstat4::*;
        let grace = steps.iter().filter(|s| **s == (Op::OP_WRITE, NFS4ERR_GRACE)).count();
        let expected = [
            vec![
                (Op::OP_WRITE, NFS4_OK), // held, never answered
                (Op::OP_WRITE, NFS4ERR_BADSESSION),
                (Op::OP_CREATE_SESSION, NFS4ERR_STALE_CLIENTID),
                (Op::OP_EXCHANGE_ID, NFS4_OK),
                (Op::OP_CREATE_SESSION, NFS4_OK),
                (Op::OP_OPEN, NFS4_OK),
                (Op::OP_RECLAIM_COMPLETE, NFS4_OK),
            ],
            vec![(Op::OP_WRITE, NFS4ERR_GRACE); grace],
            vec![(Op::OP_WRITE, NFS4_OK)],
        ]
        .concat();
        assert_eq!(steps, expected);
        assert!(matches!(seen[5].open().unwrap().claim, open_claim4::CLAIM_PREVIOUS(_)));
        // Waits of 1 ms doubling to 1 s: about 14 tries over 5 s.
        assert!((10..=16).contains(&grace), "{grace} tries in grace");
        assert!(took >= Duration::from_secs(5) && took < Duration::from_millis(6100), "{took:?}");
        let new = opened(&seen[5]);
        assert_ne!(new.other, old.other);
        // I/O names an open's stateid with seqid 0: "its current seqid"
        // (RFC 8881 section 8.2.2).
        let current = |s: &stateid4| stateid4 { seqid: 0, other: s.other };
        assert_eq!(seen[0].write().unwrap().stateid, current(&old));
        for s in &seen[7..] {
            assert_eq!(
                s.write().unwrap().stateid,
                current(&new),
                "WRITEs after the reclaim carry the new open stateid"
            );
        }

        // Reads and the CLOSE go on under the reclaimed open.
        let m = fake.mark();
        let mut buf = [0u8; 12];
        assert_eq!(f.read(0, &mut buf).await.unwrap(), 12);
        assert_eq!(&buf, b"before after");
        f.close().await.unwrap();
        for s in fake.since(m) {
            for op in &s.ops {
                match op {
                    nfs_argop4::OP_READ(a) => assert_eq!(a.stateid, current(&new)),
                    nfs_argop4::OP_CLOSE(a) => assert_eq!(a.open_stateid.other, new.other),
                    _ => {}
                }
            }
        }
        assert_eq!(fake.file("r").unwrap(), b"before after");
        let counters = n.counters();
        assert_eq!((counters.reclaims, counters.sessions_created), (1, 2), "{counters:?}");
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

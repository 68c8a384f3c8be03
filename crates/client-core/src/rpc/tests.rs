//! The RPC core on virtual time: replies in any order, retransmission with
//! backoff, resend after a reconnect, a connection found dead, timeouts,
//! rejections, counters.

use super::*;
use proto::rpc::{mismatch_info, reply_body};

fn core(max_in_flight: usize) -> RpcCore {
    let s = RpcSettings { timeout_ms: 100, max_timeout_ms: 250, retrans: 2, max_in_flight };
    RpcCore::new(s, auth_sys("t", 0, 0, &[]), 1000)
}

/// The server side: decode a record's xid.
fn xid_of(record: &[Bytes]) -> u32 {
    let flat: Vec<u8> = record.iter().flat_map(|b| b.iter().copied()).collect();
    u32::from_be_bytes(flat[4..8].try_into().unwrap())
}

fn reply(xid: u32, data: reply_data, result: &[u8]) -> Bytes {
    let msg = rpc_msg {
        xid,
        body: rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(accepted_reply {
            verf: opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() },
            reply_data: data,
        })),
    };
    let mut v = xdr::to_bytes(&msg).to_vec();
    v.extend_from_slice(result);
    Bytes::from(v)
}

const NFS: u32 = proto::nfs3::NFS_PROGRAM;

#[test]
fn replies_match_by_xid_in_any_order() {
    let mut c = core(8);
    let a = c.call(NFS, 3, 1, vec![Bytes::from_static(b"aaaa")], 0);
    let b = c.call(NFS, 3, 7, vec![], 0);
    assert_eq!(xid_of(&c.poll_transmit(10).unwrap()), a);
    assert_eq!(xid_of(&c.poll_transmit(10).unwrap()), b);
    assert!(c.poll_transmit(10).is_none());
    let done = c.on_record(reply(b, reply_data::SUCCESS, b"BB"), 50).unwrap();
    assert_eq!((done.xid, done.result.unwrap().as_ref()), (b, &b"BB"[..]));
    let done = c.on_record(reply(a, reply_data::SUCCESS, b"AA"), 70).unwrap();
    assert_eq!(done.xid, a);
    assert!(c.on_record(reply(a, reply_data::SUCCESS, b"AA"), 80).is_none(), "a duplicate reply is dropped");
    let w = c.stats().ops["WRITE"];
    assert_eq!((w.count, w.queue_ns, w.rtt_ns, w.execute_ns), (1, 10, 40, 50));
    assert_eq!(c.stats().ops["GETATTR"].rtt_ns, 60);
    assert_eq!(c.outstanding(), 0);
}

#[test]
fn in_flight_limit_queues_and_counts_queue_time() {
    let mut c = core(1);
    let a = c.call(NFS, 3, 1, vec![], 0);
    let b = c.call(NFS, 3, 1, vec![], 0);
    assert_eq!(xid_of(&c.poll_transmit(0).unwrap()), a);
    assert!(c.poll_transmit(5).is_none(), "second call waits for a slot");
    c.on_record(reply(a, reply_data::SUCCESS, b""), 20).unwrap();
    assert_eq!(xid_of(&c.poll_transmit(20).unwrap()), b);
    assert_eq!(c.stats().ops["GETATTR"].queue_ns, 20);
}

#[test]
fn retransmits_with_backoff_then_times_out() {
    let mut c = core(4);
    let a = c.call(NFS, 3, 0, vec![], 0);
    c.poll_transmit(0).unwrap();
    assert_eq!(c.next_deadline(), Some(100 * MS));
    assert!(c.poll_timers(99 * MS).failed.is_empty());
    assert!(c.poll_timers(100 * MS).failed.is_empty(), "first timeout retransmits");
    assert_eq!(xid_of(&c.poll_transmit(100 * MS).unwrap()), a, "same xid");
    assert_eq!(c.next_deadline(), Some(300 * MS), "timeout doubled");
    assert!(c.poll_timers(300 * MS).failed.is_empty());
    c.poll_transmit(300 * MS).unwrap();
    assert_eq!(c.next_deadline(), Some(550 * MS), "capped at max_timeout");
    let failed = c.poll_timers(550 * MS).failed;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].result, Err(RpcError::TimedOut(3)));
    assert_eq!(c.stats().ops["NULL"].retransmissions, 2);
    assert_eq!(c.outstanding(), 0);
}

#[test]
fn late_reply_after_retransmission_completes_once() {
    let mut c = core(4);
    let a = c.call(NFS, 3, 0, vec![], 0);
    c.poll_transmit(0).unwrap();
    c.poll_timers(100 * MS);
    // The original's reply arrives while the retransmission is still queued.
    assert!(c.on_record(reply(a, reply_data::SUCCESS, b""), 101 * MS).unwrap().result.is_ok());
    assert!(c.poll_transmit(101 * MS).is_none(), "nothing left to resend");
}

#[test]
fn disconnect_resends_everything_in_order() {
    let mut c = core(8);
    let xids: Vec<u32> = (0..3).map(|_| c.call(NFS, 3, 1, vec![], 0)).collect();
    for _ in 0..2 {
        c.poll_transmit(0).unwrap();
    }
    assert!(c.on_disconnect(1).is_empty());
    let resent: Vec<u32> = std::iter::from_fn(|| c.poll_transmit(1).map(|r| xid_of(&r))).collect();
    assert_eq!(resent, xids);
    assert_eq!(c.stats().ops["GETATTR"].retransmissions, 2);
}

/// A server that drops every connection before it answers: the call is
/// sent `retrans + 1` times, as a timeout would allow, then fails, rather
/// than being resent on new connections forever.
#[test]
fn a_call_whose_connections_all_break_fails_after_its_retransmissions() {
    let mut c = core(8);
    let a = c.call(NFS, 3, 1, vec![], 0);
    let mut sends = 0;
    for t in 0..10 {
        if c.poll_transmit(t * MS).is_some() {
            sends += 1;
        }
        let failed = c.on_disconnect(t * MS);
        if let Some(f) = failed.first() {
            assert_eq!(f.xid, a);
            assert!(matches!(&f.result, Err(RpcError::Disconnected(_))), "{:?}", f.result);
            assert_eq!(sends, 3, "retrans 2: three sends");
            return;
        }
    }
    panic!("the call was resent {sends} times and never failed");
}

fn flat(record: &[Bytes]) -> Vec<u8> {
    record.iter().flat_map(|b| b.iter().copied()).collect()
}

#[test]
fn a_call_expiring_on_a_silent_connection_finds_it_dead() {
    let mut c = core(8);
    c.on_connected(0);
    let a = c.call(NFS, 3, 1, vec![Bytes::from_static(b"args")], 0);
    let first = flat(&c.poll_transmit(0).unwrap());
    let e = c.poll_timers(100 * MS);
    assert!(e.failed.is_empty() && e.reconnect, "nothing came back for a whole timeout");
    // The transport closes the connection and makes another.
    assert!(c.on_disconnect(100 * MS).is_empty());
    c.on_connected(105 * MS);
    let again = c.poll_transmit(105 * MS).unwrap();
    assert_eq!(flat(&again), first, "same xid, same bytes");
    assert_eq!(xid_of(&again), a);
    assert_eq!(c.next_deadline(), Some(305 * MS), "timeout doubled");
    // The new connection answers.
    assert!(c.on_record(reply(a, reply_data::SUCCESS, b""), 110 * MS).unwrap().result.is_ok());
    assert_eq!(c.stats().ops["GETATTR"].retransmissions, 1);
}

#[test]
fn records_received_since_the_send_keep_the_connection() {
    let mut c = core(8);
    c.on_connected(0);
    let a = c.call(NFS, 3, 1, vec![], 0);
    let b = c.call(NFS, 3, 1, vec![], 0);
    c.poll_transmit(0).unwrap();
    c.poll_transmit(0).unwrap();
    c.on_record(reply(b, reply_data::SUCCESS, b""), 99 * MS).unwrap();
    let e = c.poll_timers(100 * MS);
    assert!(!e.reconnect, "the server answered another call meanwhile");
    assert_eq!(xid_of(&c.poll_transmit(100 * MS).unwrap()), a, "resent on the same connection");
    // A reply with an xid no call has is the server talking too.
    c.on_record(reply(77, reply_data::SUCCESS, b""), 150 * MS);
    assert!(!c.poll_timers(300 * MS).reconnect);
    // Then silence for the whole (doubled) timeout.
    c.poll_transmit(300 * MS).unwrap();
    let e = c.poll_timers(550 * MS);
    assert!(e.reconnect);
    assert_eq!(e.failed.len(), 1, "out of retransmissions, dead connection or not");
    assert_eq!(e.failed[0].result, Err(RpcError::TimedOut(3)));
}

#[test]
fn a_record_before_the_send_is_no_progress() {
    let mut c = core(8);
    c.on_connected(0);
    let a = c.call(NFS, 3, 1, vec![], 0);
    c.poll_transmit(0).unwrap();
    c.on_record(reply(a, reply_data::SUCCESS, b""), 10 * MS).unwrap();
    c.call(NFS, 3, 1, vec![], 20 * MS);
    c.poll_transmit(20 * MS).unwrap();
    assert!(c.poll_timers(120 * MS).reconnect);
    // A connection that has only just come up is silent from then.
    let mut c = core(8);
    c.call(NFS, 3, 1, vec![], 0);
    c.on_connected(50 * MS);
    c.poll_transmit(50 * MS).unwrap();
    assert!(c.poll_timers(100 * MS).failed.is_empty() && c.next_deadline() == Some(150 * MS));
    assert!(c.poll_timers(150 * MS).reconnect);
}

#[test]
fn a_dead_connection_resends_everything_outstanding_in_order() {
    let mut c = core(8);
    c.on_connected(0);
    let xids: Vec<u32> = (0..4).map(|i| c.call(NFS, 3, 1, vec![], i * 10 * MS)).collect();
    let mut firsts = HashMap::new();
    for i in 0..3 {
        let r = c.poll_transmit(i * 10 * MS).unwrap();
        firsts.insert(xid_of(&r), flat(&r));
    }
    // The first call expires; the second and third are still in flight,
    // the fourth never went out.
    let e = c.poll_timers(100 * MS);
    assert!(e.reconnect && e.failed.is_empty());
    assert!(c.on_disconnect(100 * MS).is_empty());
    c.on_connected(101 * MS);
    let resent: Vec<Vec<Bytes>> = std::iter::from_fn(|| c.poll_transmit(101 * MS)).collect();
    assert_eq!(resent.iter().map(|r| xid_of(r)).collect::<Vec<_>>(), xids);
    for r in &resent[..3] {
        assert_eq!(&flat(r), &firsts[&xid_of(r)], "same bytes");
    }
    assert_eq!(c.outstanding(), 4);
}

#[test]
fn rejections_become_errors_and_fail_all_drains() {
    let mut c = core(8);
    let a = c.call(NFS, 4, 1, vec![], 0);
    c.poll_transmit(0);
    let r = reply(a, reply_data::PROG_MISMATCH(mismatch_info { low: 3, high: 3 }), b"");
    assert_eq!(c.on_record(r, 1).unwrap().result, Err(RpcError::ProgMismatch(3, 3)));
    let b = c.call(NFS, 3, 1, vec![], 0);
    let r = reply(b, reply_data::default(accept_stat::GARBAGE_ARGS), b"");
    c.poll_transmit(0);
    assert_eq!(c.on_record(r, 1).unwrap().result, Err(RpcError::GarbageArgs));
    c.call(NFS, 3, 1, vec![], 0);
    let failed = c.fail_all(RpcError::Disconnected("gone".into()), 2);
    assert_eq!(failed.len(), 1);
    assert_eq!(c.outstanding(), 0);
    assert!(c.on_record(Bytes::from_static(b"\x00\x01"), 3).is_none(), "garbage is ignored");
}

#[test]
fn cancelled_call_frees_its_slot() {
    let mut c = core(1);
    let a = c.call(NFS, 3, 1, vec![], 0);
    c.poll_transmit(0).unwrap();
    c.cancel(a);
    c.call(NFS, 3, 1, vec![], 0);
    assert!(c.poll_transmit(0).is_some());
    assert!(c.on_record(reply(a, reply_data::SUCCESS, b""), 1).is_none());
}

fn server_call(xid: u32, proc_: u32) -> Bytes {
    let msg = rpc_msg {
        xid,
        body: rpc_msg_body::CALL(call_body {
            rpcvers: 2,
            prog: 0x4000_0001,
            vers: 1,
            proc: proc_,
            cred: opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() },
            verf: opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() },
        }),
    };
    let mut v = xdr::to_bytes(&msg).to_vec();
    v.extend_from_slice(b"args");
    Bytes::from(v)
}

#[test]
fn calls_from_the_server_are_kept_only_when_asked_for_and_bounded() {
    let mut c = core(8);
    assert!(c.on_record(server_call(5, 1), 0).is_none());
    assert!(c.poll_incoming().is_none(), "dropped on a connection without a back channel");
    c.accept_incoming();
    for x in 0..100 {
        c.on_record(server_call(x, 1), 0);
    }
    let first = c.poll_incoming().unwrap();
    assert_eq!((first.xid, first.proc_, &first.args[..]), (0, 1, &b"args"[..]));
    assert_eq!(std::iter::from_fn(|| c.poll_incoming()).count(), MAX_INCOMING - 1);
    // The answer is an accepted reply with the results after its header.
    let rec = success_reply(9, vec![Bytes::from_static(b"res!")]);
    let flat: Vec<u8> = rec.iter().flat_map(|b| b.iter().copied()).collect();
    let mut d = xdr::Decoder::new(Bytes::from(flat[4..].to_vec()));
    let msg = rpc_msg::decode(&mut d).unwrap();
    assert_eq!(msg.xid, 9);
    assert_eq!(
        reply_result(
            match msg.body {
                rpc_msg_body::REPLY(b) => b,
                _ => panic!(),
            },
            &mut d
        )
        .unwrap(),
        &b"res!"[..]
    );
}

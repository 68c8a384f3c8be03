//! Callbacks under RPCSEC_GSS as the server makes them (with
//! `rpcsec::GssClient` on its side of the lent context), through the RPC
//! core's reading of the record to the answer the client writes.

use super::*;
use client_core::rpc::RpcCore;
use proto::rpc::{accepted_reply, opaque_auth, rejected_reply, reply_body, reply_data, rpc_msg, rpc_msg_body};
use rpcsec::testing::FakeContext;
use rpcsec::{GssClient, SharedContext};
use tokio::sync::mpsc;
use xdr::{Decode, Decoder};

const CB_PROGRAM: u32 = 0x4000_0000;

fn back(key: u64, service: Service, generation: u64) -> BackContext {
    BackContext {
        ctx: SharedContext::new(Box::new(FakeContext::pair(key).0)),
        handle: Bytes::from_static(b"fore"),
        window: 8,
        service,
        generation,
    }
}

/// The server's side of an offer's context.
fn server(offer: &Offer, key: u64) -> GssClient {
    GssClient::new(offer.handle.clone(), Box::new(FakeContext::pair(key).0), 8)
}

fn incoming(record: Vec<Bytes>) -> IncomingCall {
    let mut core = RpcCore::new(Default::default(), Default::default(), 1);
    core.accept_incoming();
    assert!(core.on_record(Bytes::from(record.concat()), 0).is_none());
    core.poll_incoming().expect("a call")
}

/// Admits the record; what the client answered, if anything.
fn admit(cb: &CbSecurity, record: Vec<Bytes>, results: &'static [u8]) -> (Option<Bytes>, Option<(reply_body, Bytes)>) {
    let call = incoming(record);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let args = cb.admit(&call, Responder::new(call.xid, tx)).map(|(args, answer)| {
        answer.send(vec![Bytes::from_static(results)]);
        args
    });
    let reply = rx.try_recv().ok().map(|r| {
        let flat = Bytes::from(r.concat());
        let mut d = Decoder::new(flat.slice(4..));
        let msg = rpc_msg::decode(&mut d).expect("a reply");
        assert_eq!(msg.xid, call.xid);
        match msg.body {
            rpc_msg_body::REPLY(b) => (b, d.rest()),
            rpc_msg_body::CALL(_) => panic!("a call"),
        }
    });
    (args, reply)
}

fn denied(why: auth_stat) -> reply_body {
    reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(why))
}

#[test]
fn an_offer_names_both_handles_and_the_service() {
    let cb = CbSecurity::default();
    let offer = cb.offer(&back(1, Service::Privacy, 3));
    match &offer.parms {
        callback_sec_parms4::RPCSEC_GSS(h) => {
            assert_eq!(h.gcbp_service, rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY);
            assert_eq!(&h.gcbp_handle_from_server[..], b"fore");
            assert_eq!(h.gcbp_handle_from_client, offer.handle);
        }
        other => panic!("{other:?}"),
    }
    assert!(!cb.lent());
    cb.taken(&offer);
    assert!(cb.lent() && cb.generation() == 3);
    let next = cb.offer(&back(1, Service::Privacy, 4));
    assert_ne!(next.handle, offer.handle);
    cb.refused(&next, true);
    assert!(cb.lent() && cb.generation() == 3, "a refused offer leaves the one before lent");
    cb.refused(&cb.offer(&back(1, Service::Privacy, 5)), false);
    assert!(!cb.lent());
}

#[test]
fn a_callback_under_the_lent_context_is_answered_under_it_once() {
    for service in [Service::None, Service::Integrity, Service::Privacy] {
        let cb = CbSecurity::default();
        let offer = cb.offer(&back(9, service, 1));
        let mut srv = server(&offer, 9);
        let seq = srv.next_seq().unwrap();
        let record = srv.call(40, CB_PROGRAM, 1, 1, service, seq, b"cb-args!", false).unwrap();
        let (args, reply) = admit(&cb, record.clone(), b"results!");
        assert_eq!(args.as_deref(), Some(&b"cb-args!"[..]), "{service:?}");
        let Some((reply_body::MSG_ACCEPTED(accepted_reply { verf, reply_data: reply_data::SUCCESS }), body)) = reply
        else {
            panic!("{service:?}: {reply:?}");
        };
        assert_eq!(srv.reply(service, seq, &verf, body).unwrap().as_ref(), b"results!");
        // The same call again is a replay: no answer at all.
        assert_eq!(admit(&cb, record, b"results!"), (None, None));
    }
}

#[test]
fn callbacks_the_lent_context_does_not_vouch_for_are_refused() {
    let cb = CbSecurity::default();
    let offer = cb.offer(&back(9, Service::Integrity, 1));

    // Under a handle this client never gave.
    let mut stranger = GssClient::new(Bytes::from_static(b"other"), Box::new(FakeContext::pair(9).0), 8);
    let record = stranger.call(41, CB_PROGRAM, 1, 1, Service::Integrity, 1, b"args", false).unwrap();
    let (args, reply) = admit(&cb, record, b"");
    assert_eq!((args, reply.map(|r| r.0)), (None, Some(denied(auth_stat::RPCSEC_GSS_CREDPROBLEM))));

    // Checksummed with another key.
    let mut forger = server(&offer, 10);
    let record = forger.call(42, CB_PROGRAM, 1, 1, Service::Integrity, 1, b"args", false).unwrap();
    let (args, reply) = admit(&cb, record, b"");
    assert_eq!((args, reply.map(|r| r.0)), (None, Some(denied(auth_stat::RPCSEC_GSS_CREDPROBLEM))));

    // Under less protection than was agreed.
    let mut srv = server(&offer, 9);
    let record = srv.call(43, CB_PROGRAM, 1, 1, Service::None, 2, b"args", false).unwrap();
    let (args, reply) = admit(&cb, record, b"");
    assert_eq!((args, reply.map(|r| r.0)), (None, Some(denied(auth_stat::AUTH_BADCRED))));

    // A credential that is not one.
    let mut record = srv.call(44, CB_PROGRAM, 1, 1, Service::Integrity, 3, b"args", false).unwrap().concat();
    record[28..32].copy_from_slice(&4u32.to_be_bytes()); // the credential's length
    let (args, reply) = admit(&cb, vec![Bytes::from(record)], b"");
    assert_eq!((args, reply.map(|r| r.0)), (None, Some(denied(auth_stat::AUTH_BADCRED))));

    // A body that does not open: GARBAGE_ARGS under the verifier of its
    // sequence number.
    let mut record = srv.call(45, CB_PROGRAM, 1, 1, Service::Integrity, 4, b"args", false).unwrap().concat();
    if let Some(last) = record.last_mut() {
        *last ^= 1;
    }
    let (args, reply) = admit(&cb, vec![Bytes::from(record)], b"");
    assert!(args.is_none());
    let Some((reply_body::MSG_ACCEPTED(a), _)) = reply else { panic!("{reply:?}") };
    assert_eq!(a.reply_data, reply_data::default(proto::rpc::accept_stat::GARBAGE_ARGS));
    srv.check_verifier(4, &a.verf).expect("the verifier of the refused call's number");
}

#[test]
fn the_last_two_contexts_lent_are_kept_and_plain_calls_pass() {
    let cb = CbSecurity::default();
    let offers: Vec<Offer> = (1..=3).map(|g| cb.offer(&back(9, Service::None, g))).collect();
    let call = |o: &Offer, xid| server(o, 9).call(xid, CB_PROGRAM, 1, 0, Service::None, 1, b"", false).unwrap();
    let (args, reply) = admit(&cb, call(&offers[0], 50), b"");
    assert_eq!((args, reply.map(|r| r.0)), (None, Some(denied(auth_stat::RPCSEC_GSS_CREDPROBLEM))));
    for (xid, o) in [(51, &offers[1]), (52, &offers[2])] {
        assert!(admit(&cb, call(o, xid), b"").0.is_some());
    }

    let none = opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() };
    let msg = rpc_msg {
        xid: 53,
        body: rpc_msg_body::CALL(proto::rpc::call_body {
            rpcvers: 2,
            prog: CB_PROGRAM,
            vers: 1,
            proc: 0,
            cred: none.clone(),
            verf: none.clone(),
        }),
    };
    let (args, reply) = admit(&cb, vec![xdr::to_bytes(&msg), Bytes::from_static(b"abcd")], b"ok");
    assert_eq!(args.as_deref(), Some(&b"abcd"[..]));
    let Some((reply_body::MSG_ACCEPTED(a), body)) = reply else { panic!() };
    assert_eq!((a.verf, a.reply_data, &body[..]), (none, reply_data::SUCCESS, &b"ok"[..]));
}

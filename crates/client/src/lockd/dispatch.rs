//! What the lock service answers, record in, record out, without I/O:
//! NLM4 GRANTED and GRANTED_MSG wake the caller waiting for that lock
//! (GRANTED_MSG is answered by a GRANTED_RES call: the caller's, or the
//! service's own when nobody waits);
//! NSM's SM_NOTIFY says a server restarted. Anything else is refused
//! the way RFC 5531 says a service refuses a program or procedure it
//! does not serve.

use bytes::Bytes;
use client_core::rpc::{garbage_args_reply, success_reply, unavailable_reply, IncomingCall};
use proto::nlm::*;
use proto::nsm::{stat_chge, SM_NOTIFY, SM_PROG, SM_VERS};
use proto::rpc::{accept_stat, auth_flavor, opaque_auth};
use xdr::{Decode, Decoder};

use super::Waiters;

/// What a call asks of the client, beside its reply.
#[derive(Debug, PartialEq)]
pub(super) enum Event {
    /// A server granted a lock a caller was waiting for.
    Granted,
    /// A server granted by message (GRANTED_MSG) a lock no caller waits
    /// for, to be answered with GRANTED_RES carrying `res`: `granted` when
    /// it was granted a moment ago (the server repeats itself), else
    /// `denied`, so that the server frees it.
    GrantedByMessage {
        res: nlm4_res,
    },
    /// A server (by its NSM name) restarted with NSM state `state`.
    Notified {
        mon_name: Bytes,
        state: i32,
    },
    Nothing,
}

fn none() -> opaque_auth {
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }
}

/// The reply to `record`, record-marked for the stream (None: it holds
/// no call, so nothing is sent), and what it asked.
pub(super) fn answer(waiters: &Waiters, record: Bytes) -> (Option<Vec<Bytes>>, Event) {
    let Some(call) = IncomingCall::parse(record) else { return (None, Event::Nothing) };
    let xid = call.xid;
    let garbage = || (Some(garbage_args_reply(xid, none())), Event::Nothing);
    match (call.prog, call.vers, call.proc_) {
        (NLM_PROG, NLM_VERS4, 0) | (SM_PROG, SM_VERS, 0) => (Some(success_reply(xid, Vec::new())), Event::Nothing),
        (NLM_PROG, NLM_VERS4, NLM_GRANTED) => {
            let Ok(a) = nlm4_testargs::decode(&mut Decoder::new(call.args)) else { return garbage() };
            let stat = if waiters.grant(&a.alock) { nlm4_stats::nlm4_granted } else { nlm4_stats::nlm4_denied };
            let res = nlm4_res { cookie: a.cookie, stat: nlm4_stat { stat } };
            let event = if stat == nlm4_stats::nlm4_granted { Event::Granted } else { Event::Nothing };
            (Some(success_reply(xid, vec![xdr::to_bytes(&res)])), event)
        }
        // The answer to GRANTED_MSG is a GRANTED_RES call of its own. Some
        // servers grant by message even a lock asked for with LOCK (NFS-
        // Ganesha does), and hold the lock half-granted until that answer
        // comes. The caller woken sends it, on its connection to the
        // server, before it goes on: its UNLOCK must not overtake it.
        (NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG) => {
            let Ok(a) = nlm4_testargs::decode(&mut Decoder::new(call.args)) else { return garbage() };
            let event = if waiters.grant_by_message(&a.alock, &a.cookie) {
                Event::Granted
            } else {
                let stat = if waiters.grant(&a.alock) { nlm4_stats::nlm4_granted } else { nlm4_stats::nlm4_denied };
                Event::GrantedByMessage { res: nlm4_res { cookie: a.cookie, stat: nlm4_stat { stat } } }
            };
            (Some(success_reply(xid, Vec::new())), event)
        }
        (SM_PROG, SM_VERS, SM_NOTIFY) => {
            let Ok(a) = stat_chge::decode(&mut Decoder::new(call.args)) else { return garbage() };
            (Some(success_reply(xid, Vec::new())), Event::Notified { mon_name: a.mon_name, state: a.state })
        }
        (NLM_PROG, NLM_VERS4, _) | (SM_PROG, SM_VERS, _) => {
            (Some(unavailable_reply(xid, accept_stat::PROC_UNAVAIL)), Event::Nothing)
        }
        _ => (Some(unavailable_reply(xid, accept_stat::PROG_UNAVAIL)), Event::Nothing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::rpc::{call_body, reply_body, reply_data, rpc_msg, rpc_msg_body};
    use xdr::Encode;

    fn call(prog: u32, vers: u32, proc_: u32, args: &impl Encode) -> Bytes {
        let msg = rpc_msg {
            xid: 9,
            body: rpc_msg_body::CALL(call_body { rpcvers: 2, prog, vers, proc: proc_, cred: none(), verf: none() }),
        };
        let mut e = xdr::Encoder::new();
        msg.encode(&mut e);
        args.encode(&mut e);
        e.into_bytes()
    }

    /// The reply's accept state and results, from the one record the
    /// segments hold.
    fn reply(segs: Vec<Bytes>) -> (reply_data, Bytes) {
        let whole: Vec<u8> = segs.iter().flat_map(|s| s.iter().copied()).collect();
        let mut records = proto::framer::RecordDecoder::new(1 << 20);
        records.push(&whole);
        let record = records.next_record().expect("framed").expect("one whole record");
        assert!(records.is_idle(), "more than one record");
        let mut d = Decoder::new(record);
        let msg = rpc_msg::decode(&mut d).expect("a reply");
        match msg.body {
            rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(a)) => (a.reply_data, d.rest()),
            other => panic!("{other:?}"),
        }
    }

    fn alock() -> nlm4_lock {
        nlm4_lock {
            caller_name: Bytes::from_static(b"client"),
            fh: Bytes::from_static(b"fh"),
            oh: Bytes::from_static(b"oh"),
            svid: 3,
            l_offset: 0,
            l_len: 0,
        }
    }

    /// GRANTED for a lock waited for is granted and wakes; for any other
    /// lock it is denied (the server then frees what it granted).
    #[test]
    fn granted_wakes_its_waiter_only() {
        let w = Waiters::default();
        let _wait = w.expect(&alock());
        let args = nlm4_testargs { cookie: Bytes::from_static(b"c"), exclusive: true, alock: alock() };
        let (r, ev) = answer(&w, call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &args));
        assert_eq!(ev, Event::Granted);
        let (data, res) = reply(r.expect("answered"));
        assert!(matches!(data, reply_data::SUCCESS));
        let res = nlm4_res::decode(&mut Decoder::new(res)).expect("nlm4_res");
        assert_eq!((res.cookie.as_ref(), res.stat.stat), (&b"c"[..], nlm4_stats::nlm4_granted));

        let other = nlm4_testargs { alock: nlm4_lock { svid: 4, ..alock() }, ..args };
        let (r, ev) = answer(&w, call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &other));
        assert_eq!(ev, Event::Nothing);
        let res = nlm4_res::decode(&mut Decoder::new(reply(r.expect("answered")).1)).expect("nlm4_res");
        assert_eq!(res.stat.stat, nlm4_stats::nlm4_denied);
    }

    /// GRANTED_MSG for a lock waited for wakes its caller, which is left
    /// the cookie to answer; for a lock granted a moment ago the service
    /// answers granted, for any other denied.
    #[test]
    fn granted_msg_is_answered_with_granted_res() {
        let w = Waiters::default();
        let wait = w.expect(&alock());
        let args = nlm4_testargs { cookie: Bytes::from_static(b"c"), exclusive: true, alock: alock() };
        let (r, ev) = answer(&w, call(NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG, &args));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::SUCCESS));
        assert_eq!(ev, Event::Granted);
        assert_eq!(wait.granted_by_message(), Some(Bytes::from_static(b"c")));
        w.done(&alock(), true);
        let (_, ev) = answer(&w, call(NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG, &args));
        let granted = nlm4_res { cookie: Bytes::from_static(b"c"), stat: nlm4_stat { stat: nlm4_stats::nlm4_granted } };
        assert_eq!(ev, Event::GrantedByMessage { res: granted });

        let other = nlm4_testargs { alock: nlm4_lock { svid: 4, ..alock() }, ..args };
        let (_, ev) = answer(&w, call(NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG, &other));
        let denied = nlm4_res { cookie: Bytes::from_static(b"c"), stat: nlm4_stat { stat: nlm4_stats::nlm4_denied } };
        assert_eq!(ev, Event::GrantedByMessage { res: denied });
    }

    /// SM_NOTIFY is reported; garbage arguments, unknown procedures and
    /// programs get RFC 5531's refusals; a record holding no call gets
    /// nothing.
    #[test]
    fn notify_and_refusals() {
        let w = Waiters::default();
        let n = stat_chge { mon_name: Bytes::from_static(b"server"), state: 3 };
        let (_, ev) = answer(&w, call(SM_PROG, SM_VERS, SM_NOTIFY, &n));
        assert_eq!(ev, Event::Notified { mon_name: Bytes::from_static(b"server"), state: 3 });

        let (r, _) = answer(&w, call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &1u32));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::default(accept_stat::GARBAGE_ARGS)));
        let (r, _) = answer(&w, call(NLM_PROG, NLM_VERS4, NLM_LOCK, &()));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::default(accept_stat::PROC_UNAVAIL)));
        let (r, _) = answer(&w, call(100003, 3, 0, &()));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::default(accept_stat::PROG_UNAVAIL)));
        assert!(answer(&w, Bytes::from_static(b"\0\0\0\x01junk")).0.is_none());
    }
}

//! What the lock service answers, record in, record out, without I/O:
//! NLM4 GRANTED and GRANTED_MSG wake the caller waiting for that lock
//! (GRANTED_MSG is answered by a GRANTED_RES call: the caller's, or the
//! service's own when nobody waits); NSM's SM_NOTIFY says a server
//! restarted. From the lock services of other processes of this host
//! (loopback only), the relay program's JOIN and FORWARD
//! (`lockd_relay.x`). Anything else is refused the way RFC 5531 says a
//! service refuses a program or procedure it does not serve.

use std::net::IpAddr;

use bytes::Bytes;
use client_core::rpc::{garbage_args_reply, success_reply, unavailable_reply, IncomingCall};
use proto::lockd_relay::*;
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
    /// A GRANTED for a lock nobody here waits for, of an owner of process
    /// `pid` (the first word of the owner handle): that process's to
    /// answer, when it is another that joined.
    NotOurs {
        pid: u32,
    },
    /// Another process's lock service, listening on `port` of loopback,
    /// takes the calls that are its own from now on.
    Joined {
        pid: u32,
        port: u16,
    },
    Nothing,
}

fn none() -> opaque_auth {
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }
}

/// The process an owner handle names (`make_alock` puts the process id
/// first).
fn owner_pid(l: &nlm4_lock) -> Option<u32> {
    let word = l.oh.get(..4)?;
    Some(u32::from_be_bytes(word.try_into().ok()?))
}

/// What a GRANTED for `l` that nobody here waits for is.
fn unclaimed(l: &nlm4_lock) -> Event {
    match owner_pid(l) {
        Some(pid) if pid != std::process::id() => Event::NotOurs { pid },
        _ => Event::Nothing,
    }
}

/// The reply to `record`, a call that came from `from`, record-marked for
/// the stream (None: it holds no call, so nothing is sent), and what it
/// asked.
pub(super) fn answer(waiters: &Waiters, from: IpAddr, record: Bytes) -> (Option<Vec<Bytes>>, Event) {
    answer_at(waiters, record, from, true)
}

/// [`answer`]; `relay`: whether the relay program is served (not to a
/// call handed on by it, nor to a call from another host).
fn answer_at(waiters: &Waiters, record: Bytes, from: IpAddr, relay: bool) -> (Option<Vec<Bytes>>, Event) {
    let Some(call) = IncomingCall::parse(record) else { return (None, Event::Nothing) };
    let xid = call.xid;
    let garbage = || (Some(garbage_args_reply(xid, none())), Event::Nothing);
    let relay = relay && from.is_loopback();
    match (call.prog, call.vers, call.proc_) {
        (NLM_PROG, NLM_VERS4, 0) | (SM_PROG, SM_VERS, 0) => (Some(success_reply(xid, Vec::new())), Event::Nothing),
        (NLM_PROG, NLM_VERS4, NLM_GRANTED) => {
            let Ok(a) = nlm4_testargs::decode(&mut Decoder::new(call.args)) else { return garbage() };
            let granted = waiters.grant(&a.alock, from);
            let stat = if granted { nlm4_stats::nlm4_granted } else { nlm4_stats::nlm4_denied };
            let event = if granted { Event::Granted } else { unclaimed(&a.alock) };
            let res = nlm4_res { cookie: a.cookie, stat: nlm4_stat { stat } };
            (Some(success_reply(xid, vec![xdr::to_bytes(&res)])), event)
        }
        // The answer to GRANTED_MSG is a GRANTED_RES call of its own. Some
        // servers grant by message even a lock asked for with LOCK (NFS-
        // Ganesha does), and hold the lock half-granted until that answer
        // comes. The caller woken sends it, on its connection to the
        // server, before it goes on: its UNLOCK must not overtake it.
        (NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG) => {
            let Ok(a) = nlm4_testargs::decode(&mut Decoder::new(call.args)) else { return garbage() };
            let event = if waiters.grant_by_message(&a.alock, &a.cookie, from) {
                Event::Granted
            } else if let theirs @ Event::NotOurs { .. } = unclaimed(&a.alock) {
                theirs
            } else {
                let stat =
                    if waiters.grant(&a.alock, from) { nlm4_stats::nlm4_granted } else { nlm4_stats::nlm4_denied };
                Event::GrantedByMessage { res: nlm4_res { cookie: a.cookie, stat: nlm4_stat { stat } } }
            };
            (Some(success_reply(xid, Vec::new())), event)
        }
        (SM_PROG, SM_VERS, SM_NOTIFY) => {
            let Ok(a) = stat_chge::decode(&mut Decoder::new(call.args)) else { return garbage() };
            (Some(success_reply(xid, Vec::new())), Event::Notified { mon_name: a.mon_name, state: a.state })
        }
        (LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_NULL) if relay => {
            (Some(success_reply(xid, Vec::new())), Event::Nothing)
        }
        (LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_JOIN) if relay => {
            let Ok(a) = relay_join::decode(&mut Decoder::new(call.args)) else { return garbage() };
            let Ok(port) = u16::try_from(a.port) else { return garbage() };
            (Some(success_reply(xid, vec![xdr::to_bytes(&true)])), Event::Joined { pid: a.pid, port })
        }
        (LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_FORWARD) if relay => {
            let Ok(a) = relay_forward::decode(&mut Decoder::new(call.args)) else { return garbage() };
            let Some(origin) = std::str::from_utf8(&a.from).ok().and_then(|s| s.parse::<IpAddr>().ok()) else {
                return garbage();
            };
            // Handed on once: the call inside is answered as if it came
            // from its origin, and may not be another relay call.
            let (inner, event) = answer_at(waiters, a.call, origin, false);
            let event = if matches!(event, Event::NotOurs { .. }) { Event::Nothing } else { event };
            let reply = Bytes::from(inner.unwrap_or_default().concat());
            (Some(success_reply(xid, vec![xdr::to_bytes(&relay_reply { reply })])), event)
        }
        (NLM_PROG, NLM_VERS4, _) | (SM_PROG, SM_VERS, _) => {
            (Some(unavailable_reply(xid, accept_stat::PROC_UNAVAIL)), Event::Nothing)
        }
        (LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, _) if relay => {
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

    const LO: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

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
        let _wait = w.expect(&alock(), LO);
        let args = nlm4_testargs { cookie: Bytes::from_static(b"c"), exclusive: true, alock: alock() };
        let (r, ev) = answer(&w, LO, call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &args));
        assert_eq!(ev, Event::Granted);
        let (data, res) = reply(r.expect("answered"));
        assert!(matches!(data, reply_data::SUCCESS));
        let res = nlm4_res::decode(&mut Decoder::new(res)).expect("nlm4_res");
        assert_eq!((res.cookie.as_ref(), res.stat.stat), (&b"c"[..], nlm4_stats::nlm4_granted));

        let other = nlm4_testargs { alock: nlm4_lock { svid: 4, ..alock() }, ..args };
        let (r, ev) = answer(&w, LO, call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &other));
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
        let wait = w.expect(&alock(), LO);
        let args = nlm4_testargs { cookie: Bytes::from_static(b"c"), exclusive: true, alock: alock() };
        let (r, ev) = answer(&w, LO, call(NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG, &args));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::SUCCESS));
        assert_eq!(ev, Event::Granted);
        assert_eq!(wait.granted_by_message(), Some(Bytes::from_static(b"c")));
        w.done(&alock(), true);
        let (_, ev) = answer(&w, LO, call(NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG, &args));
        let granted = nlm4_res { cookie: Bytes::from_static(b"c"), stat: nlm4_stat { stat: nlm4_stats::nlm4_granted } };
        assert_eq!(ev, Event::GrantedByMessage { res: granted });

        let other = nlm4_testargs { alock: nlm4_lock { svid: 4, ..alock() }, ..args };
        let (_, ev) = answer(&w, LO, call(NLM_PROG, NLM_VERS4, NLM_GRANTED_MSG, &other));
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
        let (_, ev) = answer(&w, LO, call(SM_PROG, SM_VERS, SM_NOTIFY, &n));
        assert_eq!(ev, Event::Notified { mon_name: Bytes::from_static(b"server"), state: 3 });

        let (r, _) = answer(&w, LO, call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &1u32));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::default(accept_stat::GARBAGE_ARGS)));
        let (r, _) = answer(&w, LO, call(NLM_PROG, NLM_VERS4, NLM_LOCK, &()));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::default(accept_stat::PROC_UNAVAIL)));
        let (r, _) = answer(&w, LO, call(100003, 3, 0, &()));
        assert!(matches!(reply(r.expect("answered")).0, reply_data::default(accept_stat::PROG_UNAVAIL)));
        assert!(answer(&w, LO, Bytes::from_static(b"\0\0\0\x01junk")).0.is_none());
    }

    /// From loopback, a process joins and calls are handed on to it:
    /// the call inside is answered as from its origin, once (a relay call
    /// inside is refused); from another host the relay is not served. A
    /// GRANTED nobody here waits for, of another process's owner, is
    /// reported as that process's.
    #[test]
    fn the_relay_program() {
        let w = Waiters::default();
        let join = relay_join { pid: 42, port: 7000 };
        let (r, ev) = answer(&w, LO, call(LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_JOIN, &join));
        assert_eq!(ev, Event::Joined { pid: 42, port: 7000 });
        assert!(bool::decode(&mut Decoder::new(reply(r.expect("answered")).1)).expect("bool"));
        let far = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
        let (r, ev) = answer(&w, far, call(LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_JOIN, &join));
        assert_eq!(ev, Event::Nothing);
        assert!(matches!(reply(r.expect("answered")).0, reply_data::default(accept_stat::PROG_UNAVAIL)));

        let theirs = nlm4_lock { oh: Bytes::from(42u32.to_be_bytes().to_vec()), ..alock() };
        let args = nlm4_testargs { cookie: Bytes::from_static(b"c"), exclusive: true, alock: theirs.clone() };
        let (_, ev) = answer(&w, far, call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &args));
        assert_eq!(ev, Event::NotOurs { pid: 42 });

        // Handed on to the process that waits for it.
        let _wait = w.expect(&theirs, IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)));
        let fwd = |call| relay_forward { from: Bytes::from_static(b"192.0.2.1"), call };
        let inner = call(NLM_PROG, NLM_VERS4, NLM_GRANTED, &args);
        let (r, ev) = answer(&w, LO, call(LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_FORWARD, &fwd(inner)));
        assert_eq!(ev, Event::Granted);
        let out = relay_reply::decode(&mut Decoder::new(reply(r.expect("answered")).1)).expect("relay_reply");
        let res = nlm4_res::decode(&mut Decoder::new(reply(vec![out.reply]).1)).expect("nlm4_res");
        assert_eq!(res.stat.stat, nlm4_stats::nlm4_granted);

        let notify = call(SM_PROG, SM_VERS, SM_NOTIFY, &stat_chge { mon_name: Bytes::from_static(b"s"), state: 5 });
        let (_, ev) = answer(&w, LO, call(LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_FORWARD, &fwd(notify)));
        assert_eq!(ev, Event::Notified { mon_name: Bytes::from_static(b"s"), state: 5 });

        let nested = call(LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_JOIN, &join);
        let (r, ev) = answer(&w, LO, call(LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, RELAY_FORWARD, &fwd(nested)));
        assert_eq!(ev, Event::Nothing);
        let out = relay_reply::decode(&mut Decoder::new(reply(r.expect("answered")).1)).expect("relay_reply");
        assert!(matches!(reply(vec![out.reply]).0, reply_data::default(accept_stat::PROG_UNAVAIL)));
    }
}

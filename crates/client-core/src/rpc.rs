//! ONC RPC (RFC 5531) calls over a stream connection, sans IO: xid
//! allocation, a bounded number of calls in flight, matching replies by xid
//! in any order, retransmission with exponential backoff, the verdict that
//! a connection stopped making progress, and per-procedure counters. The
//! I/O layer feeds it records and the time, sends what `poll_transmit`
//! hands out and reconnects when told to; it never decides anything itself.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use proto::framer::record_header;
use proto::rpc::{
    accept_stat, accepted_reply, auth_flavor, auth_stat, authsys_parms, call_body, opaque_auth, rejected_reply,
    reply_body, reply_data, rpc_msg, rpc_msg_body,
};
use serde::Deserialize;
use xdr::{Decode, Decoder, Encode, Encoder};

use crate::stats::{procedure_name, Stats};

/// Monotonic time in nanoseconds, supplied by the caller.
pub type Nanos = u64;

const MS: Nanos = 1_000_000;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RpcSettings {
    /// Time to wait for a reply before the first retransmission, in ms
    /// (like the `timeo` mount option). A call whose timer runs out with
    /// no whole record received on its connection since it was sent (a
    /// record begun and never finished counts as none) finds the
    /// connection dead: it is closed, and every call outstanding on it is
    /// sent again, same xid and same bytes, on a new one. Otherwise the
    /// call is sent again on the same connection. Default 5000.
    pub timeout_ms: u64,
    /// Upper bound of the doubling retransmission timeout, in ms. Default 30000.
    pub max_timeout_ms: u64,
    /// Retransmissions before a call fails with a timeout (like `retrans`),
    /// those on a new connection included. Default 2: a server that
    /// accepts connections and never answers fails a call after
    /// 5 + 10 + 20 s.
    pub retrans: u32,
    /// Calls one connection may have outstanding; more wait in a queue and
    /// their wait shows as queue time. Default 64.
    pub max_in_flight: usize,
}

impl Default for RpcSettings {
    fn default() -> Self {
        RpcSettings { timeout_ms: 5000, max_timeout_ms: 30_000, retrans: 2, max_in_flight: 64 }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// RPCSEC_GSS_CREDPROBLEM or RPCSEC_GSS_CTXPROBLEM: the server no
    /// longer knows the security context or it ran out; a new one is
    /// needed and the call may be made again (RFC 2203 section 5.3.3.3).
    #[error("security context refused ({0}); a new one is needed")]
    GssContext(String),
    #[error("RPC version mismatch (server speaks {0}..{1})")]
    RpcMismatch(u32, u32),
    #[error("authentication refused ({0})")]
    AuthError(String),
    #[error("program not available")]
    ProgUnavail,
    #[error("program version not available (server speaks {0}..{1})")]
    ProgMismatch(u32, u32),
    #[error("procedure not available")]
    ProcUnavail,
    #[error("server could not decode the arguments")]
    GarbageArgs,
    #[error("server system error")]
    SystemErr,
    #[error("no reply after {0} transmissions")]
    TimedOut(u32),
    #[error("connection lost: {0}")]
    Disconnected(String),
    #[error("malformed reply: {0}")]
    BadReply(String),
}

/// The credential sent with every call.
pub fn auth_sys(machinename: &str, uid: u32, gid: u32, gids: &[u32]) -> opaque_auth {
    let parms = authsys_parms {
        stamp: 0,
        machinename: Bytes::copy_from_slice(machinename.as_bytes()),
        uid,
        gid,
        gids: gids.to_vec(),
    };
    opaque_auth { flavor: auth_flavor::AUTH_SYS, body: xdr::to_bytes(&parms) }
}

/// A finished call: the xid and either the procedure's result bytes (after
/// the accepted-reply header) or why there are none. Under an RPCSEC_GSS
/// context whose results are opened by the caller, `sealed` holds them
/// and `result` is empty: take both with [`Completion::into_results`].
#[derive(Debug)]
pub struct Completion {
    pub xid: u32,
    pub result: Result<Bytes, RpcError>,
    pub sealed: Option<gss::Unopened>,
}

impl Completion {
    pub fn into_results(self) -> gss::Results {
        match self.sealed {
            Some(u) => gss::Results::Sealed(u),
            None => gss::Results::Ready(self.result),
        }
    }
}

/// What expired retransmit timers call for.
#[derive(Debug, Default)]
pub struct Expired {
    /// Calls out of retransmissions.
    pub failed: Vec<Completion>,
    /// The connection delivered no whole record for as long as an expired
    /// call waited on it: close it, connect again, and call
    /// [`RpcCore::on_disconnect`] so that every outstanding call goes out
    /// on the new connection. A server that began a record and never
    /// finished it would otherwise hold every later reply inside it.
    pub reconnect: bool,
}

struct Pending {
    name: &'static str,
    /// The record to send; under RPCSEC_GSS, made anew for each
    /// transmission (see `gss`).
    record: Vec<Bytes>,
    /// The call under RPCSEC_GSS, if it is one.
    gss: Option<gss::Sealed>,
    /// A context-creation call: its result is its reply's verifier
    /// followed by the results (see [`RpcCore::call_gss_init`]).
    init: bool,
    created: Nanos,
    first_sent: Option<Nanos>,
    last_sent: Nanos,
    timeout: Nanos,
    /// When the current transmission times out; None while queued.
    deadline: Option<Nanos>,
    transmissions: u32,
}

/// Calls from the server waiting to be answered; more are dropped (the
/// server retransmits), so a server cannot make the client hold
/// unbounded memory.
const MAX_INCOMING: usize = 64;

pub struct RpcCore {
    settings: RpcSettings,
    /// None: calls from the server are dropped (NFSv3 has none).
    incoming: Option<VecDeque<IncomingCall>>,
    cred: opaque_auth,
    next_xid: u32,
    pending: HashMap<u32, Pending>,
    queue: VecDeque<u32>,
    in_flight: usize,
    /// When the connection last delivered a whole record, or came up.
    last_progress: Nanos,
    stats: Stats,
    /// The RPCSEC_GSS context calls are made under ([`RpcCore::set_gss`]),
    /// and the one before it.
    gss: Option<gss::Contexts>,
}

impl RpcCore {
    /// `first_xid` should differ between connections and client restarts
    /// (servers' duplicate-request caches key on it).
    pub fn new(settings: RpcSettings, cred: opaque_auth, first_xid: u32) -> RpcCore {
        RpcCore {
            settings,
            incoming: None,
            cred,
            next_xid: first_xid,
            pending: HashMap::new(),
            queue: VecDeque::new(),
            in_flight: 0,
            last_progress: 0,
            stats: Stats::default(),
            gss: None,
        }
    }

    /// A connection came up: its silence is timed from now.
    pub fn on_connected(&mut self, now: Nanos) {
        self.last_progress = now;
    }

    /// Keeps the calls the server makes on this connection for
    /// [`RpcCore::poll_incoming`] instead of dropping them.
    pub fn accept_incoming(&mut self) {
        self.incoming.get_or_insert_with(VecDeque::new);
    }

    /// The next call from the server, in arrival order.
    pub fn poll_incoming(&mut self) -> Option<IncomingCall> {
        self.incoming.as_mut()?.pop_front()
    }

    /// Queues a call whose arguments are already XDR-encoded; returns its xid.
    pub fn call(&mut self, prog: u32, vers: u32, proc_: u32, args: Vec<Bytes>, now: Nanos) -> u32 {
        let name = procedure_name(prog, vers, proc_);
        self.call_named(name, prog, vers, proc_, args, now)
    }

    /// [`RpcCore::call`], counted under `name` rather than the
    /// procedure's: an NFSv4 COMPOUND under the operation it is for.
    pub fn call_named(
        &mut self,
        name: &'static str,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: Vec<Bytes>,
        now: Nanos,
    ) -> u32 {
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        if self.gss.is_some() {
            let sealed = gss::Sealed::new(prog, vers, proc_, args);
            self.push(xid, name, Vec::new(), Some(sealed), false, now);
            return xid;
        }
        let msg = rpc_msg {
            xid,
            body: rpc_msg_body::CALL(call_body {
                rpcvers: 2,
                prog,
                vers,
                proc: proc_,
                cred: self.cred.clone(),
                verf: opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() },
            }),
        };
        let mut e = Encoder::new();
        msg.encode(&mut e);
        let mut body = e.into_segments();
        body.extend(args);
        self.push(xid, name, framed(body), None, false, now);
        xid
    }

    fn push(
        &mut self,
        xid: u32,
        name: &'static str,
        record: Vec<Bytes>,
        gss: Option<gss::Sealed>,
        init: bool,
        now: Nanos,
    ) {
        self.stats.op(name).count += 1;
        let timeout = self.settings.timeout_ms.max(1) * MS;
        let p = Pending {
            name,
            record,
            gss,
            init,
            created: now,
            first_sent: None,
            last_sent: 0,
            timeout,
            deadline: None,
            transmissions: 0,
        };
        self.pending.insert(xid, p);
        self.queue.push_back(xid);
    }

    /// The next record to write, if a call is queued and a slot is free
    /// (under RPCSEC_GSS, also room in the server's sequence window).
    pub fn poll_transmit(&mut self, now: Nanos) -> Option<Vec<Bytes>> {
        while self.in_flight < self.settings.max_in_flight.max(1) {
            if !self.gss_may_send(*self.queue.front()?) {
                return None;
            }
            let xid = self.queue.pop_front()?;
            let Some(p) = self.pending.get_mut(&xid) else { continue }; // cancelled while queued
            let c = self.stats.op(p.name);
            if p.first_sent.is_none() {
                p.first_sent = Some(now);
                c.queue_ns += now - p.created;
            } else {
                c.retransmissions += 1;
            }
            c.bytes_sent += p.record.iter().map(|b| b.len() as u64).sum::<u64>();
            if let (Some(sealed), Some(ctx)) = (p.gss.as_mut(), self.gss.as_mut()) {
                p.record = framed(sealed.seal(ctx, xid));
            }
            p.transmissions += 1;
            p.last_sent = now;
            p.deadline = Some(now + p.timeout);
            self.in_flight += 1;
            return Some(p.record.clone());
        }
        None
    }

    /// A complete record from the connection. Replies to unknown xids (late
    /// duplicates, cancelled calls) are dropped.
    pub fn on_record(&mut self, record: Bytes, now: Nanos) -> Option<Completion> {
        // Whatever it holds, the server is still talking on the connection.
        self.last_progress = self.last_progress.max(now);
        let size = record.len() as u64 + 4;
        // A call's header is kept for its verifier's check; a reply's
        // record is not cloned (a clone of a buffer that owns its bytes
        // allocates).
        let whole = (self.incoming.is_some() && record.get(4..8) == Some(&[0, 0, 0, 0][..])).then(|| record.clone());
        let mut d = Decoder::new(record);
        let msg = rpc_msg::decode(&mut d).ok()?;
        let body = match msg.body {
            rpc_msg_body::REPLY(body) => body,
            rpc_msg_body::CALL(call) => {
                if let Some(q) = self.incoming.as_mut().filter(|q| q.len() < MAX_INCOMING) {
                    if let Some(whole) = whole {
                        q.extend(IncomingCall::new(&whole, msg.xid, call, d.rest()));
                    }
                }
                return None;
            }
        };
        let p = self.pending.remove(&msg.xid)?;
        if p.deadline.is_some() {
            self.in_flight -= 1;
        } else {
            self.queue.retain(|x| *x != msg.xid); // a reply to an earlier send while requeued
        }
        let mut unopened = None;
        let result = match (&p.gss, p.init, body) {
            (
                _,
                _,
                reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(
                    s @ (auth_stat::RPCSEC_GSS_CREDPROBLEM | auth_stat::RPCSEC_GSS_CTXPROBLEM),
                )),
            ) => Err(RpcError::GssContext(format!("{s:?}"))),
            (Some(sealed), _, reply_body::MSG_ACCEPTED(a)) => match self.gss.as_mut() {
                Some(ctx) => match sealed.open(ctx, a, d.rest()) {
                    Ok(gss::Results::Sealed(u)) => {
                        unopened = Some(u);
                        Ok(Bytes::new())
                    }
                    Ok(gss::Results::Ready(r)) => r,
                    Err(e) => Err(e),
                },
                None => Err(RpcError::BadReply("a reply under a security context that is gone".into())),
            },
            (None, true, reply_body::MSG_ACCEPTED(a)) => gss::init_result(a, d.rest()),
            (_, _, body) => reply_result(body, &mut d),
        };
        let c = self.stats.op(p.name);
        c.bytes_received += size;
        c.rtt_ns += now.saturating_sub(p.last_sent);
        c.execute_ns += now.saturating_sub(p.created);
        if result.is_err() {
            c.errors += 1;
        }
        Some(Completion { xid: msg.xid, result, sealed: unopened })
    }

    /// Handles expired timers: calls with retransmissions left go back to
    /// the front of the queue with a doubled timeout, the others fail. A
    /// call that expired with nothing whole received since it was sent
    /// finds the connection dead ([`Expired::reconnect`]).
    pub fn poll_timers(&mut self, now: Nanos) -> Expired {
        let expired: Vec<u32> =
            self.pending.iter().filter(|(_, p)| p.deadline.is_some_and(|d| d <= now)).map(|(x, _)| *x).collect();
        let mut out = Expired::default();
        for xid in expired {
            let Some(p) = self.pending.get_mut(&xid) else { continue };
            self.in_flight -= 1;
            p.deadline = None;
            // Silence for the whole of the call's timeout, which is at
            // least `timeout_ms`.
            out.reconnect |= self.last_progress <= p.last_sent;
            if p.transmissions > self.settings.retrans {
                let n = p.transmissions;
                out.failed.push(self.finish_failed(xid, RpcError::TimedOut(n), now));
            } else {
                p.timeout = (p.timeout * 2).min(self.settings.max_timeout_ms.max(1) * MS);
                self.queue.push_front(xid);
            }
        }
        out
    }

    /// The earliest time `poll_timers` has work.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.pending.values().filter_map(|p| p.deadline).min()
    }

    /// The connection broke or was found dead: everything sent (in
    /// flight, or waiting to be sent again) is resent, in xid order, on
    /// the next connection before any call not sent yet. Same xids and
    /// same bytes, so a server's duplicate-request cache recognises them
    /// and an NFSv4.1 request keeps its slot and sequence id, as a retry
    /// must (RFC 8881 section 2.10.6).
    pub fn on_disconnect(&mut self, now: Nanos) -> Vec<Completion> {
        let mut sent: Vec<u32> = self.pending.iter().filter(|(_, p)| p.first_sent.is_some()).map(|(x, _)| *x).collect();
        let next = self.next_xid;
        sent.sort_by_key(|x| x.wrapping_sub(next)); // oldest first, across wraparound
        let pending = &self.pending;
        self.queue.retain(|x| pending.get(x).is_some_and(|p| p.first_sent.is_none()));
        let mut failed = Vec::new();
        for xid in sent.into_iter().rev() {
            let Some(p) = self.pending.get_mut(&xid) else { continue };
            if p.transmissions > self.settings.retrans {
                // Sent as often as a timeout would allow, and every
                // connection broke before a reply: a server that drops
                // each connection must not keep the call forever.
                let why = format!("sent {} times; each connection broke before a reply", p.transmissions);
                failed.push(self.finish_failed(xid, RpcError::Disconnected(why), now));
                continue;
            }
            p.deadline = None;
            self.queue.push_front(xid);
        }
        self.in_flight = 0;
        failed
    }

    /// Fails every outstanding call (the connection cannot be re-established).
    pub fn fail_all(&mut self, err: RpcError, now: Nanos) -> Vec<Completion> {
        let xids: Vec<u32> = self.pending.keys().copied().collect();
        self.queue.clear();
        self.in_flight = 0;
        xids.into_iter().map(|x| self.finish_failed(x, err.clone(), now)).collect()
    }

    /// The caller gave up on a call; a late reply is ignored.
    pub fn cancel(&mut self, xid: u32) {
        if let Some(p) = self.pending.remove(&xid) {
            if p.deadline.is_some() {
                self.in_flight -= 1;
            }
        }
    }

    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    fn finish_failed(&mut self, xid: u32, err: RpcError, now: Nanos) -> Completion {
        if let Some(p) = self.pending.remove(&xid) {
            let c = self.stats.op(p.name);
            c.errors += 1;
            c.execute_ns += now.saturating_sub(p.created);
        }
        Completion { xid, result: Err(err), sealed: None }
    }
}

/// `body` with its record mark in front.
fn framed(body: Vec<Bytes>) -> Vec<Bytes> {
    let len: usize = body.iter().map(Bytes::len).sum();
    let mut record = Vec::with_capacity(body.len() + 1);
    record.push(Bytes::copy_from_slice(&record_header(len, true)));
    record.extend(body);
    record
}

fn reply_result(body: reply_body, d: &mut Decoder) -> Result<Bytes, RpcError> {
    match body {
        reply_body::MSG_ACCEPTED(accepted_reply { reply_data, .. }) => match reply_data {
            reply_data::SUCCESS => Ok(d.rest()),
            reply_data::PROG_MISMATCH(m) => Err(RpcError::ProgMismatch(m.low, m.high)),
            reply_data::default(accept_stat::PROG_UNAVAIL) => Err(RpcError::ProgUnavail),
            reply_data::default(accept_stat::PROC_UNAVAIL) => Err(RpcError::ProcUnavail),
            reply_data::default(accept_stat::GARBAGE_ARGS) => Err(RpcError::GarbageArgs),
            reply_data::default(_) => Err(RpcError::SystemErr),
        },
        reply_body::MSG_DENIED(rejected_reply::RPC_MISMATCH(m)) => Err(RpcError::RpcMismatch(m.low, m.high)),
        reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(s)) => Err(RpcError::AuthError(format!("{s:?}"))),
    }
}

mod gss;
mod incoming;
pub use gss::{split_init_result, Results, Unopened};
pub use incoming::{
    auth_error_reply, garbage_args_reply, success_reply, success_reply_with, unavailable_reply, IncomingCall,
};
#[cfg(test)]
mod tests;

//! Calls under an RPCSEC_GSS context (RFC 2203).
//!
//! A call's record is sealed anew for each transmission: every
//! transmission needs a sequence number of its own (section 5.3.3.1: a
//! server drops one it has seen), and the reply is checked against each
//! number the call went out with, as a server may answer any of them.
//! Every failure to seal (numbers used up, the mechanism refusing) still
//! sends the call, with a verifier the server refuses: its
//! RPCSEC_GSS_CREDPROBLEM or CTXPROBLEM then tells the caller to set up
//! a new context, the one way back for all of them.
//!
//! A new context may replace the one calls go under while some are still
//! out (a renewal before the old one's ticket ends): each transmission
//! remembers which context sealed it, and its reply is checked and opened
//! under that one. The context before the current is kept for them.

use bytes::Bytes;
use proto::rpc::{accepted_reply, opaque_auth, reply_data};
use proto::rpcsec_gss::MAXSEQ;
use rpcsec::{open_body, GssClient, Service, SharedContext};
use xdr::{Decoder, Encode, Encoder};

use super::{reply_result, RpcCore, RpcError};
use crate::rpc::Nanos;

/// Transmissions of one call whose sequence numbers are remembered to
/// check its reply; a call sent more often than this (its retransmission
/// count is far lower) is checked against its latest.
const SEQS_KEPT: usize = 8;

/// The context calls are made under, and the one before it, whose calls
/// may still be out.
pub(super) struct Contexts {
    now: Context,
    before: Option<Context>,
}

impl Contexts {
    /// The context that sealed a transmission, while it is kept.
    fn by_id(&mut self, id: u64) -> Option<&mut Context> {
        if self.now.id == id {
            return Some(&mut self.now);
        }
        self.before.as_mut().filter(|c| c.id == id)
    }
}

/// A context calls are made under, and their service.
pub(super) struct Context {
    /// Tells this context from the one before it, for a transmission to
    /// name the context that sealed it (two contexts' handles may be
    /// equal: the server picks them).
    id: u64,
    client: GssClient,
    service: Service,
    /// The same context, for opening results away from the connection:
    /// a 1 MiB krb5p reply takes milliseconds to decrypt, during which the
    /// connection's reader would read nothing and no call could start.
    opener: Option<SharedContext>,
}

impl Context {
    /// Whether a call sealed now stays inside the server's sequence window
    /// (RFC 2203 section 5.3.3.1) with every call still out, `oldest`
    /// being the lowest number among them. A server silently drops a call
    /// whose number has fallen below its window when it checks it, and it
    /// checks on several threads, in any order, so a later call may move
    /// the window past an earlier one still waiting there: keeping the
    /// numbers out within the window, not merely as many calls as it, is
    /// what leaves none to fall below it. Otherwise each dropped call waits
    /// out a retransmission timeout (NFS-Ganesha 4.3, window 32, dropped
    /// a call in about one burst of 200 calls in four, and still in one in
    /// ten with no more than 31 calls out). One short of the
    /// window: libntirpc, Ganesha's RPC library, keeps the numbers it has
    /// seen in a 32-bit mask shifted by how far the window moves, which a
    /// move of exactly 32 leaves as it was.
    pub(super) fn may_seal(&self, oldest: Option<u32>) -> bool {
        let Some(oldest) = oldest else { return true };
        self.client.upcoming_seq().saturating_sub(oldest) < self.client.window().max(2) - 1
    }
}

/// A call under the context: what it asks, unsealed.
pub(super) struct Sealed {
    prog: u32,
    vers: u32,
    proc_: u32,
    args: Vec<Bytes>,
    /// The sequence numbers of its transmissions, oldest first, each with
    /// the context ([`Context::id`]) it belongs to.
    seqs: Vec<(u64, u32)>,
}

impl Sealed {
    pub(super) fn new(prog: u32, vers: u32, proc_: u32, args: Vec<Bytes>) -> Sealed {
        Sealed { prog, vers, proc_, args, seqs: Vec::new() }
    }

    /// The call's record body for one more transmission (without the
    /// record mark).
    pub(super) fn seal(&mut self, ctxs: &mut Contexts, xid: u32) -> Vec<Bytes> {
        let ctx = &mut ctxs.now;
        // Past the last number the server refuses the call with
        // CTXPROBLEM, which is what sets up a new context.
        let seq = ctx.client.next_seq().unwrap_or(MAXSEQ);
        if self.seqs.len() == SEQS_KEPT {
            self.seqs.remove(0);
        }
        self.seqs.push((ctx.id, seq));
        let sealed =
            ctx.client.call_segments(xid, self.prog, self.vers, self.proc_, ctx.service, seq, &self.args, false);
        sealed.unwrap_or_else(|e| {
            tracing::debug!(xid, "could not seal a call under the security context ({e}); sent unsealed");
            // A verifier that verifies nothing: the server answers
            // CREDPROBLEM.
            unverified(xid, self.prog, self.vers, self.proc_, ctx.client.handle(), seq, &self.args.concat())
        })
    }

    /// The sequence number of its latest transmission, if the context
    /// `id` sealed it: numbers of another context are not in its window.
    fn latest_seq_under(&self, id: u64) -> Option<u32> {
        self.seqs.last().filter(|(c, _)| *c == id).map(|&(_, seq)| seq)
    }

    /// The results of an accepted reply to the call, its verifier checked
    /// against the transmissions' numbers, each under the context that
    /// sealed it, and its body opened under the one that verified.
    ///
    /// With a shared context the results of a SUCCESS are left sealed,
    /// for the caller to open ([`Results::Sealed`]).
    pub(super) fn open(&self, ctxs: &mut Contexts, a: accepted_reply, rest: Bytes) -> Result<Results, RpcError> {
        let verifies = |ctxs: &mut Contexts, (id, seq): (u64, u32)| {
            ctxs.by_id(id).is_some_and(|c| c.client.check_verifier(seq, &a.verf).is_ok())
        };
        let found = self.seqs.iter().rev().copied().find(|&s| verifies(ctxs, s));
        let Some((ctx, seq)) = found.and_then(|(id, seq)| Some((ctxs.by_id(id)?, seq))) else {
            let gone = !self.seqs.is_empty() && self.seqs.iter().all(|&(id, _)| ctxs.by_id(id).is_none());
            let why = if gone {
                "a reply under an RPCSEC_GSS context replaced twice since the call went out"
            } else {
                "the reply's RPCSEC_GSS verifier does not verify"
            };
            return Err(RpcError::BadReply(why.into()));
        };
        match (a.reply_data, &ctx.opener) {
            (reply_data::SUCCESS, Some(shared)) => {
                Ok(Results::Sealed(Unopened { ctx: shared.clone(), service: ctx.service, seq, body: rest }))
            }
            (reply_data::SUCCESS, None) => ctx
                .client
                .reply(ctx.service, seq, &a.verf, rest)
                .map(|b| Results::Ready(Ok(b)))
                .map_err(|e| RpcError::BadReply(format!("RPCSEC_GSS results: {e}"))),
            (other, _) => {
                let mut d = Decoder::new(rest);
                reply_result(proto::rpc::reply_body::MSG_ACCEPTED(accepted_reply { reply_data: other, ..a }), &mut d)
                    .map(|b| Results::Ready(Ok(b)))
            }
        }
    }
}

/// Results still sealed under the call's context; the reply's verifier
/// was checked already.
pub struct Unopened {
    ctx: SharedContext,
    service: Service,
    seq: u32,
    body: Bytes,
}

impl std::fmt::Debug for Unopened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unopened").field("service", &self.service).field("seq", &self.seq).finish()
    }
}

/// A finished call's results, or what opens them.
#[derive(Debug)]
pub enum Results {
    Ready(Result<Bytes, RpcError>),
    Sealed(Unopened),
}

impl Results {
    /// The procedure's results: opened first when they came sealed.
    pub fn open(self) -> Result<Bytes, RpcError> {
        match self {
            Results::Ready(r) => r,
            Results::Sealed(mut u) => open_body(&mut u.ctx, u.service, u.seq, u.body)
                .map_err(|e| RpcError::BadReply(format!("RPCSEC_GSS results: {e}"))),
        }
    }
}

/// A data call whose verifier is empty.
fn unverified(xid: u32, prog: u32, vers: u32, proc_: u32, handle: &Bytes, seq: u32, args: &[u8]) -> Vec<Bytes> {
    let mut bogus = GssClient::new(handle.clone(), Box::new(NoMic), 1);
    bogus.call(xid, prog, vers, proc_, Service::None, seq, args, false).unwrap_or_default()
}

/// A mechanism that checksums with nothing.
struct NoMic;

impl rpcsec::SecContext for NoMic {
    fn get_mic(&mut self, _: &[u8]) -> Result<Vec<u8>, rpcsec::GssError> {
        Ok(Vec::new())
    }
    fn verify_mic(&mut self, _: &[u8], _: &[u8]) -> Result<(), rpcsec::GssError> {
        Err(rpcsec::GssError::new(rpcsec::major::GSS_S_BAD_SIG, 0, "no context"))
    }
    fn wrap(&mut self, m: &[u8]) -> Result<Bytes, rpcsec::GssError> {
        Ok(Bytes::copy_from_slice(m))
    }
    fn unwrap(&mut self, _: &[u8]) -> Result<Bytes, rpcsec::GssError> {
        Err(rpcsec::GssError::new(rpcsec::major::GSS_S_BAD_SIG, 0, "no context"))
    }
}

/// The result of a context-creation call: its reply's verifier, then
/// the `rpc_gss_init_res`, for the caller to check with the context it
/// completes.
pub(super) fn init_result(a: accepted_reply, rest: Bytes) -> Result<Bytes, RpcError> {
    let verf = a.verf.clone();
    let mut d = Decoder::new(rest);
    let results = reply_result(proto::rpc::reply_body::MSG_ACCEPTED(a), &mut d)?;
    let mut e = Encoder::with_capacity(64 + results.len());
    verf.encode(&mut e);
    e.append_segments(vec![results]);
    Ok(e.into_bytes())
}

/// Splits [`init_result`]'s bytes.
pub fn split_init_result(b: Bytes) -> Result<(opaque_auth, proto::rpcsec_gss::rpc_gss_init_res), RpcError> {
    let mut d = Decoder::new(b);
    let bad = |what: &str| RpcError::BadReply(format!("context creation reply: {what}"));
    let verf = <opaque_auth as xdr::Decode>::decode(&mut d).map_err(|_| bad("verifier"))?;
    let res = xdr::Decode::decode(&mut d).map_err(|_| bad("results do not decode"))?;
    Ok((verf, res))
}

impl RpcCore {
    /// Makes calls from now on (and retransmissions of those made
    /// before) under the RPCSEC_GSS context `client` with `service`.
    ///
    /// Calls still out under the context this replaces get their replies
    /// checked under it; only the one before the new context is kept.
    pub fn set_gss(&mut self, client: GssClient, service: Service) {
        self.install(client, service, None);
    }

    /// [`RpcCore::set_gss`] with `shared` the context `client` seals
    /// with: the results of replies are then opened by whoever takes the
    /// [`Completion`], not on the connection ([`Results::Sealed`]).
    pub fn set_gss_shared(&mut self, client: GssClient, service: Service, shared: SharedContext) {
        self.install(client, service, Some(shared));
    }

    fn install(&mut self, client: GssClient, service: Service, opener: Option<SharedContext>) {
        let before = self.gss.take().map(|c| c.now);
        let id = before.as_ref().map_or(0, |c| c.id.wrapping_add(1));
        self.gss = Some(Contexts { now: Context { id, client, service, opener }, before });
    }

    /// Whether the queued call `xid` may be sealed and sent now: calls
    /// under the context wait while one sent long before is still out
    /// ([`Context::may_seal`]).
    pub(super) fn gss_may_send(&self, xid: u32) -> bool {
        let Some(ctx) = self.gss.as_ref().map(|c| &c.now) else { return true };
        if self.pending.get(&xid).is_none_or(|p| p.gss.is_none()) {
            return true;
        }
        let out = self.pending.values().filter(|p| p.deadline.is_some());
        ctx.may_seal(out.filter_map(|p| p.gss.as_ref()?.latest_seq_under(ctx.id)).min())
    }

    /// Whether calls go under an RPCSEC_GSS context.
    pub fn has_gss(&self) -> bool {
        self.gss.is_some()
    }

    /// Queues a context-creation call (RFC 2203 section 5.2.2): `handle`
    /// empty for the first, the server's for a continuation. Its result is
    /// read with [`split_init_result`].
    pub fn call_gss_init(&mut self, prog: u32, vers: u32, handle: &Bytes, token: &[u8], now: Nanos) -> u32 {
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        let record = super::framed(rpcsec::call::init_call(xid, prog, vers, handle, token));
        self.push(xid, "RPCSEC_GSS_INIT", record, None, true, now);
        xid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::{auth_sys, RpcSettings};

    use rpcsec::testing::FakeContext;

    const NFS: u32 = proto::nfs3::NFS_PROGRAM;

    /// A reply under krb5p to transmission `seq`, its verifier made by
    /// `server` (or garbage).
    fn sealed_reply(xid: u32, seq: u32, server: &mut FakeContext, verf_ok: bool, results: &[u8]) -> Bytes {
        let mut e = Encoder::new();
        for w in [xid, 1, 0] {
            e.u32(w);
        }
        let mic = if verf_ok { rpcsec::SecContext::get_mic(server, &seq.to_be_bytes()).unwrap() } else { vec![0; 8] };
        opaque_auth { flavor: proto::rpc::auth_flavor::RPCSEC_GSS, body: Bytes::from(mic) }.encode(&mut e);
        e.u32(0);
        e.append_segments(rpcsec::seal_body(server, Service::Privacy, seq, results).unwrap());
        e.into_bytes()
    }

    /// The xid, context handle and sequence number a sealed record went with.
    fn sent_under(record: &[Bytes]) -> (u32, Bytes, u32) {
        let flat = Bytes::from(record.concat()).slice(4..);
        let msg = <proto::rpc::rpc_msg as xdr::Decode>::decode(&mut Decoder::new(flat)).unwrap();
        let proto::rpc::rpc_msg_body::CALL(call) = msg.body else { panic!("not a call") };
        let cred = rpcsec::callee::credential(call.cred.body).unwrap();
        (msg.xid, cred.handle, cred.seq_num)
    }

    fn core(window: u32) -> RpcCore {
        let mut c = RpcCore::new(RpcSettings { max_in_flight: 64, ..Default::default() }, auth_sys("t", 0, 0, &[]), 1);
        c.set_gss(GssClient::new(Bytes::from_static(b"ctx"), Box::new(NoMic), window), Service::None);
        c
    }

    /// No call goes out whose number is a window or more past that of a
    /// call still out, however few calls are out.
    #[test]
    fn calls_out_stay_within_the_sequence_window() {
        let mut c = core(4);
        let xids: Vec<u32> = (0..6).map(|_| c.call(NFS, 3, 1, Vec::new(), 0)).collect();
        for _ in 0..3 {
            assert!(c.poll_transmit(0).is_some()); // numbers 1, 2, 3
        }
        assert!(c.poll_transmit(0).is_none(), "number 4 would be a window past number 1");
        c.cancel(xids[1]);
        c.cancel(xids[2]);
        assert!(c.poll_transmit(1).is_none(), "number 1 is still out");
        c.cancel(xids[0]);
        assert!(c.poll_transmit(2).is_some() && c.poll_transmit(2).is_some() && c.poll_transmit(2).is_some());
        assert_eq!(c.outstanding(), 3);

        // A call resent after a timeout is sealed anew, with the next
        // number: its first number no longer holds the others back.
        let mut c = core(4);
        let first = c.call(NFS, 3, 1, Vec::new(), 0);
        assert!(c.poll_transmit(0).is_some());
        c.call(NFS, 3, 1, Vec::new(), 10);
        assert!(c.poll_transmit(10).is_some());
        let timeout = c.settings.timeout_ms * crate::rpc::MS;
        assert!(c.poll_timers(timeout).failed.is_empty());
        let resent = c.poll_transmit(timeout).unwrap();
        assert_eq!(u32::from_be_bytes(resent.concat()[4..8].try_into().unwrap()), first);
        assert_eq!(c.pending[&first].gss.as_ref().and_then(|s| s.latest_seq_under(0)), Some(3));
    }

    /// With a shared context the connection checks the verifier and
    /// leaves the results sealed for the caller, who opens them; a
    /// verifier that does not verify fails the call on the connection.
    #[test]
    fn results_under_a_shared_context_are_opened_by_the_caller() {
        let (mine, mut server) = rpcsec::testing::FakeContext::pair(5);
        let shared = SharedContext::new(Box::new(mine));
        let mut c = RpcCore::new(RpcSettings::default(), auth_sys("t", 0, 0, &[]), 1);
        let handle = Bytes::from_static(b"ctx");
        c.set_gss_shared(GssClient::new(handle.clone(), Box::new(shared.clone()), 8), Service::Privacy, shared);
        let reply = |xid, seq, server: &mut FakeContext, verf_ok| sealed_reply(xid, seq, server, verf_ok, b"results!");
        let xid = c.call(NFS, 3, 1, Vec::new(), 0);
        assert!(c.poll_transmit(0).is_some());
        let done = c.on_record(reply(xid, 1, &mut server, true), 1).unwrap();
        assert!(done.sealed.is_some(), "left sealed for the caller");
        assert_eq!(done.into_results().open().unwrap().as_ref(), b"results!");
        let xid = c.call(NFS, 3, 1, Vec::new(), 2);
        assert!(c.poll_transmit(2).is_some());
        let done = c.on_record(reply(xid, 2, &mut server, false), 3).unwrap();
        assert!(done.sealed.is_none() && matches!(done.result, Err(RpcError::BadReply(_))), "{done:?}");
    }

    /// Calls out under a context when a new one replaces it are answered
    /// under theirs, their results opened with it; calls made after, and
    /// retransmissions, go under the new one, whose window the old calls'
    /// numbers do not hold back.
    #[test]
    fn calls_out_when_the_context_is_replaced_are_answered_under_theirs() {
        const MS: Nanos = crate::rpc::MS;
        let settings = RpcSettings { timeout_ms: 100, ..Default::default() };
        let mut c = RpcCore::new(settings, auth_sys("t", 0, 0, &[]), 1);
        let install = |c: &mut RpcCore, key: u64, handle: &'static [u8]| {
            let (mine, server) = FakeContext::pair(key);
            let shared = SharedContext::new(Box::new(mine));
            let client = GssClient::new(Bytes::from_static(handle), Box::new(shared.clone()), 4);
            c.set_gss_shared(client, Service::Privacy, shared);
            server
        };
        let open = |done: Option<crate::rpc::Completion>| done.expect("a completion").into_results().open();
        let mut a = install(&mut c, 5, b"A");
        let old: Vec<u32> = (0..3).map(|_| c.call(NFS, 3, 1, Vec::new(), 0)).collect();
        let sent: Vec<_> = std::iter::from_fn(|| c.poll_transmit(0)).map(|r| sent_under(&r)).collect();
        assert_eq!(
            sent.iter().map(|s| (s.1.as_ref(), s.2)).collect::<Vec<_>>(),
            [(&b"A"[..], 1), (b"A", 2), (b"A", 3)]
        );
        let new = c.call(NFS, 3, 1, Vec::new(), 0);
        assert!(c.poll_transmit(0).is_none(), "a window of 4 holds back A's number 4");

        let mut b = install(&mut c, 6, b"B");
        let r = c.poll_transmit(50 * MS).expect("A's calls out do not hold back B's");
        assert_eq!(sent_under(&r), (new, Bytes::from_static(b"B"), 1));
        let done = c.on_record(sealed_reply(old[1], 2, &mut a, true, b"old 1"), 60 * MS);
        assert_eq!(open(done).expect("checked and opened under A").as_ref(), b"old 1");

        // The two others time out and go again, under B.
        assert!(c.poll_timers(100 * MS).failed.is_empty());
        let resent: Vec<_> = std::iter::from_fn(|| c.poll_transmit(100 * MS)).map(|r| sent_under(&r)).collect();
        assert_eq!(resent.len(), 2);
        assert!(resent.iter().all(|(x, h, _)| old.contains(x) && h.as_ref() == b"B"), "{resent:?}");
        let seq_b = |xid| resent.iter().find(|r| r.0 == xid).map(|r| r.2).unwrap();
        // One answered under its first transmission's context, one under
        // its second's, and the call made after under B.
        let done = c.on_record(sealed_reply(old[0], 1, &mut a, true, b"old 0"), 110 * MS);
        assert_eq!(open(done).expect("answered under A").as_ref(), b"old 0");
        let done = c.on_record(sealed_reply(old[2], seq_b(old[2]), &mut b, true, b"old 2"), 110 * MS);
        assert_eq!(open(done).expect("answered under B").as_ref(), b"old 2");
        let done = c.on_record(sealed_reply(new, 1, &mut b, true, b"new"), 120 * MS);
        assert_eq!(open(done).expect("answered under B").as_ref(), b"new");

        // A third context: B's calls out still verify under B; a reply
        // checked under another context than the call's does not.
        let x = c.call(NFS, 3, 1, Vec::new(), 200 * MS);
        let seq = sent_under(&c.poll_transmit(200 * MS).unwrap()).2;
        install(&mut c, 7, b"C");
        let other = c.call(NFS, 3, 1, Vec::new(), 200 * MS);
        let _ = c.poll_transmit(200 * MS);
        let done = c.on_record(sealed_reply(x, seq, &mut b, true, b"x"), 210 * MS);
        assert_eq!(open(done).expect("answered under B").as_ref(), b"x");
        let done = c.on_record(sealed_reply(other, 1, &mut a, true, b"other"), 210 * MS);
        assert!(matches!(open(done), Err(RpcError::BadReply(_))));
    }

    /// A wide window leaves the connection's own limit in charge.
    #[test]
    fn a_wide_window_holds_nothing_back() {
        let mut c = core(128);
        for _ in 0..70 {
            c.call(NFS, 3, 1, Vec::new(), 0);
        }
        let sent = std::iter::from_fn(|| c.poll_transmit(0)).count();
        assert_eq!(sent, 64);
    }
}

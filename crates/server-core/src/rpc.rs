//! ONC RPC v2 (RFC 5531): the call header, authentication, program
//! dispatch and the reply header.
//!
//! The call header is read once, field by field, by [`Core::parse`]
//! (`record.rs`) rather than with the generated `call_body` decoder,
//! because that decoder refuses an unknown `auth_flavor` and the protocol
//! wants an AUTH_ERROR reply for it, not silence; a version other than 2
//! is answered before the rest of the header (whose layout only version 2
//! defines) is read.

use bytes::Bytes;
use proto::rpc::accept_stat;
use proto::rpc::{
    accepted_reply, auth_flavor, auth_stat, authsys_parms, mismatch_info, opaque_auth, rejected_reply, reply_body,
    reply_data, rpc_msg, rpc_msg_body,
};
use xdr::{Decoder, Encode, Encoder};

use crate::drc::Lookup;
use crate::record::{CallHead, Head, Record};
use crate::{Core, Outcome, PeerInfo, WarnKind};

pub const RPC_VERSION: u32 = 2;
const FLAVOR_NONE: u32 = auth_flavor::AUTH_NONE as u32;
const FLAVOR_SYS: u32 = auth_flavor::AUTH_SYS as u32;
const FLAVOR_SHORT: u32 = auth_flavor::AUTH_SHORT as u32;
/// RFC 9289 section 7.1: a NULL call with it asks whether the server
/// speaks RPC-with-TLS on this connection.
pub const AUTH_TLS: u32 = 7;
/// The verifier body of the reply that says "start TLS now".
const STARTTLS: &[u8; 8] = b"STARTTLS";

/// The xid of `record` (an RPC record without record marking) if it is
/// the RPC-with-TLS probe: a CALL of procedure 0 (NULL) whose credential
/// is AUTH_TLS (RFC 9289 section 4.1). The transport answers it with
/// [`starttls_reply`] and starts the TLS handshake.
pub fn tls_probe_xid(record: &[u8]) -> Option<u32> {
    let mut d = Decoder::new(Bytes::copy_from_slice(record.get(..32)?));
    let xid = d.u32().ok()?;
    let fields = [d.u32().ok()?, d.u32().ok()?, d.u32().ok()?, d.u32().ok()?, d.u32().ok()?, d.u32().ok()?];
    let [mtype, rpcvers, _prog, _vers, proc_, flavor] = fields;
    (mtype == 0 && rpcvers == RPC_VERSION && proc_ == 0 && flavor == AUTH_TLS).then_some(xid)
}

/// The reply to the probe `xid`: accepted, with an AUTH_NONE verifier
/// holding "STARTTLS".
pub fn starttls_reply(xid: u32) -> Vec<Bytes> {
    let verf = opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::from_static(STARTTLS) };
    let mut e = Encoder::with_capacity(32);
    encode_reply(xid, reply_body::MSG_ACCEPTED(accepted_reply { verf, reply_data: reply_data::SUCCESS }), &mut e);
    e.into_segments()
}

/// The caller's credential as sent (before export squashing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Sys {
        uid: u32,
        gid: u32,
        gids: Vec<u32>,
        machinename: Bytes,
    },
    /// RPCSEC_GSS: a context's principal, checked.
    Gss(crate::gss::GssCaller),
}

impl Auth {
    /// The security flavor as exports name it (AUTH_NONE counts as sys).
    pub fn flavor(&self) -> rpcsec::Flavor {
        match self {
            Auth::None | Auth::Sys { .. } => rpcsec::Flavor::Sys,
            Auth::Gss(c) => rpcsec::Flavor::of_service(c.service),
        }
    }

    /// Whether replies must be sealed whole (no file region sent after
    /// them): the integrity and privacy services.
    pub fn seals_results(&self) -> bool {
        matches!(self, Auth::Gss(c) if c.service != rpcsec::Service::None)
    }
}

/// A decoded call: header fields plus its authentication.
#[derive(Debug)]
pub struct Call<'a> {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub auth: Auth,
    pub peer: &'a PeerInfo,
    /// Run on the connection's thread: a procedure that would have to
    /// wait gives up ([`Dispatched::WouldBlock`]) instead.
    pub nowait: bool,
}

/// What a program's dispatcher made of a call.
pub enum Dispatched {
    /// Arguments decoded and the procedure ran; the reply (header
    /// included) is in the encoder.
    Done {
        label: &'static str,
        ok: bool,
    },
    /// Like `Done` (and successful), with file bytes to follow the reply.
    DoneWithFile {
        label: &'static str,
        tail: vfs::FileRegion,
    },
    ProcUnavail {
        label: &'static str,
    },
    GarbageArgs {
        label: &'static str,
    },
    /// Run with [`Call::nowait`] and it would have to wait: nothing was
    /// done, run it again where waiting is allowed.
    WouldBlock,
    /// An NFSv4 compound that waits for an event (a callback's answer):
    /// nothing is sent yet, it runs on when resumed.
    Parked(Box<crate::ops::v4::run::Progress>),
    /// Rejected for its credential (e.g. AUTH_NONE on an NFS procedure).
    AuthError {
        label: &'static str,
        stat: auth_stat,
    },
}

fn verf_none() -> opaque_auth {
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }
}

fn encode_reply(xid: u32, body: reply_body, e: &mut Encoder) {
    rpc_msg { xid, body: rpc_msg_body::REPLY(body) }.encode(e);
}

/// An accepted reply with verifier `verf`, then `results` (nothing, for
/// `()`).
pub(crate) fn accepted_with(xid: u32, verf: opaque_auth, data: reply_data, results: &impl Encode) -> Vec<Bytes> {
    let mut e = Encoder::with_capacity(64);
    encode_reply(xid, reply_body::MSG_ACCEPTED(accepted_reply { verf, reply_data: data }), &mut e);
    results.encode(&mut e);
    e.into_segments()
}

/// An accepted reply's header up to and including its accept_stat, as a
/// number: what follows is the accept_stat's body, written by the caller.
pub(crate) fn encode_accepted_head(xid: u32, verf: opaque_auth, accept: u32, e: &mut Encoder) {
    e.u32(xid);
    e.u32(1); // REPLY
    e.u32(0); // MSG_ACCEPTED
    verf.encode(e);
    e.u32(accept);
}

/// An AUTH_ERROR refusal.
pub(crate) fn rejected_auth(xid: u32, stat: auth_stat) -> Vec<Bytes> {
    rejected(xid, rejected_reply::AUTH_ERROR(stat))
}

/// Writes an accepted reply header; with `SUCCESS` the procedure's results
/// follow.
pub fn accepted(xid: u32, data: reply_data, e: &mut Encoder) {
    encode_reply(xid, reply_body::MSG_ACCEPTED(accepted_reply { verf: verf_none(), reply_data: data }), e);
}

pub fn success_header(xid: u32, e: &mut Encoder) {
    accepted(xid, reply_data::SUCCESS, e);
}

fn rejected(xid: u32, r: rejected_reply) -> Vec<Bytes> {
    let mut e = Encoder::with_capacity(32);
    encode_reply(xid, reply_body::MSG_DENIED(r), &mut e);
    e.into_segments()
}

fn accepted_only(xid: u32, data: reply_data) -> Vec<Bytes> {
    let mut e = Encoder::with_capacity(32);
    accepted(xid, data, &mut e);
    e.into_segments()
}

pub(crate) fn outcome(reply: Vec<Bytes>, label: &'static str, ok: bool) -> Outcome {
    Outcome { reply: Some(reply), label, ok, tail: None, ..Outcome::default() }
}

/// Parses the credential; `Err` is the auth_stat to reject with.
fn parse_auth(flavor: u32, body: Bytes) -> Result<Auth, auth_stat> {
    match flavor {
        FLAVOR_NONE => Ok(Auth::None),
        FLAVOR_SYS => match xdr::from_bytes::<authsys_parms>(body) {
            Ok(p) => Ok(Auth::Sys { uid: p.uid, gid: p.gid, gids: p.gids, machinename: p.machinename }),
            Err(_) => Err(auth_stat::AUTH_BADCRED),
        },
        // We never hand out short-hand credentials; REJECTEDCRED tells the
        // client to fall back to its full AUTH_SYS credential.
        FLAVOR_SHORT => Err(auth_stat::AUTH_REJECTEDCRED),
        _ => Err(auth_stat::AUTH_BADCRED),
    }
}

impl Core {
    /// One complete RPC record in, the reply record out (without record
    /// marking). For callers holding the bytes only: the transport parses
    /// first ([`Core::parse`]) and calls [`Core::handle_record`].
    pub fn handle(&self, record: Bytes, peer: &PeerInfo) -> Outcome {
        self.handle_record(&self.parse(record), peer)
    }

    /// [`Core::handle`] of a parsed record.
    pub fn handle_record(&self, record: &Record, peer: &PeerInfo) -> Outcome {
        // Without nowait no procedure gives up.
        let out = self.run_record(record, peer, false).unwrap_or(Outcome {
            label: "rpc.would_block",
            ok: false,
            ..Outcome::default()
        });
        self.release_shared_locks();
        self.send_nlm_calls();
        out
    }

    /// Tells the core that connection `conn` (`PeerInfo::conn`) closed:
    /// the NFSv4.1 back channels bound to it are down from now on.
    pub fn connection_closed(&self, conn: u64) {
        let unwatch = crate::state::callback::connection_closed(&self.v4, conn);
        self.stop_watches(unwatch);
    }

    /// Runs `record` if it can finish without waiting on a disk; `None`
    /// when it would have to wait (nothing was done: run it with
    /// [`Core::handle_record`] on a thread that may block). For records
    /// placed [`crate::Placement::TryInline`].
    pub fn try_handle_inline(&self, record: &Record, peer: &PeerInfo) -> Option<Outcome> {
        let out = self.run_record(record, peer, true);
        self.send_nlm_calls();
        out
    }

    fn run_record(&self, record: &Record, peer: &PeerInfo, nowait: bool) -> Option<Outcome> {
        let h = match record.head {
            Head::Call(h) => h,
            Head::Short => {
                self.warn(
                    WarnKind::Garbage,
                    || tracing::warn!(peer = %peer.addr, "record too short for an RPC header"),
                );
                return Some(Outcome { label: "rpc.garbage", ok: false, ..Outcome::default() });
            }
            Head::Reply { xid, at } => {
                if let Some((woken, label)) =
                    crate::state::callback::on_reply(self, peer.conn, xid, record.decoder_at(at))
                {
                    return Some(Outcome { label, ok: true, woken, ..Outcome::default() });
                }
                self.warn(
                    WarnKind::Garbage,
                    || tracing::warn!(peer = %peer.addr, xid, "a reply that answers no outstanding callback; ignored"),
                );
                return Some(Outcome { reply: None, label: "rpc.reply", ok: false, tail: None, ..Outcome::default() });
            }
            Head::Other { xid, mtype } => {
                self.warn(
                    WarnKind::Garbage,
                    || tracing::warn!(peer = %peer.addr, xid, mtype, "record is not an RPC call; ignored"),
                );
                return Some(Outcome { label: "rpc.garbage", ok: false, ..Outcome::default() });
            }
            Head::Mismatch { xid, rpcvers } => {
                self.warn(
                    WarnKind::Garbage,
                    || tracing::warn!(peer = %peer.addr, xid, rpcvers, "RPC version mismatch"),
                );
                let r =
                    rejected(xid, rejected_reply::RPC_MISMATCH(mismatch_info { low: RPC_VERSION, high: RPC_VERSION }));
                return Some(outcome(r, "rpc.rpc_mismatch", false));
            }
            Head::Garbled { xid } => return Some(self.undecodable(peer, xid)),
        };
        let CallHead { xid, prog, vers, proc_, cred_flavor, .. } = h;
        // AUTH_TLS is only the probe. Where the transport did not take it
        // up (no TLS here, or not the connection's first record) a NULL
        // with it is answered as plain NULL, whose verifier lacks
        // "STARTTLS": the client goes on in clear text or gives up. On
        // any other procedure, or inside TLS, it is AUTH_BADCRED (RFC 9289
        // section 4.1).
        let tls_probe = cred_flavor == AUTH_TLS;
        if tls_probe && (proc_ != 0 || peer.tls != crate::TransportSecurity::Clear) {
            self.warn(
                WarnKind::Auth,
                || tracing::warn!(peer = %peer.addr, xid, proc_, "AUTH_TLS outside a clear-text NULL call"),
            );
            return Some(outcome(
                rejected(xid, rejected_reply::AUTH_ERROR(auth_stat::AUTH_BADCRED)),
                "rpc.auth_error",
                false,
            ));
        }
        // The arguments of an RPCSEC_GSS call with integrity or privacy,
        // opened.
        let mut gss_args = None;
        let parsed = if tls_probe {
            Ok(Auth::None)
        } else if cred_flavor == crate::gss::data::FLAVOR_GSS && self.gss.enabled() {
            match self.gss_call(record, &h, peer, nowait)? {
                crate::gss::data::GssVerdict::Run { caller, args } => {
                    gss_args = Some(args);
                    Ok(Auth::Gss(caller))
                }
                crate::gss::data::GssVerdict::Answered(out) => return Some(out),
            }
        } else {
            parse_auth(cred_flavor, record.cred(&h))
        };
        let auth = match parsed {
            Ok(a) => a,
            Err(stat) => {
                self.warn(
                    WarnKind::Auth,
                    || tracing::warn!(peer = %peer.addr, xid, cred_flavor, ?stat, "credential rejected"),
                );
                return Some(outcome(rejected(xid, rejected_reply::AUTH_ERROR(stat)), "rpc.auth_error", false));
            }
        };
        let call = Call { xid, prog, vers, proc_, auth, peer, nowait };
        let mut d = match gss_args {
            Some(args) => Decoder::new(args),
            None => record.decoder_at(h.args_at),
        };
        let ticket = match self.drc.begin(&call, record.len(), &d, || self.v4.now()) {
            Lookup::NotCached => None,
            Lookup::Miss(ticket) => Some(ticket),
            Lookup::InProgress => {
                tracing::debug!(peer = %peer.addr, xid, prog, vers, proc_, "retransmission of a call still running; dropped");
                // Not an error: the first copy's reply answers it.
                return Some(Outcome {
                    reply: None,
                    label: "rpc.drc_in_progress",
                    ok: true,
                    tail: None,
                    ..Outcome::default()
                });
            }
            Lookup::Replay(reply) => {
                tracing::debug!(peer = %peer.addr, xid, prog, vers, proc_, "retransmission answered with the cached reply");
                let mut out = outcome(vec![reply], "rpc.drc_replay", true);
                self.seal_for(&call, &mut out);
                return Some(out);
            }
        };
        let mut out = self.dispatch(&call, &mut d)?;
        self.settle(ticket, &mut out);
        self.seal_for(&call, &mut out);
        Some(out)
    }

    /// Seals the reply of an RPCSEC_GSS call (after the duplicate request
    /// cache kept its plain form; see `gss::seal`).
    pub(crate) fn seal_for(&self, call: &Call, out: &mut Outcome) {
        if let Auth::Gss(caller) = &call.auth {
            self.gss_seal_for(caller, out);
        }
    }

    /// Stores `out`'s reply in the duplicate request cache, or, for a
    /// parked call, keeps its entry in progress with it.
    pub(crate) fn settle(&self, ticket: Option<crate::drc::Ticket<'_>>, out: &mut Outcome) {
        let Some(ticket) = ticket else { return };
        match out.parked.as_mut() {
            Some(p) => p.ticket = Some(ticket.hold()),
            // A reply with a file tail is a READ, never cached; should one
            // be, it is not kept (its bytes are not all in memory).
            None => ticket.finish(out.reply.as_deref().filter(|_| out.tail.is_none())),
        }
    }

    /// Runs a call whose header has been read; `d` is at its arguments.
    fn dispatch(&self, call: &Call, d: &mut Decoder) -> Option<Outcome> {
        let Call { xid, prog, vers, peer, .. } = *call;
        // What the backend learns about an object in this call may serve
        // the call's next use of it, and nothing past the call.
        let _scope = vfs::RequestScope::enter();
        let mut e = Encoder::with_capacity(256);
        let dispatched = match prog {
            crate::portmap::PROGRAM => match vers {
                2..=4 => crate::portmap::dispatch(self, call, d, &mut e),
                _ => return Some(self.prog_mismatch(call, 2, 4, "portmap.prog_mismatch")),
            },
            crate::mount::PROGRAM => match vers {
                crate::mount::VERSION => crate::mount::dispatch(self, call, d, &mut e),
                _ => return Some(self.prog_mismatch(call, 3, 3, "mount.prog_mismatch")),
            },
            crate::ops::v3::PROGRAM => {
                let (low, high) = self.settings.nfs_program_versions();
                match vers {
                    crate::ops::v3::VERSION if low == 3 => crate::ops::v3::dispatch(self, call, d, &mut e),
                    crate::ops::v4::VERSION if high == 4 => crate::ops::v4::dispatch(self, call, d, &mut e),
                    _ => return Some(self.prog_mismatch(call, low, high, "nfs.prog_mismatch")),
                }
            }
            crate::nlm::PROGRAM => match vers {
                crate::nlm::VERSION => crate::nlm::dispatch(self, call, d, &mut e),
                _ => return Some(self.prog_mismatch(call, 4, 4, "nlm.prog_mismatch")),
            },
            crate::nlm::nsm::PROGRAM => match vers {
                crate::nlm::nsm::VERSION => crate::nlm::nsm::dispatch(self, call, d, &mut e),
                _ => return Some(self.prog_mismatch(call, 1, 1, "nsm.prog_mismatch")),
            },
            _ => {
                self.warn(
                    WarnKind::Garbage,
                    || tracing::warn!(peer = %peer.addr, xid, prog, vers, "call for an unknown program"),
                );
                return Some(outcome(
                    accepted_only(xid, reply_data::default(accept_stat::PROG_UNAVAIL)),
                    "rpc.prog_unavail",
                    false,
                ));
            }
        };
        self.outcome_of(call, dispatched, e)
    }

    /// The outcome of a call a program's dispatcher ran (`None`: it would
    /// have blocked), with the reply in `e`.
    pub(crate) fn outcome_of(&self, call: &Call, dispatched: Dispatched, e: Encoder) -> Option<Outcome> {
        let Call { xid, prog, vers, proc_, peer, .. } = *call;
        Some(match dispatched {
            Dispatched::WouldBlock => return None,
            Dispatched::Parked(progress) => Outcome {
                label: "nfs4.COMPOUND",
                ok: true,
                parked: Some(Box::new(crate::park::Parked::new(self, call, progress))),
                ..Outcome::default()
            },
            Dispatched::Done { label, ok } => outcome(e.into_segments(), label, ok),
            Dispatched::DoneWithFile { label, tail } => {
                Outcome { reply: Some(e.into_segments()), label, ok: true, tail: Some(tail), ..Outcome::default() }
            }
            Dispatched::ProcUnavail { label } => {
                self.warn(
                    WarnKind::Garbage,
                    || tracing::warn!(peer = %peer.addr, xid, prog, vers, proc_, "unknown procedure"),
                );
                outcome(accepted_only(xid, reply_data::default(accept_stat::PROC_UNAVAIL)), label, false)
            }
            Dispatched::GarbageArgs { label } => {
                self.warn(WarnKind::Garbage, || tracing::warn!(peer = %peer.addr, xid, label, "undecodable arguments"));
                outcome(accepted_only(xid, reply_data::default(accept_stat::GARBAGE_ARGS)), label, false)
            }
            Dispatched::AuthError { label, stat } => {
                self.warn(
                    WarnKind::Auth,
                    || tracing::warn!(peer = %peer.addr, xid, label, ?stat, "credential too weak"),
                );
                outcome(rejected(xid, rejected_reply::AUTH_ERROR(stat)), label, false)
            }
        })
    }

    fn undecodable(&self, peer: &PeerInfo, xid: u32) -> Outcome {
        self.warn(WarnKind::Garbage, || tracing::warn!(peer = %peer.addr, xid, "undecodable RPC call header"));
        Outcome { label: "rpc.garbage", ok: false, ..Outcome::default() }
    }

    fn prog_mismatch(&self, call: &Call, low: u32, high: u32, label: &'static str) -> Outcome {
        self.warn(WarnKind::Garbage, || {
            tracing::warn!(peer = %call.peer.addr, xid = call.xid, prog = call.prog, vers = call.vers, "unsupported program version")
        });
        outcome(accepted_only(call.xid, reply_data::PROG_MISMATCH(mismatch_info { low, high })), label, false)
    }
}

/// Decodes `A`, runs `f`, and writes the success header and the result:
/// the common shape of every procedure. Trailing bytes after the arguments
/// are tolerated (some clients pad).
pub fn run<A, R>(
    call: &Call,
    args: &mut Decoder,
    e: &mut Encoder,
    label: &'static str,
    decode: impl FnOnce(&mut Decoder) -> xdr::Result<A>,
    f: impl FnOnce(A) -> (R, bool),
) -> Dispatched
where
    R: Encode,
{
    let Ok(a) = decode(args) else {
        return Dispatched::GarbageArgs { label };
    };
    let (res, ok) = f(a);
    success_header(call.xid, e);
    res.encode(e);
    Dispatched::Done { label, ok }
}

/// A sequence in the XDR linked-list form (`struct T { ...; T *next; }`
/// chains such as `mountlist` and `exports`), where a plain `Vec` would
/// be encoded as a counted array.
pub struct XdrList<T>(pub Vec<T>);

impl<T: Encode> Encode for XdrList<T> {
    fn encode(&self, e: &mut Encoder) {
        e.list(&self.0)
    }
}

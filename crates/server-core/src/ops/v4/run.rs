//! Running a COMPOUND's operations in order, and parking it when one of
//! them must wait for an event: a GETATTR of a file another client holds
//! a write delegation on waits for the holder's CB_GETATTR answer (RFC
//! 8881 section 10.4.3). The core does not block for it: the compound's
//! progress (replies so far, current and saved handles and stateids, the
//! session slot, where the next operation starts) goes back to the
//! transport as a [`crate::Parked`], which runs it on with
//! [`crate::Core::resume`] once the answer came or its time ran out.

use bytes::Bytes;
use proto::nfs4::*;
use xdr::{Decode, Decoder, Encode, Encoder};

use super::compound::SeqCtx;
use super::wrongsec;
use super::{
    error_result, read, read_plus, sequence, sessionless, table, undecodable, v40_only, Compound, EncodeAsOp, Fh,
    LAST_V40_OP, LAST_V41_OP, LAST_V42_OP, MAX_MINOR, MAX_TAG_LEN,
};
use crate::park::{HolderAnswer, WaitId};
use crate::rpc::{success_header, Call, Dispatched};
use crate::Core;

const LABEL: &str = "nfs4.COMPOUND";

/// The results encoded so far and the compound's status.
struct Replies {
    status: nfsstat4,
    count: u32,
    enc: Encoder,
}

/// A compound stopped before operation `next`, waiting for `wait`.
pub(crate) struct Progress {
    pub wait: WaitId,
    tag: Bytes,
    minor: u32,
    count: u32,
    out: Replies,
    next: usize,
    /// At the arguments of operation `next`.
    args: Decoder,
    cfh: Option<Fh>,
    sfh: Option<Fh>,
    current_stateid: Option<stateid4>,
    saved_stateid: Option<stateid4>,
    seq: Option<SeqCtx>,
    only_lookups_before: bool,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("wait", &self.wait)
            .field("next", &self.next)
            .field("count", &self.count)
            .finish()
    }
}

/// Where a run of operations starts: a new compound, or a parked one
/// resumed with what it waited for.
struct Start {
    tag: Bytes,
    count: u32,
    out: Replies,
    first: usize,
    only_lookups_before: bool,
    /// The arguments the decoder runs over, to its end: from the tag on
    /// for a new compound (SEQUENCE's reply-cache digest is of them), from
    /// the waiting operation on for a resumed one.
    raw: Bytes,
    /// Operations decoded already (with the decoder past each).
    predecoded: std::collections::VecDeque<(nfs_argop4, Decoder)>,
}

pub(crate) fn compound(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    // The digest lets SEQUENCE tell a retransmission from a different
    // request reusing the slot (NFS4ERR_SEQ_FALSE_RETRY).
    let raw = d.clone().rest();
    let header = (|| -> xdr::Result<_> { Ok((d.opaque_var(MAX_TAG_LEN)?, d.u32()?, d.u32()?)) })();
    let Ok((tag, minor, count)) = header else {
        return Dispatched::GarbageArgs { label: LABEL };
    };
    let out = Replies { status: nfsstat4::NFS4_OK, count: 0, enc: Encoder::with_capacity(512) };
    let refuse = |status: nfsstat4, mut out: Replies, e: &mut Encoder| {
        out.status = status;
        finish_plain(call, &tag, out, e);
        Dispatched::Done { label: LABEL, ok: false }
    };
    if std::str::from_utf8(&tag).is_err() {
        return refuse(nfsstat4::NFS4ERR_INVAL, out, e);
    }
    let offered = match minor {
        0 => core.settings().offers(crate::settings::NfsVersion::V40),
        1 => core.settings().offers(crate::settings::NfsVersion::V41),
        2 => core.settings().offers(crate::settings::NfsVersion::V42),
        _ => false,
    };
    if minor > MAX_MINOR || !offered {
        return refuse(nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH, out, e);
    }
    if minor == 0 && count > core.v4.settings.max_ops {
        return refuse(nfsstat4::NFS4ERR_RESOURCE, out, e);
    }
    let mut cx = Compound::new(core, call, minor);
    cx.op_count = count as usize;
    let mut predecoded = std::collections::VecDeque::new();
    if call.nowait {
        // Only a READ is placed here to be tried: its data must be in the
        // page cache before SEQUENCE claims the slot, or the compound goes
        // to a worker with nothing done.
        match read::read_ahead(core, d.clone(), minor, count) {
            Some(mut data) => {
                predecoded = std::mem::take(&mut data.ops);
                cx.verified_fh = Some(data.verified.clone());
                cx.read_ahead = Some(data);
            }
            None => return Dispatched::WouldBlock,
        }
    }
    let start = Start { tag, count, out, first: 0, only_lookups_before: true, raw, predecoded };
    run_ops(cx, call, d, start, e)
}

/// Runs parked compound `p` on from the operation that waited, which
/// finds `answer` in its context.
pub(crate) fn resume(core: &Core, call: &Call, p: Progress, answer: HolderAnswer, e: &mut Encoder) -> Dispatched {
    let Progress {
        wait: _,
        tag,
        minor,
        count,
        out,
        next,
        mut args,
        cfh,
        sfh,
        current_stateid,
        saved_stateid,
        seq,
        only_lookups_before,
    } = p;
    let mut cx = Compound::new(core, call, minor);
    cx.op_count = count as usize;
    cx.cfh = cfh;
    cx.sfh = sfh;
    cx.current_stateid = current_stateid;
    cx.saved_stateid = saved_stateid;
    cx.seq = seq;
    cx.holder_answer = Some(answer);
    let raw = args.clone().rest();
    let start = Start { tag, count, out, first: next, only_lookups_before, raw, predecoded: Default::default() };
    run_ops(cx, call, &mut args, start, e)
}

fn run_ops(mut cx: Compound, call: &Call, d: &mut Decoder, start: Start, e: &mut Encoder) -> Dispatched {
    let Start { tag, count, mut out, first, mut only_lookups_before, raw, mut predecoded } = start;
    let minor = cx.minor;
    // The file region a READ ending the compound left to the transport,
    // and whether every operation before it only found the file.
    let mut tail = None;
    let last_op = match minor {
        0 => LAST_V40_OP,
        1 => LAST_V41_OP,
        _ => LAST_V42_OP,
    };
    for i in first..count as usize {
        cx.op_index = i;
        let Ok(opcode) = d.clone().u32() else {
            // The array promised more operations than the record holds.
            out.status = nfsstat4::NFS4ERR_BADXDR;
            break;
        };
        if !(3..=last_op).contains(&opcode) {
            let _ = d.u32();
            error_result(nfs_opnum4::OP_ILLEGAL as u32, nfsstat4::NFS4ERR_OP_ILLEGAL, &mut out.enc);
            out.count += 1;
            out.status = nfsstat4::NFS4ERR_OP_ILLEGAL;
            break;
        }
        if minor >= 1 {
            let status = if i == 0 {
                if opcode == nfs_opnum4::OP_SEQUENCE as u32 {
                    None
                } else if !sessionless(opcode) {
                    Some(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)
                } else if count > 1 {
                    Some(nfsstat4::NFS4ERR_NOT_ONLY_OP)
                } else {
                    None
                }
            } else if opcode == nfs_opnum4::OP_SEQUENCE as u32 {
                Some(nfsstat4::NFS4ERR_SEQUENCE_POS)
            } else if v40_only(opcode) {
                Some(nfsstat4::NFS4ERR_NOTSUPP)
            } else {
                None
            };
            if let Some(s) = status {
                let _ = nfs_argop4::decode(d);
                error_result(opcode, s, &mut out.enc);
                out.count += 1;
                out.status = s;
                break;
            }
        }
        // Where this operation starts, should it have to wait (`d` runs
        // over the end of `raw`).
        let at = d.remaining();
        let decoded = match predecoded.pop_front() {
            Some((op, after)) => {
                *d = after;
                Ok(op)
            }
            None => nfs_argop4::decode(d),
        };
        let op = match decoded {
            Ok(op) => op,
            Err(e) => {
                let s = undecodable(&e);
                error_result(opcode, s, &mut out.enc);
                out.count += 1;
                out.status = s;
                break;
            }
        };
        if let (0, nfs_argop4::OP_SEQUENCE(args)) = (i, &op) {
            match sequence::begin(&mut cx, args, &raw) {
                sequence::Begin::Replay(body) => {
                    success_header(call.xid, e);
                    e.append_segments(body);
                    return Dispatched::Done { label: LABEL, ok: true };
                }
                sequence::Begin::Fail(s) => {
                    error_result(opcode, s, &mut out.enc);
                    out.count += 1;
                    out.status = s;
                    break;
                }
                sequence::Begin::Run(ok) => {
                    SEQUENCE4res::NFS4_OK(ok).encode_as_op(&mut out.enc);
                    out.count += 1;
                    // Even SEQUENCE's own reply may not fit the cache the
                    // client allowed; the reply says so (it is then cached
                    // as that error).
                    if cx.seq.as_ref().is_some_and(|s| s.cachethis && out.enc.len() > s.max_cached as usize) {
                        out.enc = Encoder::new();
                        error_result(opcode, nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE, &mut out.enc);
                        out.status = nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE;
                        break;
                    }
                    continue;
                }
            }
        }
        if let Err(s) = wrongsec::before(&mut cx, opcode) {
            error_result(opcode, s, &mut out.enc);
            out.count += 1;
            out.status = s;
            break;
        }
        let before = out.enc.len();
        let looks_up = matches!(
            op,
            nfs_argop4::OP_PUTFH(_)
                | nfs_argop4::OP_PUTROOTFH
                | nfs_argop4::OP_PUTPUBFH
                | nfs_argop4::OP_LOOKUP(_)
                | nfs_argop4::OP_GETFH
                | nfs_argop4::OP_GETATTR(_)
                | nfs_argop4::OP_ACCESS(_)
        );
        let status = match op {
            // A large READ ending the compound may leave its data for the
            // transport to send from the page cache.
            nfs_argop4::OP_READ(args)
                if i + 1 == count as usize && read::may_send_region(&cx, args.count, only_lookups_before) =>
            {
                let (status, region) = read::run_into(&mut cx, args, &mut out.enc);
                tail = region;
                status
            }
            // So may a READ_PLUS (Linux clients' NFSv4.2 READ) over a range
            // without holes.
            nfs_argop4::OP_READ_PLUS(args)
                if i + 1 == count as usize && read::may_send_region(&cx, args.rpa_count, only_lookups_before) =>
            {
                let (status, region) = read_plus::run_into(&mut cx, args, &mut out.enc);
                tail = region;
                status
            }
            op => {
                let (res, status) = table::run_op(&mut cx, op);
                if let Some(wait) = cx.park.take() {
                    // The operation waits: its result is not encoded, and
                    // it runs again, from its arguments, when resumed.
                    return Dispatched::Parked(Box::new(Progress {
                        wait,
                        tag,
                        minor,
                        count,
                        out,
                        next: i,
                        args: Decoder::new(raw.slice(raw.len().saturating_sub(at)..)),
                        cfh: cx.cfh,
                        sfh: cx.sfh,
                        current_stateid: cx.current_stateid,
                        saved_stateid: cx.saved_stateid,
                        seq: cx.seq,
                        only_lookups_before,
                    }));
                }
                res.encode(&mut out.enc);
                status
            }
        };
        out.count += 1;
        let status = match status {
            nfsstat4::NFS4_OK => match wrongsec::after(&mut cx, opcode, d) {
                Ok(()) => status,
                Err(s) => {
                    // The operation's result gives way to the error.
                    tail = None;
                    let mut trimmed = Encoder::new();
                    trimmed.append_segments(vec![out.enc.into_bytes().slice(..before)]);
                    error_result(opcode, s, &mut trimmed);
                    out.enc = trimmed;
                    s
                }
            },
            s => s,
        };
        if let Some(seq) = &cx.seq {
            // A reply the client asked to be cached must fit the cache
            // (REP_TOO_BIG_TO_CACHE), and any reply the session's limit
            // (REP_TOO_BIG): the operation that outgrew it gets the error
            // and the compound stops (RFC 8881 section 2.10.6.4).
            let sent = out.enc.len() + tail.as_ref().map_or(0, |r| (r.len as usize).next_multiple_of(4));
            let too_big = if sent > seq.max_response as usize {
                Some(nfsstat4::NFS4ERR_REP_TOO_BIG)
            } else if seq.cachethis && out.enc.len() > seq.max_cached as usize {
                Some(nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE)
            } else {
                None
            };
            if let Some(err) = too_big {
                tail = None;
                let mut trimmed = Encoder::new();
                let keep = out.enc.into_bytes().slice(..before);
                trimmed.append_segments(vec![keep]);
                error_result(opcode, err, &mut trimmed);
                out.enc = trimmed;
                out.status = err;
                break;
            }
        }
        if status != nfsstat4::NFS4_OK {
            out.status = status;
            break;
        }
        only_lookups_before &= looks_up;
    }
    let ok = out.status == nfsstat4::NFS4_OK;
    if cx.seq.is_some() {
        // The reply body (everything after the RPC header) is what a
        // retransmission on this slot gets back.
        let mut body = Encoder::with_capacity(64);
        out.status.encode(&mut body);
        body.opaque_bytes(&tag);
        body.u32(out.count);
        body.append_segments(out.enc.into_segments());
        let body = body.into_segments();
        sequence::finish(&cx, &body);
        success_header(call.xid, e);
        e.append_segments(body);
    } else {
        finish_plain(call, &tag, out, e);
    }
    match tail {
        Some(tail) if ok => Dispatched::DoneWithFile { label: LABEL, tail },
        _ => Dispatched::Done { label: LABEL, ok },
    }
}

/// The reply of a compound outside a session.
fn finish_plain(call: &Call, tag: &Bytes, out: Replies, e: &mut Encoder) {
    success_header(call.xid, e);
    out.status.encode(e);
    e.opaque_bytes(tag);
    e.u32(out.count);
    e.append_segments(out.enc.into_segments());
}

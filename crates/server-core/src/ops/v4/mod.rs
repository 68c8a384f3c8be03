//! NFSv4 (RFC 7530 for minor version 0, RFC 8881 for minor version 1,
//! RFC 7862 and RFC 8276's extended attributes for minor version 2):
//! the NULL procedure and COMPOUND. Operations are decoded one at a time
//! and run as they are decoded, so a compound of any length costs memory
//! for its replies only; each operation lives in its own file and the
//! table in `table.rs` wraps its result.

pub(crate) mod attrs;
pub(crate) mod compound;
pub(crate) mod dirops;
mod io;
pub(crate) mod pnfs;
pub(crate) mod pseudo;
pub(crate) mod status;
mod table;

mod access;
mod allocate;
mod backchannel_ctl;
mod bind_conn_to_session;
mod clone;
mod close;
mod commit;
mod copy;
mod copy_async;
mod create;
mod create_session;
mod deallocate;
mod delegreturn;
mod destroy_clientid;
mod destroy_session;
mod exchange_id;
mod free_stateid;
mod getattr;
mod getdeviceinfo;
mod getdevicelist;
mod getfh;
mod getxattr;
mod io_advise;
mod layoutcommit;
mod layouterror;
mod layoutget;
mod layoutreturn;
mod link;
mod listxattrs;
mod lock;
mod lockt;
mod locku;
mod lookup;
mod lookupp;
mod nverify;
mod offload_cancel;
mod offload_status;
mod open;
mod open_confirm;
mod open_downgrade;
mod putfh;
mod putpubfh;
mod putrootfh;
mod read;
mod read_plus;
mod readdir;
mod readlink;
mod reclaim_complete;
mod release_lockowner;
mod remove;
mod removexattr;
mod rename;
mod renew;
mod restorefh;
mod savefh;
mod secinfo;
mod secinfo_no_name;
mod seek;
mod sequence;
mod set_ssv;
mod setattr;
mod setclientid;
mod setclientid_confirm;
mod setxattr;
mod test_stateid;
mod verify;
mod write;
mod xattrs;

use bytes::Bytes;
use proto::nfs4::*;
use xdr::{Decode, Decoder, Encode, Encoder};

use crate::rpc::{success_header, Call, Dispatched};
use crate::Core;
#[allow(unused_imports)]
pub(crate) use compound::{Compound, Fh, Obj};

pub const PROGRAM: u32 = 100003;
pub const VERSION: u32 = 4;
/// Highest minor version served.
pub const MAX_MINOR: u32 = 2;
/// `OP_RELEASE_LOCKOWNER`: the last operation minor version 0 defines.
const LAST_V40_OP: u32 = 39;
/// `OP_RECLAIM_COMPLETE`: the last operation minor version 1 defines.
const LAST_V41_OP: u32 = 58;
/// `OP_REMOVEXATTR`: the last operation of minor version 2 with the
/// extended attributes RFC 8276 adds to it.
const LAST_V42_OP: u32 = 75;
/// Longest COMPOUND tag accepted (RFC 7530 gives none; it is echoed back).
const MAX_TAG_LEN: u32 = 1024;

/// Status of a result the handler built whole.
pub(crate) trait Status {
    fn status(&self) -> nfsstat4;
}

impl Status for LOCK4res {
    fn status(&self) -> nfsstat4 {
        self.discriminant()
    }
}
impl Status for LOCKT4res {
    fn status(&self) -> nfsstat4 {
        self.discriminant()
    }
}
impl Status for SETCLIENTID4res {
    fn status(&self) -> nfsstat4 {
        self.discriminant()
    }
}
impl Status for COPY4res {
    fn status(&self) -> nfsstat4 {
        self.discriminant()
    }
}
impl Status for GETDEVICEINFO4res {
    fn status(&self) -> nfsstat4 {
        self.discriminant()
    }
}
impl Status for SETATTR4res {
    fn status(&self) -> nfsstat4 {
        self.status
    }
}

pub(crate) fn status_of(r: Result<(), nfsstat4>) -> nfsstat4 {
    match r {
        Ok(()) => nfsstat4::NFS4_OK,
        Err(s) => s,
    }
}

pub(crate) fn dispatch(core: &Core, call: &Call, args: &mut Decoder, e: &mut Encoder) -> Dispatched {
    match call.proc_ {
        0 => crate::rpc::run(call, args, e, "nfs4.NULL", |_| Ok(()), |()| ((), true)),
        1 => compound(core, call, args, e),
        _ => Dispatched::ProcUnavail { label: "nfs4.unknown" },
    }
}

/// The status of an operation whose arguments do not decode: a layout
/// type this server has never heard of is NFS4ERR_UNKNOWN_LAYOUTTYPE
/// (RFC 8881 18.43.3 and the other layout operations), not a malformed
/// request, although `layouttype4` is an enum to the XDR decoder.
fn undecodable(e: &xdr::XdrError) -> nfsstat4 {
    match e {
        xdr::XdrError::BadEnum { name: "layouttype4", .. } => nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE,
        _ => nfsstat4::NFS4ERR_BADXDR,
    }
}

/// The operations that may open a minor-version-1 compound without a
/// SEQUENCE, as its only operation (RFC 8881 section 2.6.3.1.1.1 and
/// each operation's description).
fn sessionless(op: u32) -> bool {
    use nfs_opnum4::*;
    [OP_EXCHANGE_ID, OP_CREATE_SESSION, OP_DESTROY_SESSION, OP_DESTROY_CLIENTID, OP_BIND_CONN_TO_SESSION]
        .iter()
        .any(|o| *o as u32 == op)
}

/// Operations minor version 1 removed (RFC 8881 section 15.2: they are
/// answered NFS4ERR_NOTSUPP).
fn v40_only(op: u32) -> bool {
    use nfs_opnum4::*;
    [OP_SETCLIENTID, OP_SETCLIENTID_CONFIRM, OP_RENEW, OP_OPEN_CONFIRM, OP_RELEASE_LOCKOWNER]
        .iter()
        .any(|o| *o as u32 == op)
}

/// An undecodable operation's result: its opcode and a status (every
/// result type encodes its error case as the status alone, except
/// SETATTR which adds an empty bitmap).
fn error_result(opcode: u32, status: nfsstat4, e: &mut Encoder) {
    e.u32(opcode);
    status.encode(e);
    if opcode == nfs_opnum4::OP_SETATTR as u32 {
        e.u32(0);
    }
}

struct Replies {
    status: nfsstat4,
    count: u32,
    enc: Encoder,
}

fn compound(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    let label = "nfs4.COMPOUND";
    // The digest lets SEQUENCE tell a retransmission from a different
    // request reusing the slot (NFS4ERR_SEQ_FALSE_RETRY).
    let raw = d.clone().rest();
    let header = (|| -> xdr::Result<_> { Ok((d.opaque_var(MAX_TAG_LEN)?, d.u32()?, d.u32()?)) })();
    let Ok((tag, minor, count)) = header else {
        return Dispatched::GarbageArgs { label };
    };
    let mut out = Replies { status: nfsstat4::NFS4_OK, count: 0, enc: Encoder::with_capacity(512) };
    let finish = |out: Replies, e: &mut Encoder| {
        success_header(call.xid, e);
        out.status.encode(e);
        e.opaque_bytes(&tag);
        e.u32(out.count);
        e.append_segments(out.enc.into_segments());
    };
    if std::str::from_utf8(&tag).is_err() {
        out.status = nfsstat4::NFS4ERR_INVAL;
        finish(out, e);
        return Dispatched::Done { label, ok: false };
    }
    let offered = match minor {
        0 => core.settings().offers(crate::settings::NfsVersion::V40),
        1 => core.settings().offers(crate::settings::NfsVersion::V41),
        2 => core.settings().offers(crate::settings::NfsVersion::V42),
        _ => false,
    };
    if minor > MAX_MINOR || !offered {
        out.status = nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH;
        finish(out, e);
        return Dispatched::Done { label, ok: false };
    }
    let mut cx = Compound::new(core, call, minor);
    cx.op_count = count as usize;
    // Operations decoded already (with the decoder past each), run as they
    // are rather than decoded again.
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
    // The file region a READ ending the compound left to the transport,
    // and whether every operation before it only found the file.
    let mut tail = None;
    let mut only_lookups_before = true;
    let last_op = match minor {
        0 => LAST_V40_OP,
        1 => LAST_V41_OP,
        _ => LAST_V42_OP,
    };
    if minor == 0 && count > core.v4.settings.max_ops {
        out.status = nfsstat4::NFS4ERR_RESOURCE;
        finish(out, e);
        return Dispatched::Done { label, ok: false };
    }
    for i in 0..count as usize {
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
                    return Dispatched::Done { label, ok: true };
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
                res.encode(&mut out.enc);
                status
            }
        };
        out.count += 1;
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
        finish(out, e);
    }
    match tail {
        Some(tail) if ok => Dispatched::DoneWithFile { label, tail },
        _ => Dispatched::Done { label, ok },
    }
}

/// Encoding a result union as one element of `resarray`.
trait EncodeAsOp {
    fn encode_as_op(self, e: &mut Encoder);
}

impl EncodeAsOp for SEQUENCE4res {
    fn encode_as_op(self, e: &mut Encoder) {
        nfs_resop4::OP_SEQUENCE(self).encode(e);
    }
}

/// Checks a name component (RFC 8881 section 14.2): empty names are
/// INVAL, names that are not UTF-8 are INVAL, `.` and `..` and names with
/// `/` or NUL are BADNAME, over-long names NAMETOOLONG.
pub(crate) fn check_name<'b>(core: &Core, name: &'b Bytes) -> Result<&'b [u8], nfsstat4> {
    if name.is_empty() {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    if std::str::from_utf8(name).is_err() {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    if name.len() > core.settings().name_max as usize {
        return Err(nfsstat4::NFS4ERR_NAMETOOLONG);
    }
    if &name[..] == b"." || &name[..] == b".." || name.iter().any(|b| *b == b'/' || *b == 0) {
        return Err(nfsstat4::NFS4ERR_BADNAME);
    }
    Ok(name)
}

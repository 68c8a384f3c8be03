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
pub(crate) mod run;
pub(crate) mod status;
mod table;
mod wrongsec;

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
mod get_dir_delegation;
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
use xdr::{Decoder, Encode, Encoder};

use crate::rpc::{Call, Dispatched};
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
        1 => run::compound(core, call, args, e),
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

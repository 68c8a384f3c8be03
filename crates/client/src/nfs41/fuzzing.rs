//! Replies to this client's compounds as arbitrary bytes, through the same
//! check and the same reading of results as the calls themselves make:
//! for the fuzz target `client_ops` and the property tests. Each call has
//! a well-formed reply to start from ([`sample`]) and [`Mutation`]s that
//! spoil it the ways a broken server or proxy would.

use bytes::Bytes;
use client_core::fattr::Sattr;
use client_core::v41::attrs::bits;
use proto::nfs4::*;
use xdr::{Decode, Decoder, Encoder};

use super::compound::failure;
use super::oneshot;
use super::ops;
use super::reply::{self, Results};
use crate::error::{Error, Result};

/// The calls driven here, numbered from 0.
pub const CALLS: u8 = 11;

const ANONYMOUS: stateid4 = stateid4 { seqid: 0, other: [0; 12] };

fn handle(n: u8) -> Bytes {
    Bytes::from(vec![n; 8])
}

fn owner() -> open_owner4 {
    open_owner4 { clientid: 7, owner: Bytes::from_static(b"nfsx-open-owner") }
}

/// The one-shot write's operations, and where its CLOSE is.
fn oneshot_call() -> (Vec<nfs_argop4>, usize) {
    oneshot::oneshot_ops(owner(), &handle(1), "small", &Sattr::default(), Bytes::from_static(b"data"))
}

/// The operations call `which` sends behind its SEQUENCE.
pub fn operations(which: u8) -> Vec<nfs_argop4> {
    let dir = handle(1);
    match which % CALLS {
        0 => ops::lookup_export_ops("/export/a"),
        1 => ops::lookup_export_ops("/"),
        2 => ops::io_limits_ops(&dir),
        3 => vec![ops::putfh(&dir), ops::getattr_op()],
        4 => ops::lookup_ops(&dir, "name"),
        5 => vec![ops::putfh(&dir), nfs_argop4::OP_READ(READ4args { stateid: ANONYMOUS, offset: 0, count: 4096 })],
        6 => ops::create_other_ops(&dir, "sub", createtype4::NF4DIR, &Sattr::default()),
        7 => ops::readdirplus_ops(&dir, 0, [0; 8], 8192),
        8 => vec![
            ops::putfh(&dir),
            nfs_argop4::OP_OPEN(OPEN4args {
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_BOTH,
                share_deny: OPEN4_SHARE_DENY_NONE,
                owner: owner(),
                openhow: openflag4::OPEN4_CREATE(createhow4::UNCHECKED4(fattr4::default())),
                claim: open_claim4::CLAIM_NULL(Bytes::from_static(b"new")),
            }),
            nfs_argop4::OP_GETFH,
            ops::getattr_op(),
            ops::putfh(&dir),
            ops::getattr_op(),
        ],
        9 => oneshot_call().0,
        _ => ops::fsstat_ops(&dir),
    }
}

/// Reads a successful reply to call `which` as the call does.
fn read(which: u8, res: &Results) -> Result<()> {
    match which % CALLS {
        0 => ops::lookup_export_reply(res, 2).map(drop),
        1 => ops::lookup_export_reply(res, 0).map(drop),
        2 => ops::io_limits_reply(res).map(drop),
        3 => res.attrs(1).map(drop),
        4 => ops::lookup_reply(res).map(drop),
        5 => ops::read_reply(res).map(drop),
        6 => ops::create_other_reply(res).map(drop),
        7 => ops::readdirplus_reply(res).map(drop),
        // As `Nfs41::open_name` and the OPEN result `opened` records.
        8 => {
            res.getfh(2)?;
            res.pick(1, "OPEN", |r| match r {
                nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok)) => Some(ok),
                _ => None,
            })?;
            res.attrs(3)?;
            res.attrs(5).map(drop)
        }
        9 => oneshot::oneshot_reply(res, oneshot_call().1).map(drop),
        _ => ops::fsstat_reply(res).map(drop),
    }
}

/// `reply` as the answer to call `which`: checked as `compound_status`
/// checks it, then read as the call reads it. Never panics.
pub fn drive(which: u8, reply: Bytes) -> Result<()> {
    let ops = operations(which);
    let sent: Vec<nfs_opnum4> =
        std::iter::once(nfs_opnum4::OP_SEQUENCE).chain(ops.iter().map(nfs_argop4::discriminant)).collect();
    let r = COMPOUND4res::decode(&mut Decoder::new(reply))
        .map_err(|e| Error::Decode { proc: "COMPOUND", why: e.to_string() })?;
    reply::check(&sent, r.status, &r.resarray).map_err(|why| reply::bad_reply("COMPOUND", why))?;
    let res = Results::new("COMPOUND", r.status, r.resarray.into_iter().skip(1).collect());
    if res.status() != nfsstat4::NFS4_OK {
        if which % CALLS == 9 {
            let _ = oneshot::left_open(&res, oneshot_call().1);
        }
        return Err(failure(&res));
    }
    read(which, &res)
}

/// Attribute values for every attribute in `request`, as a server sends them.
fn attributes(request: &[u32]) -> fattr4 {
    let mut e = Encoder::new();
    let time = |e: &mut Encoder| {
        e.i64(1_700_000_000);
        e.u32(5);
    };
    for attr in bits(request) {
        match attr {
            FATTR4_TYPE => e.u32(nfs_ftype4::NF4REG as u32),
            FATTR4_FSID => {
                e.u64(1);
                e.u64(2);
            }
            FATTR4_LEASE_TIME => e.u32(90),
            FATTR4_RDATTR_ERROR => e.u32(0),
            FATTR4_FILEHANDLE => e.opaque_var(&handle(2)),
            FATTR4_MODE => e.u32(0o644),
            FATTR4_NUMLINKS => e.u32(1),
            FATTR4_OWNER | FATTR4_OWNER_GROUP => e.opaque_var(b"0"),
            FATTR4_RAWDEV => {
                e.u32(0);
                e.u32(0);
            }
            FATTR4_TIME_ACCESS | FATTR4_TIME_DELTA | FATTR4_TIME_METADATA | FATTR4_TIME_MODIFY => time(&mut e),
            _ => e.u64(4096),
        }
    }
    fattr4 { attrmask: request.to_vec(), attr_vals: e.into_bytes() }
}

fn change() -> change_info4 {
    change_info4 { atomic: true, before: 1, after: 2 }
}

/// A successful result of `op`.
fn success(op: &nfs_argop4) -> nfs_resop4 {
    use nfs_argop4 as A;
    use nfs_resop4 as R;
    let ok = nfsstat4::NFS4_OK;
    match op {
        A::OP_SEQUENCE(s) => R::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(SEQUENCE4resok {
            sr_sessionid: s.sa_sessionid,
            sr_sequenceid: s.sa_sequenceid,
            sr_slotid: s.sa_slotid,
            sr_highest_slotid: 7,
            sr_target_highest_slotid: 7,
            sr_status_flags: 0,
        })),
        A::OP_PUTFH(_) => R::OP_PUTFH(PUTFH4res { status: ok }),
        A::OP_PUTROOTFH => R::OP_PUTROOTFH(PUTROOTFH4res { status: ok }),
        A::OP_LOOKUP(_) => R::OP_LOOKUP(LOOKUP4res { status: ok }),
        A::OP_GETFH => R::OP_GETFH(GETFH4res::NFS4_OK(GETFH4resok { object: handle(3) })),
        A::OP_GETATTR(a) => {
            R::OP_GETATTR(GETATTR4res::NFS4_OK(GETATTR4resok { obj_attributes: attributes(&a.attr_request) }))
        }
        A::OP_READ(_) => R::OP_READ(READ4res::NFS4_OK(READ4resok { eof: true, data: Bytes::from_static(b"hello") })),
        A::OP_WRITE(w) => R::OP_WRITE(WRITE4res::NFS4_OK(WRITE4resok {
            count: w.data.len() as u32,
            committed: stable_how4::FILE_SYNC4,
            writeverf: [9; 8],
        })),
        A::OP_OPEN(_) => R::OP_OPEN(OPEN4res::NFS4_OK(OPEN4resok {
            stateid: stateid4 { seqid: 1, other: [4; 12] },
            cinfo: change(),
            rflags: OPEN4_RESULT_LOCKTYPE_POSIX,
            attrset: vec![],
            delegation: open_delegation4::OPEN_DELEGATE_NONE,
        })),
        A::OP_CLOSE(_) => R::OP_CLOSE(CLOSE4res::NFS4_OK(ANONYMOUS)),
        A::OP_CREATE(_) => R::OP_CREATE(CREATE4res::NFS4_OK(CREATE4resok { cinfo: change(), attrset: vec![] })),
        A::OP_READDIR(a) => {
            let entry = |cookie: u64, name: &'static [u8]| entry4 {
                cookie,
                name: Bytes::from_static(name),
                attrs: attributes(&a.attr_request),
            };
            R::OP_READDIR(READDIR4res::NFS4_OK(READDIR4resok {
                cookieverf: [1; 8],
                reply: dirlist4 { entries: vec![entry(3, b"a"), entry(4, b"b")], eof: true },
            }))
        }
        _ => R::OP_ILLEGAL(ILLEGAL4res { status: nfsstat4::NFS4ERR_OP_ILLEGAL }),
    }
}

/// A failed result of the operation `op` (of those the calls here send).
fn failed(op: nfs_opnum4, s: nfsstat4) -> nfs_resop4 {
    use nfs_opnum4 as N;
    use nfs_resop4 as R;
    match op {
        N::OP_SEQUENCE => R::OP_SEQUENCE(SEQUENCE4res::default(s)),
        N::OP_PUTFH => R::OP_PUTFH(PUTFH4res { status: s }),
        N::OP_PUTROOTFH => R::OP_PUTROOTFH(PUTROOTFH4res { status: s }),
        N::OP_LOOKUP => R::OP_LOOKUP(LOOKUP4res { status: s }),
        N::OP_GETFH => R::OP_GETFH(GETFH4res::default(s)),
        N::OP_GETATTR => R::OP_GETATTR(GETATTR4res::default(s)),
        N::OP_READ => R::OP_READ(READ4res::default(s)),
        N::OP_WRITE => R::OP_WRITE(WRITE4res::default(s)),
        N::OP_OPEN => R::OP_OPEN(OPEN4res::default(s)),
        N::OP_CLOSE => R::OP_CLOSE(CLOSE4res::default(s)),
        N::OP_CREATE => R::OP_CREATE(CREATE4res::default(s)),
        N::OP_READDIR => R::OP_READDIR(READDIR4res::default(s)),
        _ => R::OP_ILLEGAL(ILLEGAL4res { status: s }),
    }
}

/// A well-formed, successful reply to call `which`, SEQUENCE first.
pub fn sample(which: u8) -> COMPOUND4res {
    let seq = nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
        sa_sessionid: [5; 16],
        sa_sequenceid: 1,
        sa_slotid: 0,
        sa_highest_slotid: 0,
        sa_cachethis: false,
    });
    let resarray = std::iter::once(&seq).chain(&operations(which)).map(success).collect();
    COMPOUND4res { status: nfsstat4::NFS4_OK, tag: Bytes::new(), resarray }
}

/// Statuses a mutation may put in, by number.
const STATUSES: [nfsstat4; 8] = [
    nfsstat4::NFS4_OK,
    nfsstat4::NFS4ERR_NOENT,
    nfsstat4::NFS4ERR_IO,
    nfsstat4::NFS4ERR_DELAY,
    nfsstat4::NFS4ERR_BADSESSION,
    nfsstat4::NFS4ERR_NOSPC,
    nfsstat4::NFS4ERR_OP_ILLEGAL,
    nfsstat4::NFS4ERR_SERVERFAULT,
];

fn status(n: u8) -> nfsstat4 {
    STATUSES.get(usize::from(n) % STATUSES.len()).copied().unwrap_or(nfsstat4::NFS4ERR_IO)
}

/// One way a reply goes wrong. Positions wrap around what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Result `i` taken out.
    Drop(u8),
    /// Result `i` twice.
    Duplicate(u8),
    /// Results `i` and `j` swapped.
    Swap(u8, u8),
    /// The compound's status replaced.
    Status(u8),
    /// Result `i` fails with a status, the results after it go, and the
    /// compound's status says so: a well-formed failure.
    FailAt(u8, u8),
    /// Result `i` replaced by the success of another operation.
    Replace(u8, u8),
    /// The encoded reply cut to `n` × 4 bytes from its end.
    Truncate(u8),
    /// Byte `at` × 7 of the encoded reply xor `x`.
    Flip(u8, u8),
}

impl Mutation {
    /// A mutation from three bytes of fuzz input.
    pub fn from_bytes(kind: u8, a: u8, b: u8) -> Mutation {
        match kind % 8 {
            0 => Mutation::Drop(a),
            1 => Mutation::Duplicate(a),
            2 => Mutation::Swap(a, b),
            3 => Mutation::Status(a),
            4 => Mutation::FailAt(a, b),
            5 => Mutation::Replace(a, b),
            6 => Mutation::Truncate(a),
            _ => Mutation::Flip(a, b),
        }
    }
}

fn at(i: u8, len: usize) -> Option<usize> {
    usize::from(i).checked_rem(len)
}

/// The sample reply to call `which`, spoilt by `mutations` in turn,
/// encoded.
pub fn mutated(which: u8, mutations: &[Mutation]) -> Bytes {
    let mut r = sample(which);
    let others: Vec<nfs_argop4> = (0..CALLS).flat_map(operations).collect();
    let mut bytes_edits = Vec::new();
    for &m in mutations {
        let n = r.resarray.len();
        match m {
            Mutation::Drop(i) => {
                if let Some(i) = at(i, n) {
                    r.resarray.remove(i);
                }
            }
            Mutation::Duplicate(i) => {
                if let Some(x) = at(i, n).and_then(|i| r.resarray.get(i)).cloned() {
                    r.resarray.insert(at(i, n).unwrap_or(0), x);
                }
            }
            Mutation::Swap(i, j) => {
                if let (Some(i), Some(j)) = (at(i, n), at(j, n)) {
                    r.resarray.swap(i, j);
                }
            }
            Mutation::Status(s) => r.status = status(s),
            Mutation::FailAt(i, s) => {
                if let Some(i) = at(i, n) {
                    let s = match status(s) {
                        nfsstat4::NFS4_OK => nfsstat4::NFS4ERR_IO,
                        s => s,
                    };
                    r.resarray.truncate(i);
                    let op = sample(which).resarray.get(i).map_or(nfs_opnum4::OP_ILLEGAL, nfs_resop4::discriminant);
                    r.resarray.push(failed(op, s));
                    r.status = s;
                }
            }
            Mutation::Replace(i, j) => {
                if let (Some(i), Some(op)) = (at(i, n), at(j, others.len()).and_then(|j| others.get(j))) {
                    if let Some(x) = r.resarray.get_mut(i) {
                        *x = success(op);
                    }
                }
            }
            Mutation::Truncate(_) | Mutation::Flip(..) => bytes_edits.push(m),
        }
    }
    let mut bytes = xdr::to_bytes(&r).to_vec();
    for m in bytes_edits {
        match m {
            Mutation::Truncate(k) => bytes.truncate(bytes.len().saturating_sub(usize::from(k) * 4)),
            Mutation::Flip(i, x) => {
                if let Some(b) = at(i, bytes.len()).map(|i| i * 7 % bytes.len().max(1)).and_then(|i| bytes.get_mut(i)) {
                    *b ^= x;
                }
            }
            _ => {}
        }
    }
    Bytes::from(bytes)
}

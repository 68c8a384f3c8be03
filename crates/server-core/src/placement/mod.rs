//! Where a record should run: on the connection's own thread, or on a
//! worker that may block.
//!
//! Handing a request to another thread and back costs two context
//! switches, more than a GETATTR answered from cached state costs in all.
//! So the transport asks [`Core::placement`] before running a record:
//! calls that touch no disk (NULL, portmap, NFSv4 SEQUENCE-only compounds
//! and RENEW, callback replies) and calls whose objects the backend says
//! are resident (NFSv3 GETATTR, ACCESS, LOOKUP, FSINFO, FSSTAT, PATHCONF;
//! NFSv4 PUTFH/PUTROOTFH + GETATTR/GETFH/ACCESS/LOOKUP and the state-only
//! operations CLOSE, LOCKU, OPEN_DOWNGRADE, DELEGRETURN, FREE_STATEID,
//! TEST_STATEID, RECLAIM_COMPLETE, RELEASE_LOCKOWNER) run inline;
//! everything else goes to a worker, or, for a client with one request at
//! a time, runs in place on the connection's thread ([`in_place`]).
//!
//! This only peeks at the record: nothing is checked here (a forged
//! handle is refused by the dispatch that follows, wherever it runs), so
//! a malformed record simply goes to a worker, whose dispatch answers it.

use proto::nfs4::nfs_opnum4;

use crate::record::{Head, Record};
use crate::Core;

mod in_place;
mod serial;

/// Where the transport should run a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Cheap and non-blocking: run it on the thread that read it.
    Inline,
    /// May wait on a disk or the network: run it on a worker.
    Worker,
    /// Run it here if it can finish without waiting
    /// ([`Core::try_handle_inline`]), else on a worker: a small READ of a
    /// file whose data may be in the page cache.
    TryInline,
}

/// NFSv3 procedures that touch one object's attributes (or one lookup in
/// a directory) and nothing else.
const V3_GETATTR: u32 = 1;
const V3_READ: u32 = 6;
const V3_LOOKUP: u32 = 3;
const V3_ACCESS: u32 = 4;
const V3_FSSTAT: u32 = 18;
const V3_FSINFO: u32 = 19;
const V3_PATHCONF: u32 = 20;
/// NFSv4 COMPOUND and the most operations an inline one may hold.
const V4_COMPOUND: u32 = 1;
const V4_MAX_INLINE_OPS: u32 = 8;
/// An NFSv4 stateid on the wire: seqid and 12 bytes of `other`.
const STATEID_LEN: usize = 4 + 12;

/// A forward-only reader over the record's bytes.
struct Peek<'a> {
    b: &'a [u8],
}

impl<'a> Peek<'a> {
    fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.b.split_first_chunk::<4>()?;
        self.b = rest;
        Some(u32::from_be_bytes(*head))
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.b = self.b.get(n..)?;
        Some(())
    }

    /// A variable-length opaque, padded to four bytes.
    fn opaque(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        let body = self.b.get(..len)?;
        self.skip(len.checked_add(3)? & !3)?;
        Some(body)
    }
}

/// An NFS call's version and procedure, and a reader at its arguments;
/// `None` for another program, a reply or a malformed record.
fn nfs_call(record: &Record) -> Option<(u32, u32, Peek<'_>)> {
    let c = record.call()?;
    (c.prog == crate::ops::v3::PROGRAM && !sealed(c)).then_some((c.vers, c.proc_, Peek { b: record.args() }))
}

/// An RPCSEC_GSS call: its arguments may be sealed, so they cannot be
/// peeked at, and its context creation reads the keytab. Such calls run
/// on a worker.
fn sealed(c: &crate::record::CallHead) -> bool {
    c.cred_flavor == crate::gss::data::FLAVOR_GSS
}

impl Core {
    /// Where to run `record` (see the module documentation). `busy`: its
    /// connection has other requests running or already received.
    pub fn placement(&self, record: &Record, busy: bool) -> Placement {
        self.peek_placement(record, busy).unwrap_or(Placement::Worker)
    }

    /// Whether a record that may block may run on its connection's own
    /// thread, which then reads nothing more until it finishes: NFSv3, and
    /// the NFSv4 compounds that cannot wait for a callback's reply (see
    /// [`in_place`]). An NFSv4.1 client sends that reply back over this
    /// very connection, which no one would read (pynfs's DELEG24 and
    /// DELEG25, whose clients share one connection, timed out that way
    /// when every compound could run here).
    ///
    /// Never while an export is shared with other servers (a Ceph head):
    /// there any backend call may wait for another head to get a
    /// delegation back from its client, and that client may be waiting for
    /// this head to recall one from the client on this connection, whose
    /// DELEGRETURN this connection would carry. Both heads would then wait
    /// until the delegations were revoked. Such calls cost a round trip to
    /// the cluster, so the hand-off to a worker is not worth saving.
    pub fn may_run_in_place(&self, record: &Record) -> bool {
        if self.shared_locks {
            return false;
        }
        match nfs_call(record) {
            Some((crate::ops::v3::VERSION, _, _)) => true,
            Some((crate::ops::v4::VERSION, V4_COMPOUND, mut p)) => self.compound_never_waits(&mut p),
            _ => false,
        }
    }

    /// Whether a record that may run in place waits for nothing but the
    /// file system, so that it may run on the runtime's own thread without
    /// handing that thread's other connections to another one first: no
    /// task of the runtime has to run for it to finish. NFSv3 never waits
    /// for anything else; an NFSv4 compound (of any minor version) does
    /// when it may wait for a callback's reply, which a connection's task
    /// reads (see [`in_place`]): only the compounds whose walk shows no
    /// such wait qualify. Asked only of records [`Core::may_run_in_place`]
    /// let run in place.
    pub fn waits_for_the_file_system_only(&self, record: &Record) -> bool {
        match nfs_call(record) {
            Some((crate::ops::v3::VERSION, _, _)) => true,
            Some((crate::ops::v4::VERSION, V4_COMPOUND, mut p)) => self.compound_waits_for_no_callback(&mut p),
            _ => false,
        }
    }

    fn peek_placement(&self, record: &Record, busy: bool) -> Option<Placement> {
        if !self.settings.inline_requests {
            return Some(Placement::Worker);
        }
        let (prog, vers, proc_) = match &record.head {
            Head::Call(c) if sealed(c) => return Some(Placement::Worker),
            Head::Call(c) => (c.prog, c.vers, c.proc_),
            // A reply to one of our callbacks: matched against state only.
            Head::Reply { .. } => return Some(Placement::Inline),
            _ => return None,
        };
        let mut p = Peek { b: record.args() };
        if proc_ == 0 || prog == crate::portmap::PROGRAM {
            return Some(Placement::Inline);
        }
        if prog != crate::ops::v3::PROGRAM {
            return Some(Placement::Worker);
        }
        match (vers, proc_) {
            (crate::ops::v3::VERSION, V3_GETATTR | V3_LOOKUP | V3_ACCESS | V3_FSSTAT | V3_FSINFO | V3_PATHCONF) => {
                // Every one of these starts with the object's handle.
                Some(self.resident_fh(p.opaque()?))
            }
            (crate::ops::v3::VERSION, V3_READ) => {
                let fh = p.opaque()?;
                p.skip(8)?; // offset
                let count = p.u32()?;
                Some(self.cached_read(self.resident_fh(fh), count, busy))
            }
            (crate::ops::v4::VERSION, V4_COMPOUND) => self.peek_compound(&mut p, busy),
            _ => Some(Placement::Worker),
        }
    }

    /// Where a READ of `count` bytes of an object the backend found
    /// `resident` (or not) runs: a large one alone on its connection goes
    /// out by sendfile from a worker (or in place); beside others, copying
    /// it from the page cache right here is cheaper than the hand-off (see
    /// `read_sendfile_min`), and so is any small one.
    fn cached_read(&self, resident: Placement, count: u32, busy: bool) -> Placement {
        let min = self.settings.read_sendfile_min;
        let small = min == 0 || count < min || (busy && self.settings.read_sendfile_alone_only);
        match resident {
            Placement::Inline if small && self.settings.inline_cached_reads => Placement::TryInline,
            _ => Placement::Worker,
        }
    }

    /// A compound of operations that read state and attributes only, or
    /// `[SEQUENCE,] PUTFH, READ` of a resident file (tried here: the
    /// compound reads the data from the page cache before anything else,
    /// see `ops::v4::read::read_ahead`).
    fn peek_compound(&self, p: &mut Peek, busy: bool) -> Option<Placement> {
        p.opaque()?; // tag
        let minor = p.u32()?;
        let n = p.u32()?;
        if n > V4_MAX_INLINE_OPS {
            return Some(Placement::Worker);
        }
        if let Some(read) = self.peek_compound_read(&mut Peek { b: p.b }, minor, n, busy) {
            return Some(read);
        }
        // The object the last PUTFH named; `None` after a LOOKUP or a
        // RESTOREFH changed it to one not known here.
        let mut current = None;
        for _ in 0..n {
            let op = p.u32()?;
            match op {
                x if x == nfs_opnum4::OP_SEQUENCE as u32 => p.skip(16 + 4 * 4)?,
                x if x == nfs_opnum4::OP_RENEW as u32 => p.skip(8)?,
                x if x == nfs_opnum4::OP_PUTFH as u32 => {
                    let fh = p.opaque()?;
                    if self.resident_fh(fh) == Placement::Worker {
                        return Some(Placement::Worker);
                    }
                    current = crate::fh::peek(fh);
                }
                x if x == nfs_opnum4::OP_GETATTR as u32 => {
                    // A GETATTR of a file some client holds a write
                    // delegation on may wait for that client's CB_GETATTR
                    // answer: not on this thread, which may be the one to
                    // read that answer.
                    let may_wait = match current {
                        Some((export, file)) => self.v4.write_delegated(export, file),
                        None => self.v4.any_write_delegated(),
                    };
                    if may_wait {
                        return Some(Placement::Worker);
                    }
                    p.bitmap()?;
                }
                x if x == nfs_opnum4::OP_ACCESS as u32 => p.skip(4)?,
                // As NFSv3 LOOKUP: one name in a directory whose handle
                // the PUTFH before it found resident.
                x if x == nfs_opnum4::OP_LOOKUP as u32 => {
                    p.opaque()?;
                    current = None;
                }
                // State-only operations: tables in memory, the object at
                // most stat'ed through its cached handle.
                x if p.state_op(x)? => {}
                x if x == nfs_opnum4::OP_GETFH as u32 || x == nfs_opnum4::OP_SAVEFH as u32 => {}
                x if x == nfs_opnum4::OP_PUTROOTFH as u32 || x == nfs_opnum4::OP_RESTOREFH as u32 => current = None,
                _ => return Some(Placement::Worker),
            }
        }
        Some(Placement::Inline)
    }

    /// The placement of a compound of exactly `[SEQUENCE,] PUTFH, READ`
    /// (SEQUENCE from minor version 1 on, READ_PLUS for READ from 2), the
    /// shape NFSv4 clients read in; `None` for any other compound.
    fn peek_compound_read(&self, p: &mut Peek, minor: u32, n: u32, busy: bool) -> Option<Placement> {
        let sequence = minor >= 1;
        if n != 2 + u32::from(sequence) {
            return None;
        }
        if sequence {
            (p.u32()? == nfs_opnum4::OP_SEQUENCE as u32).then_some(())?;
            p.skip(16 + 4 * 4)?;
        }
        (p.u32()? == nfs_opnum4::OP_PUTFH as u32).then_some(())?;
        let fh = p.opaque()?;
        // READ_PLUS4args are laid out as READ4args.
        let op = p.u32()?;
        (op == nfs_opnum4::OP_READ as u32 || (op == nfs_opnum4::OP_READ_PLUS as u32 && minor >= 2)).then_some(())?;
        p.skip(STATEID_LEN + 8)?; // stateid, offset
        let count = p.u32()?;
        Some(self.cached_read(self.resident_fh(fh), count, busy))
    }

    /// Inline when the handle's object is resident in its backend (the
    /// NFSv4 pseudo root always is). The handle's tag is not checked here.
    fn resident_fh(&self, fh: &[u8]) -> Placement {
        let Some((export_id, fileid)) = crate::fh::peek(fh) else {
            return Placement::Worker;
        };
        if export_id == crate::ops::v4::compound::PSEUDO_EXPORT_ID {
            return Placement::Inline;
        }
        match self.export_by_id(export_id) {
            Some(x) if x.fs.fast_paths().is_some_and(|f| f.resident(fileid)) => Placement::Inline,
            _ => Placement::Worker,
        }
    }
}

/// The questions the transport asks, of raw bytes, for tests.
#[cfg(test)]
impl Core {
    pub(crate) fn placement_of(&self, b: &[u8], busy: bool) -> Placement {
        self.placement(&self.parse(bytes::Bytes::copy_from_slice(b)), busy)
    }
    pub(crate) fn in_place_of(&self, b: &[u8]) -> bool {
        self.may_run_in_place(&self.parse(bytes::Bytes::copy_from_slice(b)))
    }
    pub(crate) fn fs_only_of(&self, b: &[u8]) -> bool {
        self.waits_for_the_file_system_only(&self.parse(bytes::Bytes::copy_from_slice(b)))
    }
    pub(crate) fn serial_key_of(&self, b: &[u8]) -> Option<u64> {
        self.serial_key(&self.parse(bytes::Bytes::copy_from_slice(b)))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::fh::HandleData;
    use crate::{Export, ServicePorts};
    use std::sync::Arc;

    /// A core with one export (id 1) on a memory backend.
    pub(crate) fn core() -> Core {
        let fs = Arc::new(vfs::MemFs::new());
        let export = Export { id: 1, path: "/m".into(), fs, rules: vec![] };
        Core::new(Default::default(), vec![export], [3; 32], [0; 8], ServicePorts { tcp: 2049, udp: None })
    }

    /// An RPC call record of `prog`/`vers`/`proc_` with AUTH_SYS and `args`.
    pub(crate) fn call(prog: u32, vers: u32, proc_: u32, args: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        for w in [7u32, 0, 2, prog, vers, proc_, 1, 8, 0, 0, 0, 0] {
            r.extend_from_slice(&w.to_be_bytes());
        }
        r.extend_from_slice(args);
        r
    }

    fn fh_arg(c: &Core, export_id: u32) -> Vec<u8> {
        let fh = c.fh.encode(&HandleData { export_id, fileid: 1, generation: 0 });
        let mut a = (fh.len() as u32).to_be_bytes().to_vec();
        a.extend_from_slice(&fh);
        a
    }

    #[test]
    fn cheap_calls_run_inline_and_the_rest_on_workers() {
        let c = core();
        let fh = fh_arg(&c, 1);
        assert_eq!(c.placement_of(&call(100003, 3, 0, &[]), false), Placement::Inline, "NULL");
        assert_eq!(c.placement_of(&call(100000, 2, 3, &[0; 16]), false), Placement::Inline, "portmap");
        assert_eq!(c.placement_of(&call(100003, 3, 1, &fh), false), Placement::Inline, "GETATTR of a resident object");
        let mut read = fh.clone();
        read.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0]);
        assert_eq!(c.placement_of(&call(100003, 3, 6, &read), false), Placement::TryInline, "small READ");
        let mut big = fh.clone();
        big.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0]);
        assert_eq!(c.placement_of(&call(100003, 3, 6, &big), false), Placement::Worker, "1 MiB READ, alone");
        assert_eq!(c.placement_of(&call(100003, 3, 6, &big), true), Placement::TryInline, "1 MiB READ beside others");
        assert_eq!(c.placement_of(&call(100003, 3, 6, &fh), false), Placement::Worker, "READ without its count");
        assert_eq!(c.placement_of(&call(100003, 3, 1, &fh_arg(&c, 9)), false), Placement::Worker, "unknown export");
        assert_eq!(c.placement_of(&call(100005, 3, 1, &[]), false), Placement::Worker, "MNT");
        assert_eq!(c.placement_of(&[0, 0, 0, 1], false), Placement::Worker, "truncated");
        assert_eq!(c.placement_of(&call(100003, 3, 1, &[0, 0, 1, 0]), false), Placement::Worker, "short handle");
    }

    #[test]
    fn other_programs_do_not_run_in_place() {
        let c = core();
        assert!(c.in_place_of(&call(100003, 3, 8, &[])), "NFSv3 CREATE");
        assert!(!c.in_place_of(&call(100003, 4, 1, &[])), "an NFSv4 COMPOUND cut short");
        assert!(!c.in_place_of(&call(100021, 4, 2, &[])), "NLM LOCK");
        assert!(!c.in_place_of(&[0, 0, 0, 7, 0, 0, 0, 1]), "a reply to a callback");
        assert!(!c.in_place_of(&[0, 0, 0, 1]), "truncated");
    }

    #[test]
    fn compounds_of_state_and_attribute_reads_run_inline() {
        let c = core();
        let op = |n: nfs_opnum4| (n as u32).to_be_bytes().to_vec();
        let compound_minor = |minor: u8, ops: &[Vec<u8>]| {
            let mut a = vec![0, 0, 0, 0, 0, 0, 0, minor];
            a.extend_from_slice(&(ops.len() as u32).to_be_bytes());
            for o in ops {
                a.extend_from_slice(o);
            }
            call(100003, 4, 1, &a)
        };
        let compound = |ops: &[Vec<u8>]| compound_minor(1, ops);
        let mut seq = op(nfs_opnum4::OP_SEQUENCE);
        seq.extend_from_slice(&[0; 32]);
        let mut putfh = op(nfs_opnum4::OP_PUTFH);
        putfh.extend_from_slice(&fh_arg(&c, 1));
        let mut getattr = op(nfs_opnum4::OP_GETATTR);
        getattr.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2]);
        let mut read = op(nfs_opnum4::OP_READ);
        read.extend_from_slice(&[0; 32]);
        assert_eq!(c.placement_of(&compound(&[seq.clone()]), false), Placement::Inline);
        assert_eq!(c.placement_of(&compound(&[seq.clone(), putfh.clone(), getattr.clone()]), false), Placement::Inline);
        assert_eq!(
            c.placement_of(&compound(&[seq.clone(), putfh.clone(), read.clone()]), false),
            Placement::TryInline,
            "READ of a resident file"
        );
        assert_eq!(
            c.placement_of(&compound(&[putfh.clone(), read.clone()]), false),
            Placement::Worker,
            "4.1 without SEQUENCE"
        );
        assert_eq!(
            c.placement_of(&compound_minor(0, &[putfh.clone(), read.clone()]), false),
            Placement::TryInline,
            "4.0"
        );
        let mut read_plus = op(nfs_opnum4::OP_READ_PLUS);
        read_plus.extend_from_slice(&[0; 28]);
        let plus = [seq.clone(), putfh.clone(), read_plus];
        assert_eq!(c.placement_of(&compound(&plus), false), Placement::Worker, "READ_PLUS in 4.1");
        assert_eq!(c.placement_of(&compound_minor(2, &plus), false), Placement::TryInline, "READ_PLUS in 4.2");
        let mut close = op(nfs_opnum4::OP_CLOSE);
        close.extend_from_slice(&[0; 20]);
        let mut test = op(nfs_opnum4::OP_TEST_STATEID);
        test.extend_from_slice(&[0, 0, 0, 2]);
        test.extend_from_slice(&[0; 32]);
        assert_eq!(
            c.placement_of(&compound(&[seq.clone(), putfh.clone(), close.clone()]), false),
            Placement::Inline,
            "CLOSE"
        );
        assert_eq!(c.placement_of(&compound(&[seq.clone(), test.clone()]), false), Placement::Inline, "TEST_STATEID");
        // A TEST_STATEID claiming more stateids than the record holds.
        let mut lying = op(nfs_opnum4::OP_TEST_STATEID);
        lying.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            c.placement_of(&compound(&[seq.clone(), lying]), false),
            Placement::Worker,
            "truncated TEST_STATEID"
        );
        assert_eq!(c.placement_of(&compound(&[seq.clone(), putfh.clone(), close, read]), false), Placement::Worker);
        assert_eq!(c.placement_of(&compound(&vec![seq; 9]), false), Placement::Worker, "too long");
    }
}

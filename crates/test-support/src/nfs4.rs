//! An NFSv4 test client: operation builders, result extractors and a
//! 4.1/4.2 session (EXCHANGE_ID, CREATE_SESSION, then SEQUENCE in front
//! of every compound, RFC 8881 sections 18.35, 18.36 and 18.46), over any
//! [`Transport`].

use bytes::Bytes;
use proto::nfs4::*;

/// Carries one COMPOUND to a server and brings back its decoded result.
///
/// The credential is the transport's: the RPC header names the caller,
/// so a transport speaks as one principal (a test needing another one
/// wraps the same server in a second transport).
pub trait Transport {
    fn compound(&self, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res;
}

/// The callback program the harnesses name in CREATE_SESSION unless they
/// answer callbacks under a program of their own.
pub const CB_PROGRAM_DEFAULT: u32 = 0x4000_0000;

/// The anonymous stateid (RFC 8881 section 8.2.3): I/O outside any open.
pub const ANON_STATEID: stateid4 = stateid4 { seqid: 0, other: [0; 12] };
/// The current stateid (RFC 8881 section 16.2.3.1.2): the one the
/// previous operation of the compound left.
pub const CURRENT_STATEID: stateid4 = stateid4 { seqid: 1, other: [0; 12] };

pub fn ok(r: &COMPOUND4res) {
    assert_eq!(r.status, nfsstat4::NFS4_OK, "compound failed: {:?}", r.resarray.last());
}

/// A component name or other opaque string argument.
pub fn name(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// An attribute bitmap with `bits` set, three words wide (enough for
/// every attribute up to 4.2).
pub fn mask(bits: &[u32]) -> Vec<u32> {
    let mut m = vec![0u32; 3];
    for b in bits {
        m[(*b / 32) as usize] |= 1 << (b % 32);
    }
    m
}

pub fn channel(slots: u32) -> channel_attrs4 {
    channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20,
        ca_maxresponsesize: 1 << 20,
        ca_maxresponsesize_cached: 64 << 10,
        ca_maxoperations: 32,
        ca_maxrequests: slots,
        ca_rdma_ird: vec![],
    }
}

// ---- operation builders ----

pub fn putfh(fh: &nfs_fh4) -> nfs_argop4 {
    nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() })
}

/// PUTROOTFH and a LOOKUP per component of `path`.
pub fn walk(path: &std::path::Path) -> Vec<nfs_argop4> {
    let mut ops = vec![nfs_argop4::OP_PUTROOTFH];
    for c in path.components().skip(1) {
        ops.push(nfs_argop4::OP_LOOKUP(LOOKUP4args {
            objname: Bytes::copy_from_slice(c.as_os_str().as_encoded_bytes()),
        }));
    }
    ops
}

/// A FILE_SYNC4 WRITE, so that no COMMIT is needed for the data to count.
pub fn write_op(sid: &stateid4, offset: u64, data: &[u8]) -> nfs_argop4 {
    nfs_argop4::OP_WRITE(WRITE4args {
        stateid: sid.clone(),
        offset,
        stable: stable_how4::FILE_SYNC4,
        data: Bytes::copy_from_slice(data),
    })
}

pub fn read_op(sid: &stateid4, offset: u64, count: u32) -> nfs_argop4 {
    nfs_argop4::OP_READ(READ4args { stateid: sid.clone(), offset, count })
}

/// OPEN4args for `file` in the current directory by open-owner `owner` of
/// `client` (0 in a session, where the session names the client),
/// creating it with UNCHECKED4 and no attributes when `create`.
pub fn open_args(
    seqid: u32,
    client: clientid4,
    owner: &str,
    file: &str,
    access: u32,
    deny: u32,
    create: bool,
) -> OPEN4args {
    OPEN4args {
        seqid,
        share_access: access,
        share_deny: deny,
        owner: open_owner4 { clientid: client, owner: name(owner) },
        openhow: if create {
            openflag4::OPEN4_CREATE(createhow4::UNCHECKED4(fattr4::default()))
        } else {
            openflag4::default(opentype4::OPEN4_NOCREATE)
        },
        claim: open_claim4::CLAIM_NULL(name(file)),
    }
}

pub fn close_op(sid: &stateid4) -> nfs_argop4 {
    nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: sid.clone() })
}

/// A LOCK by the new lock-owner `owner`, from the open `open`.
pub fn lock_new(
    open_seqid: u32,
    open: &stateid4,
    client: clientid4,
    owner: &str,
    kind: nfs_lock_type4,
    offset: u64,
    length: u64,
) -> nfs_argop4 {
    nfs_argop4::OP_LOCK(LOCK4args {
        locktype: kind,
        reclaim: false,
        offset,
        length,
        locker: locker4::TRUE(open_to_lock_owner4 {
            open_seqid,
            open_stateid: open.clone(),
            lock_seqid: 0,
            lock_owner: lock_owner4 { clientid: client, owner: name(owner) },
        }),
    })
}

/// A LOCK by the lock-owner of lock stateid `lock`.
pub fn lock_existing(lock_seqid: u32, lock: &stateid4, kind: nfs_lock_type4, offset: u64, length: u64) -> nfs_argop4 {
    nfs_argop4::OP_LOCK(LOCK4args {
        locktype: kind,
        reclaim: false,
        offset,
        length,
        locker: locker4::FALSE(exist_lock_owner4 { lock_stateid: lock.clone(), lock_seqid }),
    })
}

// ---- result extractors ----

/// The OPEN result at `i`.
pub fn opened(r: &COMPOUND4res, i: usize) -> &OPEN4resok {
    match &r.resarray[i] {
        nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok)) => ok,
        other => panic!("OPEN failed: {other:?}"),
    }
}

/// The handle GETFH returned at `i`.
pub fn fh_res(r: &COMPOUND4res, i: usize) -> nfs_fh4 {
    match &r.resarray[i] {
        nfs_resop4::OP_GETFH(GETFH4res::NFS4_OK(ok)) => ok.object.clone(),
        other => panic!("GETFH failed: {other:?}"),
    }
}

/// The SEQUENCE result at the head of a compound reply.
pub fn seq_res(r: &COMPOUND4res) -> &SEQUENCE4resok {
    match r.resarray.first() {
        Some(nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(ok))) => ok,
        other => panic!("no SEQUENCE result: {other:?} (status {:?})", r.status),
    }
}

/// `r` without the SEQUENCE result at its head, so that indexes match
/// the operations sent after it; a SEQUENCE that failed is left to the
/// caller to see in `r.status`.
pub fn without_sequence(mut r: COMPOUND4res) -> COMPOUND4res {
    if !r.resarray.is_empty() {
        r.resarray.remove(0);
    }
    r
}

// ---- client id and session ----

pub fn exchange_id_args(owner: &str, verifier: [u8; 8], flags: u32) -> EXCHANGE_ID4args {
    EXCHANGE_ID4args {
        eia_clientowner: client_owner4 { co_verifier: verifier, co_ownerid: name(owner) },
        eia_flags: flags,
        eia_state_protect: state_protect4_a::SP4_NONE,
        eia_client_impl_id: vec![],
    }
}

pub fn create_session_args(clientid: clientid4, sequence: u32, flags: u32, slots: u32) -> CREATE_SESSION4args {
    CREATE_SESSION4args {
        csa_clientid: clientid,
        csa_sequence: sequence,
        csa_flags: flags,
        csa_fore_chan_attrs: channel(slots),
        csa_back_chan_attrs: channel(4),
        csa_cb_program: CB_PROGRAM_DEFAULT,
        csa_sec_parms: vec![callback_sec_parms4::AUTH_NONE],
    }
}

pub fn exchange_id<T: Transport + ?Sized>(t: &T, minor: u32, args: EXCHANGE_ID4args) -> EXCHANGE_ID4res {
    let r = t.compound(minor, vec![nfs_argop4::OP_EXCHANGE_ID(args)]);
    let Some(nfs_resop4::OP_EXCHANGE_ID(res)) = r.resarray.into_iter().next() else { panic!("no EXCHANGE_ID result") };
    res
}

pub fn create_session<T: Transport + ?Sized>(t: &T, minor: u32, args: CREATE_SESSION4args) -> CREATE_SESSION4res {
    let r = t.compound(minor, vec![nfs_argop4::OP_CREATE_SESSION(args)]);
    let Some(nfs_resop4::OP_CREATE_SESSION(res)) = r.resarray.into_iter().next() else {
        panic!("no CREATE_SESSION result")
    };
    res
}

/// A client with one session. The session holds no transport: the
/// in-process harness lends its environment to each call, and a TCP
/// client keeps its connection beside the session.
#[derive(Debug)]
pub struct Session {
    pub clientid: clientid4,
    pub sessionid: sessionid4,
    /// Sequence id last used on each slot the client uses.
    pub seq: Vec<u32>,
    /// The minor version of every compound (1 unless made with
    /// [`Session::new_minor`] or [`Session::ready_minor`]).
    pub minor: u32,
}

impl Session {
    /// EXCHANGE_ID with `eid`, then CREATE_SESSION with what `cs` makes
    /// of the client id and sequence id granted; every fore-channel slot
    /// the server granted is the client's.
    pub fn establish<T: Transport + ?Sized>(
        t: &T,
        minor: u32,
        eid: EXCHANGE_ID4args,
        cs: impl FnOnce(clientid4, sequenceid4) -> CREATE_SESSION4args,
    ) -> Session {
        let eid = match exchange_id(t, minor, eid) {
            EXCHANGE_ID4res::NFS4_OK(eid) => eid,
            other => panic!("EXCHANGE_ID failed: {other:?}"),
        };
        let cs = match create_session(t, minor, cs(eid.eir_clientid, eid.eir_sequenceid)) {
            CREATE_SESSION4res::NFS4_OK(cs) => cs,
            other => panic!("CREATE_SESSION failed: {other:?}"),
        };
        let slots = cs.csr_fore_chan_attrs.ca_maxrequests as usize;
        Session { clientid: eid.eir_clientid, sessionid: cs.csr_sessionid, seq: vec![0; slots], minor }
    }

    /// EXCHANGE_ID + CREATE_SESSION for owner `name`.
    pub fn new<T: Transport + ?Sized>(t: &T, name: &str) -> Session {
        Session::new_minor(t, name, 1)
    }

    /// [`Session::new`] at minor version `minor` (1 or 2).
    pub fn new_minor<T: Transport + ?Sized>(t: &T, name: &str, minor: u32) -> Session {
        let eid = exchange_id_args(name, [1; 8], EXCHGID4_FLAG_USE_NON_PNFS);
        Session::establish(t, minor, eid, |id, seq| create_session_args(id, seq, 0, 16))
    }

    /// EXCHANGE_ID + CREATE_SESSION with `flags` and `slots` fore-channel
    /// slots asked for.
    pub fn with<T: Transport + ?Sized>(t: &T, name: &str, flags: u32, slots: u32) -> Session {
        let eid = exchange_id_args(name, [1; 8], EXCHGID4_FLAG_USE_NON_PNFS);
        Session::establish(t, 1, eid, |id, seq| create_session_args(id, seq, flags, slots))
    }

    /// [`Session::new`] followed by RECLAIM_COMPLETE, as a client with
    /// nothing to reclaim starts (new opens are GRACE until then).
    pub fn ready<T: Transport + ?Sized>(t: &T, name: &str) -> Session {
        Session::ready_minor(t, name, 1)
    }

    pub fn ready_minor<T: Transport + ?Sized>(t: &T, name: &str, minor: u32) -> Session {
        let mut s = Session::new_minor(t, name, minor);
        s.reclaim_complete(t);
        s
    }

    pub fn slots(&self) -> usize {
        self.seq.len()
    }

    pub fn reclaim_complete<T: Transport + ?Sized>(&mut self, t: &T) {
        ok(&self.run(t, vec![nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args { rca_one_fs: false })]));
    }

    /// The SEQUENCE op for the next request on `slot`.
    pub fn sequence(&mut self, slot: u32) -> nfs_argop4 {
        self.sequence_hi(slot, slot)
    }

    /// The SEQUENCE op for the next request on `slot`, declaring
    /// `highest` as the client's highest slot in use.
    pub fn sequence_hi(&mut self, slot: u32, highest: u32) -> nfs_argop4 {
        self.seq[slot as usize] += 1;
        nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
            sa_sessionid: self.sessionid,
            sa_sequenceid: self.seq[slot as usize],
            sa_slotid: slot,
            sa_highest_slotid: highest,
            sa_cachethis: true,
        })
    }

    /// `ops` behind the next SEQUENCE on `slot`.
    pub fn sequenced(&mut self, slot: u32, highest: u32, ops: Vec<nfs_argop4>) -> Vec<nfs_argop4> {
        let mut all = vec![self.sequence_hi(slot, highest)];
        all.extend(ops);
        all
    }

    /// `ops` behind a SEQUENCE on slot 0; the SEQUENCE result is dropped
    /// from the returned array so indexes match `ops`.
    pub fn run<T: Transport + ?Sized>(&mut self, t: &T, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        without_sequence(self.run_on(t, 0, 0, ops))
    }

    /// `ops` behind a SEQUENCE on `slot`; the whole result, SEQUENCE
    /// included.
    pub fn run_on<T: Transport + ?Sized>(
        &mut self,
        t: &T,
        slot: u32,
        highest: u32,
        ops: Vec<nfs_argop4>,
    ) -> COMPOUND4res {
        let all = self.sequenced(slot, highest, ops);
        t.compound(self.minor, all)
    }
}

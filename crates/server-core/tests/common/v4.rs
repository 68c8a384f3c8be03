//! NFSv4 helpers for the whole-request harness: COMPOUNDs built from the
//! generated types, and a 4.1 session (EXCHANGE_ID, CREATE_SESSION, then
//! SEQUENCE in front of every compound).

use bytes::Bytes;
use proto::nfs4::*;

use super::{user, Cred, Env};

pub const NFS4: u32 = 100003;

pub fn ok(r: &COMPOUND4res) {
    assert_eq!(r.status, nfsstat4::NFS4_OK, "compound failed: {:?}", r.resarray.last());
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

impl Env {
    /// One COMPOUND as `cred`, decoded.
    pub fn compound_as(&self, cred: &Cred, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let args = COMPOUND4args { tag: Bytes::from_static(b"t"), minorversion: minor, argarray: ops };
        let bytes = xdr::to_bytes(&args);
        self.call_as(NFS4, 4, 1, cred, &bytes).result()
    }

    pub fn compound(&self, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        self.compound_as(&user(), minor, ops)
    }
}

/// A 4.1 client with one session; `seq` tracks each slot's sequence id.
pub struct Session {
    pub clientid: clientid4,
    pub sessionid: sessionid4,
    pub seq: Vec<u32>,
    /// The minor version of every compound (1 unless made with
    /// [`Session::ready_minor`]).
    pub minor: u32,
}

impl Session {
    /// EXCHANGE_ID + CREATE_SESSION for owner `name`.
    pub fn new(env: &Env, name: &str) -> Session {
        Session::new_minor(env, name, 1)
    }

    /// [`Session::new`] at minor version `minor` (1 or 2).
    pub fn new_minor(env: &Env, name: &str, minor: u32) -> Session {
        let eid = EXCHANGE_ID4args {
            eia_clientowner: client_owner4 { co_verifier: [1; 8], co_ownerid: Bytes::copy_from_slice(name.as_bytes()) },
            eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
            eia_state_protect: state_protect4_a::SP4_NONE,
            eia_client_impl_id: vec![],
        };
        let r = env.compound(minor, vec![nfs_argop4::OP_EXCHANGE_ID(eid)]);
        ok(&r);
        let nfs_resop4::OP_EXCHANGE_ID(EXCHANGE_ID4res::NFS4_OK(eid)) = &r.resarray[0] else { panic!("{r:?}") };
        let cs = CREATE_SESSION4args {
            csa_clientid: eid.eir_clientid,
            csa_sequence: eid.eir_sequenceid,
            csa_flags: 0,
            csa_fore_chan_attrs: channel(16),
            csa_back_chan_attrs: channel(4),
            csa_cb_program: 0x40000000,
            csa_sec_parms: vec![callback_sec_parms4::AUTH_NONE],
        };
        let r = env.compound(minor, vec![nfs_argop4::OP_CREATE_SESSION(cs)]);
        ok(&r);
        let nfs_resop4::OP_CREATE_SESSION(CREATE_SESSION4res::NFS4_OK(cs)) = &r.resarray[0] else { panic!("{r:?}") };
        let slots = cs.csr_fore_chan_attrs.ca_maxrequests as usize;
        Session { clientid: eid.eir_clientid, sessionid: cs.csr_sessionid, seq: vec![0; slots], minor }
    }

    /// [`Session::new`] followed by RECLAIM_COMPLETE, as a client with
    /// nothing to reclaim starts (new opens are GRACE until then).
    pub fn ready(env: &Env, name: &str) -> Session {
        Session::ready_minor(env, name, 1)
    }

    pub fn ready_minor(env: &Env, name: &str, minor: u32) -> Session {
        let mut s = Session::new_minor(env, name, minor);
        s.reclaim_complete(env);
        s
    }

    pub fn reclaim_complete(&mut self, env: &Env) {
        ok(&self.run(env, vec![nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args { rca_one_fs: false })]));
    }

    /// The SEQUENCE op for the next request on `slot`.
    pub fn sequence(&mut self, slot: u32) -> nfs_argop4 {
        self.seq[slot as usize] += 1;
        nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
            sa_sessionid: self.sessionid,
            sa_sequenceid: self.seq[slot as usize],
            sa_slotid: slot,
            sa_highest_slotid: slot,
            sa_cachethis: true,
        })
    }

    /// `ops` behind a SEQUENCE on slot 0; the SEQUENCE result is dropped
    /// from the returned array so indexes match `ops`.
    pub fn run(&mut self, env: &Env, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let mut all = vec![self.sequence(0)];
        all.extend(ops);
        let mut r = env.compound(self.minor, all);
        if !r.resarray.is_empty() {
            r.resarray.remove(0);
        }
        r
    }
}

// ---- NFSv4 state environment: virtual clock, recorded back channel ----

use std::sync::{Arc, Mutex};

use server_core::state::Nfs4Settings;
use server_core::{Backchannel, CoreSettings, ManualClock, MemStore};

/// A back channel that keeps every record sent, with its connection.
#[derive(Default)]
pub struct RecordingBackchannel {
    pub sent: Mutex<Vec<(u64, Bytes)>>,
}

impl Backchannel for RecordingBackchannel {
    fn send(&self, conn: u64, record: Vec<Bytes>) -> bool {
        self.sent.lock().unwrap().push((conn, super::join(&record)));
        true
    }
}

/// An Env whose NFSv4 state runs on a manual clock, sends callbacks into a
/// recorder and persists client records in `store`.
pub fn env_with_nfs4(nfs4: Nfs4Settings, store: Arc<MemStore>) -> (Env, Arc<ManualClock>, Arc<RecordingBackchannel>) {
    let settings = CoreSettings { nfs4, ..CoreSettings::default() };
    let mut env = super::env_with("/export *(rw,insecure)\n", settings);
    let clock = Arc::new(ManualClock::default());
    let cb = Arc::new(RecordingBackchannel::default());
    env.core = env.core.with_nfs4_env(clock.clone(), cb.clone(), store).with_jobs(Arc::new(TestThreads));
    (env, clock, cb)
}

/// Background jobs (an asynchronous COPY) on threads of their own, as the
/// server runs them.
pub struct TestThreads;

impl server_core::Jobs for TestThreads {
    fn start(&self, _name: &'static str, job: Box<dyn FnOnce() + Send>) -> bool {
        std::thread::spawn(job);
        true
    }
}

pub fn exchange_id_as(env: &Env, cred: &Cred, name: &str, verifier: [u8; 8], flags: u32) -> EXCHANGE_ID4res {
    let eid = EXCHANGE_ID4args {
        eia_clientowner: client_owner4 { co_verifier: verifier, co_ownerid: Bytes::copy_from_slice(name.as_bytes()) },
        eia_flags: flags,
        eia_state_protect: state_protect4_a::SP4_NONE,
        eia_client_impl_id: vec![],
    };
    let r = env.compound_as(cred, 1, vec![nfs_argop4::OP_EXCHANGE_ID(eid)]);
    let nfs_resop4::OP_EXCHANGE_ID(res) = r.resarray.into_iter().next().expect("a result") else { panic!() };
    res
}

pub fn create_session_args(clientid: clientid4, sequence: u32, flags: u32, slots: u32) -> CREATE_SESSION4args {
    CREATE_SESSION4args {
        csa_clientid: clientid,
        csa_sequence: sequence,
        csa_flags: flags,
        csa_fore_chan_attrs: channel(slots),
        csa_back_chan_attrs: channel(4),
        csa_cb_program: 0x40000000,
        csa_sec_parms: vec![callback_sec_parms4::AUTH_NONE],
    }
}

pub fn create_session(env: &Env, args: CREATE_SESSION4args) -> CREATE_SESSION4res {
    let r = env.compound(1, vec![nfs_argop4::OP_CREATE_SESSION(args)]);
    let nfs_resop4::OP_CREATE_SESSION(res) = r.resarray.into_iter().next().expect("a result") else { panic!() };
    res
}

impl Session {
    /// EXCHANGE_ID + CREATE_SESSION with `flags` and `slots` fore-channel
    /// slots asked for.
    pub fn with(env: &Env, name: &str, flags: u32, slots: u32) -> Session {
        let EXCHANGE_ID4res::NFS4_OK(eid) = exchange_id_as(env, &user(), name, [1; 8], EXCHGID4_FLAG_USE_NON_PNFS)
        else {
            panic!("EXCHANGE_ID failed")
        };
        let res = create_session(env, create_session_args(eid.eir_clientid, eid.eir_sequenceid, flags, slots));
        let CREATE_SESSION4res::NFS4_OK(cs) = res else { panic!("CREATE_SESSION failed: {res:?}") };
        let n = cs.csr_fore_chan_attrs.ca_maxrequests as usize;
        Session { clientid: eid.eir_clientid, sessionid: cs.csr_sessionid, seq: vec![0; n], minor: 1 }
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

    /// `ops` behind a SEQUENCE on `slot`; the whole result, SEQUENCE
    /// included.
    pub fn run_on(&mut self, env: &Env, slot: u32, highest: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let mut all = vec![self.sequence_hi(slot, highest)];
        all.extend(ops);
        env.compound(1, all)
    }
}

/// The SEQUENCE result at the head of a compound reply.
pub fn seq_res(r: &COMPOUND4res) -> &SEQUENCE4resok {
    match r.resarray.first() {
        Some(nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(ok))) => ok,
        other => panic!("no SEQUENCE result: {other:?} (status {:?})", r.status),
    }
}

//! NFSv4 for the whole-request harness: the shared test client
//! (`test_support::nfs4`) over `Env`, which runs each COMPOUND through
//! `Core::handle` as one caller.

use bytes::Bytes;
use proto::nfs4::*;
pub use test_support::nfs4::*;

use super::{user, Cred, Env};

pub const NFS4: u32 = 100003;

/// `Env` speaking as `cred`: the credential travels in each call's RPC
/// header, so another principal is another transport over the same core.
pub struct As<'a>(pub &'a Env, pub &'a Cred);

impl Transport for As<'_> {
    fn compound(&self, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let args = COMPOUND4args { tag: Bytes::from_static(b"t"), minorversion: minor, argarray: ops };
        let bytes = xdr::to_bytes(&args);
        self.0.call_as(NFS4, 4, 1, self.1, &bytes).result()
    }
}

/// The harness's own caller is the test user.
impl Transport for Env {
    fn compound(&self, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        self.compound_as(&user(), minor, ops)
    }
}

impl Env {
    /// One COMPOUND as `cred`, decoded.
    pub fn compound_as(&self, cred: &Cred, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        As(self, cred).compound(minor, ops)
    }

    /// One COMPOUND as the test user, for tests that do not bring the
    /// [`Transport`] trait into scope.
    pub fn compound(&self, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        self.compound_as(&user(), minor, ops)
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
    exchange_id(&As(env, cred), 1, exchange_id_args(name, verifier, flags))
}

pub fn create_session(env: &Env, args: CREATE_SESSION4args) -> CREATE_SESSION4res {
    test_support::nfs4::create_session(env, 1, args)
}

/// The client's answer to the CB_NULL probe in record `probe` (a
/// back channel's first callback): accepted, success.
pub fn cb_null_reply(probe: &Bytes) -> Bytes {
    use xdr::Decode;
    let msg = proto::rpc::rpc_msg::decode(&mut xdr::Decoder::new(probe.clone())).expect("a callback record");
    let mut reply = xdr::Encoder::new();
    for v in [msg.xid, 1, 0, 0, 0, 0] {
        reply.u32(v);
    }
    reply.into_bytes()
}

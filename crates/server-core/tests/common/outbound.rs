//! The core's calls to clients, recorded instead of sent.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use server_core::{CoreSettings, ManualClock, MemStore, NoBackchannel, OutCall, Outbound};
use xdr::{Decode, Decoder};

use super::Env;

/// Keeps every call the core hands over; the test reports their ends.
#[derive(Default)]
pub struct RecordingOutbound {
    pub calls: Mutex<Vec<OutCall>>,
}

impl RecordingOutbound {
    /// The calls handed over since the last look.
    pub fn take(&self) -> Vec<OutCall> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

impl Outbound for RecordingOutbound {
    fn send(&self, call: OutCall) -> bool {
        self.calls.lock().unwrap().push(call);
        true
    }
}

/// An Env (one read-write export) whose core calls clients through a
/// recorder and runs on a manual clock.
pub fn env_with_nlm(settings: CoreSettings) -> (Env, Arc<ManualClock>, Arc<RecordingOutbound>) {
    let mut env = super::env_with("/export *(rw,insecure)\n", settings);
    let clock = Arc::new(ManualClock::default());
    let out = Arc::new(RecordingOutbound::default());
    env.core = env
        .core
        .with_nfs4_env(clock.clone(), Arc::new(NoBackchannel), Arc::new(MemStore::default()))
        .with_outbound(out.clone());
    (env, clock, out)
}

/// A call's header (program, version, procedure) and its arguments.
pub fn decode_call(c: &OutCall) -> (u32, u32, u32, Bytes) {
    let mut d = Decoder::new(super::join(&c.record));
    let msg = proto::rpc::rpc_msg::decode(&mut d).expect("a call record");
    let proto::rpc::rpc_msg_body::CALL(body) = msg.body else { panic!("not a call") };
    assert_eq!(Some(msg.xid), c.xid());
    (body.prog, body.vers, body.proc, d.rest())
}

/// The client's accepted, successful reply to `c` with `results`.
pub fn reply_to(c: &OutCall, results: &[u8]) -> Bytes {
    let mut e = xdr::Encoder::new();
    for v in [c.xid().expect("an xid"), 1, 0, 0, 0, 0] {
        e.u32(v);
    }
    let mut b = bytes::BytesMut::from(&e.into_bytes()[..]);
    b.extend_from_slice(results);
    b.freeze()
}

//! Calls the server makes to its clients on connections it opens itself:
//! the results of NLM's `_MSG` procedures and NLM_GRANTED, sent to the
//! lock manager of a client's host.
//!
//! As with the NFSv4.1 back channel, the core encodes each call's whole
//! record, owns its retries and deadlines, and hands it to an
//! [`Outbound`] transport, which finds the client's port (portmap
//! GETPORT on its host), connects from the address the client reached us
//! on (a client's lock manager may check where a callback comes from),
//! sends the call and gives the reply back through
//! [`Core::outbound_done`]. The transport never blocks the caller.

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use proto::rpc::{authsys_parms, reply_body, reply_data};
use xdr::{Decode, Decoder, Encoder};

/// One call to a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutCall {
    /// Names the call in [`Core::outbound_done`](crate::Core::outbound_done).
    pub id: u64,
    /// The client's host.
    pub host: IpAddr,
    /// Our address to call from: the one the client reached us on.
    pub from: IpAddr,
    pub prog: u32,
    pub vers: u32,
    /// Over UDP rather than TCP.
    pub udp: bool,
    /// The program's port when known; `None`: ask the portmapper at
    /// `host:portmap_port`.
    pub port: Option<u16>,
    pub portmap_port: u16,
    /// The call record, without record marking; its xid is the call's.
    pub record: Vec<Bytes>,
    /// How long the whole call may take.
    pub timeout: Duration,
}

impl OutCall {
    /// The xid of the call.
    pub fn xid(&self) -> Option<u32> {
        let first = self.record.first()?;
        Some(u32::from_be_bytes(first.get(..4)?.try_into().ok()?))
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutReply {
    /// The reply record (without record marking), its xid the call's.
    Reply(Bytes),
    /// The client's host does not register the program.
    NoService,
    /// The host or its portmapper could not be reached, or the
    /// connection failed.
    Unreachable,
    /// No reply within the call's timeout.
    TimedOut,
}

/// Sends calls to clients. Implemented by the transport.
pub trait Outbound: Send + Sync + 'static {
    /// Starts `call` and returns at once; its end is reported through
    /// [`Core::outbound_done`](crate::Core::outbound_done), exactly once.
    /// False when it cannot be started (nothing is then reported).
    fn send(&self, call: OutCall) -> bool;

    /// Whether calls can be made at all. Without them NLM's `_MSG`
    /// procedures are not offered and blocking locks are refused at once.
    fn can_call(&self) -> bool {
        true
    }
}

/// Makes no calls: a core no server gave a transport for them (tests,
/// fuzzing). NLM is then served as without callbacks.
#[derive(Debug, Default)]
pub struct NoOutbound;

impl Outbound for NoOutbound {
    fn send(&self, _call: OutCall) -> bool {
        false
    }

    fn can_call(&self) -> bool {
        false
    }
}

/// A call record: the RPC call header under AUTH_SYS as root of
/// `machinename`, then `args`.
pub(crate) fn call_record(xid: u32, prog: u32, vers: u32, proc_: u32, machinename: &[u8], args: Bytes) -> Vec<Bytes> {
    let cred =
        authsys_parms { stamp: 0, machinename: Bytes::copy_from_slice(machinename), uid: 0, gid: 0, gids: Vec::new() };
    let mut e = Encoder::with_capacity(96);
    for v in [xid, 0, 2, prog, vers, proc_] {
        e.u32(v);
    }
    e.u32(proto::rpc::auth_flavor::AUTH_SYS as u32);
    e.opaque_var(&xdr::to_bytes(&cred));
    e.u32(proto::rpc::auth_flavor::AUTH_NONE as u32);
    e.u32(0);
    let mut record = e.into_segments();
    record.push(args);
    record
}

/// The results of reply `record` to call `xid` when the call was accepted
/// and ran; `None` for any other reply.
pub(crate) fn results(xid: u32, record: Bytes) -> Option<Bytes> {
    let mut d = Decoder::new(record);
    if d.u32().ok()? != xid || d.u32().ok()? != 1 {
        return None;
    }
    match reply_body::decode(&mut d).ok()? {
        reply_body::MSG_ACCEPTED(a) if matches!(a.reply_data, reply_data::SUCCESS) => Some(d.rest()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_records_and_replies() {
        let call = OutCall {
            id: 1,
            host: "10.0.0.1".parse().unwrap(),
            from: "10.0.0.2".parse().unwrap(),
            prog: 100021,
            vers: 4,
            udp: false,
            port: None,
            portmap_port: 111,
            record: call_record(77, 100021, 4, 12, b"srv", Bytes::from_static(&[0, 0, 0, 1])),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(call.xid(), Some(77));
        let mut reply = Encoder::new();
        for v in [77, 1, 0, 0, 0, 0, 9] {
            reply.u32(v);
        }
        let reply = reply.into_bytes();
        assert_eq!(results(77, reply.clone()).as_deref(), Some(&[0, 0, 0, 9][..]));
        assert_eq!(results(78, reply), None);
        let mut refused = Encoder::new();
        for v in [77, 1, 0, 0, 0, 1] {
            refused.u32(v);
        }
        assert_eq!(results(77, refused.into_bytes()), None);
    }
}

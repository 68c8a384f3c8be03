//! The start of an RPC-with-TLS connection (RFC 9289): whatever the first
//! record holds, telling the AUTH_TLS probe from other calls never panics,
//! a probe's STARTTLS reply is a well-formed reply to its xid, and the
//! core answers AUTH_TLS on a TLS connection or a non-NULL procedure with
//! AUTH_BADCRED rather than anything else.
#![no_main]
use std::sync::OnceLock;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use proto::rpc::{rejected_reply, reply_body, rpc_msg, rpc_msg_body};
use server_core::{Core, CoreSettings, ServicePorts, TransportSecurity};
use xdr::{Decode, Decoder};
#[path = "core_common.rs"]
mod core_common;
use core_common::peer;

fn core() -> &'static Core {
    static CORE: OnceLock<Core> = OnceLock::new();
    CORE.get_or_init(|| Core::new(CoreSettings::default(), vec![], [7; 32], [1; 8], ServicePorts { tcp: 2049, udp: None }))
}

/// A probe-shaped call: xid, CALL, RPC 2, any program, version and
/// procedure from the input, AUTH_TLS, then the rest of the input.
fn probe_like(data: &[u8]) -> Vec<u8> {
    let word = |i: usize| data.get(i * 4..i * 4 + 4).map_or(0, |b| u32::from_be_bytes(b.try_into().unwrap()));
    let mut out = Vec::new();
    for v in [word(0), 0, 2, word(1), word(2), word(3) % 4, server_core::AUTH_TLS, 0, 0, 0] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(data.get(16..).unwrap_or_default());
    out
}

fuzz_target!(|data: &[u8]| {
    for record in [data.to_vec(), probe_like(data)] {
        if let Some(xid) = server_core::tls_probe_xid(&record) {
            let reply = server_core::starttls_reply(xid).concat();
            let msg = rpc_msg::decode(&mut Decoder::new(Bytes::from(reply))).expect("STARTTLS reply decodes");
            assert_eq!(msg.xid, xid);
        }
        let mut inside = peer();
        inside.tls = TransportSecurity::Tls;
        for p in [peer(), inside] {
            let out = core().handle(Bytes::from(record.clone()), &p);
            let (Some(reply), Some(_)) = (out.reply, server_core::tls_probe_xid(&record)) else { continue };
            if p.tls != TransportSecurity::Clear {
                let msg = rpc_msg::decode(&mut Decoder::new(Bytes::from(reply.concat()))).expect("reply decodes");
                let rpc_msg_body::REPLY(reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(_))) = msg.body else {
                    panic!("AUTH_TLS inside TLS must be an AUTH_ERROR: {msg:?}")
                };
            }
        }
    }
});

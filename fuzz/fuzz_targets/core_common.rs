//! What the whole-core fuzz targets share: the peer they pose as, call
//! records built from generated types, and the template mutation.
#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use proto::rpc::{auth_flavor, authsys_parms, call_body, opaque_auth, rpc_msg, rpc_msg_body};
use server_core::PeerInfo;
use xdr::{Encode, Encoder};

pub fn peer() -> PeerInfo {
    PeerInfo {
        addr: SocketAddr::from(([127, 0, 0, 1], 700)),
        local: SocketAddr::from(([127, 0, 0, 1], 2049)),
        hostname: None,
        conn: 1,
        tls: Default::default(),
    }
}

pub fn call<A: Encode>(prog: u32, vers: u32, proc_: u32, args: &A) -> Vec<u8> {
    let parms = authsys_parms { stamp: 1, machinename: Bytes::from_static(b"fuzz"), uid: 0, gid: 0, gids: vec![] };
    let cred = opaque_auth { flavor: auth_flavor::AUTH_SYS, body: xdr::to_bytes(&parms) };
    let verf = opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() };
    let msg =
        rpc_msg { xid: 9, body: rpc_msg_body::CALL(call_body { rpcvers: 2, prog, vers, proc: proc_, cred, verf }) };
    let mut e = Encoder::new();
    msg.encode(&mut e);
    args.encode(&mut e);
    e.into_bytes().to_vec()
}

/// The record to feed the core: with the top bit of the first byte clear,
/// the raw input; else a template, overwritten by (position, value) byte
/// pairs and truncated by an odd trailing byte.
pub fn record(templates: &[Vec<u8>], data: &[u8]) -> Option<Vec<u8>> {
    let (&mode, rest) = data.split_first()?;
    if mode & 0x80 == 0 {
        return Some(rest.to_vec());
    }
    let mut t = templates[mode as usize % templates.len()].clone();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        let i = p[0] as usize * 7 % t.len();
        t[i] = p[1];
    }
    if let [cut] = pairs.remainder() {
        t.truncate(*cut as usize * t.len() / 256);
    }
    Some(t)
}

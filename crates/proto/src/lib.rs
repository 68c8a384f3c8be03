//! Protocol types and codecs generated from `spec/xdr/*.x` by xdrgen (the
//! modules under `src/gen` are committed; `regen.sh` rebuilds them and a
//! test checks they are current), plus the RFC 5531 record-marking framer.
#![forbid(unsafe_code)]

pub use xdr::{Bytes, Decode, Encode};

/// ONC RPC v2 messages (RFC 5531), from `rpc_prot.x`.
#[rustfmt::skip]
#[path = "gen/rpc.rs"]
pub mod rpc;

/// Portmapper / rpcbind v2-v4, from `portmap.x`.
#[rustfmt::skip]
#[path = "gen/portmap.rs"]
pub mod portmap;

/// MOUNT v1 and v3 (RFC 1813 appendix I), from `mount3.x`.
#[rustfmt::skip]
#[path = "gen/mount3.rs"]
pub mod mount3;

/// NFSv3 (RFC 1813), plus NFSv2 and NFSACL, from `nfs3_prot.x`.
#[rustfmt::skip]
#[path = "gen/nfs3.rs"]
pub mod nfs3;

/// Network Lock Manager v1-v4, from `nlm_prot.x`.
#[rustfmt::skip]
#[path = "gen/nlm.rs"]
pub mod nlm;

/// Network Status Monitor, from `sm_inter.x`.
#[rustfmt::skip]
#[path = "gen/nsm.rs"]
pub mod nsm;

/// NFSv4.0 and v4.1 (RFC 5661/5662) with the callback program, from
/// `nfs41_prot.x`.
#[rustfmt::skip]
#[path = "gen/nfs4.rs"]
pub mod nfs4;

pub mod framer;

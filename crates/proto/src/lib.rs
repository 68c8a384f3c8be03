//! Protocol types and codecs generated from `spec/xdr/*.x` by xdrgen (the
//! modules under `src/gen` are committed; `regen.sh` rebuilds them and a
//! test checks they are current), plus the RFC 5531 record-marking framer.
//!
//! Names are those of the .x files; the mapping is described in the xdrgen
//! crate. One thing to know when encoding or decoding a *typedef* directly
//! (typically a procedure's argument or result type): an alias has no
//! codec of its own, so where the wire form differs from what the Rust
//! type's impls do, use the generated `encode_NAME` / `decode_NAME`
//! functions. That matters for:
//! - list typedefs such as `mount3::mountlist` / `MOUNT3DUMPres` and
//!   `exports` / `MOUNT3EXPORTres`: they are `Vec<T>`, whose own impl
//!   writes a counted array, not the XDR list;
//! - bounded typedefs such as `mount3::dirpath` / `MOUNT3MNTargs`: the
//!   `Bytes` impl accepts any length the record holds, the helper enforces
//!   MNTPATHLEN.
//!
//! Fields of structs and unions always use the exact form; no helper is
//! needed there.
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

/// nfsx's lock-service relay between the processes of one host, from
/// `lockd_relay.x`.
#[rustfmt::skip]
#[path = "gen/lockd_relay.rs"]
pub mod lockd_relay;

/// RPCSEC_GSS version 1 (RFC 2203) and the Kerberos pseudo-flavors
/// (RFC 2623), from `rpcsec_gss.x`.
#[rustfmt::skip]
#[path = "gen/rpcsec_gss.rs"]
pub mod rpcsec_gss;

/// NFSv4.0, v4.1 and v4.2 (RFC 7530, 8881, 7862/7863) with the callback
/// program and the extended attributes of RFC 8276, from `nfs42_prot.x`.
#[rustfmt::skip]
#[path = "gen/nfs4.rs"]
pub mod nfs4;

pub mod bitmap4;
pub mod dir_notify;
pub mod framer;

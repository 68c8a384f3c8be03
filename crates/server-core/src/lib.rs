//! Sans-IO NFS server core: one RPC record in, one reply record out.
//!
//! The transport (crates/server) frames records, calls [`Core::handle`] on
//! a worker thread and writes back the returned segments; everything that
//! makes up the protocol — RPC header and authentication, portmap/rpcbind,
//! MOUNT v3, NFSv3, export rules and file handles — lives here, with no
//! sockets, runtime or clock, so it is tested by feeding it records.
#![forbid(unsafe_code)]

pub mod auth;
pub mod exports;
pub mod fh;
mod settings;

pub use exports::{ClientMatcher, ClientRule, ExportOptions};
pub use settings::CoreSettings;

use std::net::SocketAddr;
use std::sync::Arc;

/// Who sent a record, as the transport knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The client's address and source port (`secure` checks the port).
    pub addr: SocketAddr,
    /// Our address the client connected to (rpcbind GETADDR replies with it).
    pub local: SocketAddr,
    /// Reverse-resolved client name, if the transport looked it up; host
    /// name rules in exports only match through it.
    pub hostname: Option<String>,
}

/// Ports reported by portmap GETPORT / rpcbind GETADDR for every service
/// (NFS, MOUNT and portmap itself are served on the same port).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServicePorts {
    pub tcp: u16,
    pub udp: Option<u16>,
}

/// One exported tree.
#[derive(Clone)]
pub struct Export {
    /// Goes into every file handle; must stay the same across restarts for
    /// handles to survive them, and be unique among exports.
    pub id: u32,
    /// The path clients mount (e.g. the absolute host path).
    pub path: String,
    pub fs: Arc<dyn vfs::Vfs>,
    /// Client rules in order; the first that matches a peer applies.
    pub rules: Vec<ClientRule>,
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export").field("id", &self.id).field("path", &self.path).field("rules", &self.rules).finish()
    }
}

/// The result of one record.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The reply record (without record marking) as segments for a
    /// vectored write; `None` when nothing must be sent (the record was a
    /// reply, or not an RPC message at all).
    pub reply: Option<Vec<bytes::Bytes>>,
    /// What was called, for metrics and logs: "nfs3.READ", "mount3.MNT",
    /// "portmap.GETPORT", "rpc.garbage", ...
    pub label: &'static str,
    /// The call was accepted and the procedure reported success.
    pub ok: bool,
}

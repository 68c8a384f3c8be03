//! RPCSEC_GSS version 1 (RFC 2203) without I/O.
//!
//! The GSS-API itself (Kerberos V5 through the system's library) sits
//! behind the traits here, so that the server and client cores that speak
//! the protocol stay free of FFI and can be tested with a stand-in
//! mechanism ([`testing`]). What both sides share lives here too: the
//! security flavors an export or a mount names, the sequence window a
//! server keeps per context, and the integrity and privacy bodies that
//! carry arguments and results.
#![forbid(unsafe_code)]

mod body;
pub mod call;
pub mod callee;
mod flavor;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod window;

use std::time::Duration;

use bytes::Bytes;

pub use body::{open_body, seal_body, seal_segments, BodyError};
pub use call::{GssClient, ReplyError};
pub use callee::{Callee, SharedContext};
pub use flavor::{Flavor, Service, KRB5_OID_DER};
pub use window::{SeqWindow, Verdict};

/// A failed GSS-API call: its major and minor status, and the library's
/// words for them (for logs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("GSS-API error (major {major:#x}, minor {minor}): {message}")]
pub struct GssError {
    pub major: u32,
    pub minor: u32,
    pub message: String,
}

impl GssError {
    pub fn new(major: u32, minor: u32, message: impl Into<String>) -> GssError {
        GssError { major, minor, message: message.into() }
    }
}

/// GSS-API major status codes the protocol carries (RFC 2203 appendix A).
pub mod major {
    pub const GSS_S_COMPLETE: u32 = 0;
    pub const GSS_S_CONTINUE_NEEDED: u32 = 1;
    pub const GSS_S_BAD_SIG: u32 = 6 << 16;
    pub const GSS_S_NO_CONTEXT: u32 = 8 << 16;
    pub const GSS_S_DEFECTIVE_TOKEN: u32 = 9 << 16;
    pub const GSS_S_CONTEXT_EXPIRED: u32 = 12 << 16;
    pub const GSS_S_FAILURE: u32 = 13 << 16;
}

/// An established security context, on either side: the per-message
/// calls RPCSEC_GSS makes with it. Not shared between threads by itself:
/// the caller serialises the calls on one context (the GSS-API keeps
/// sequence state inside it).
pub trait SecContext: Send {
    /// GSS_GetMIC with the default QOP.
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError>;
    /// GSS_VerifyMIC.
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError>;
    /// GSS_Wrap with confidentiality. The token comes as `Bytes`, so
    /// that one the library allocated goes out as it is: a READ reply is
    /// a mebibyte.
    fn wrap(&mut self, msg: &[u8]) -> Result<Bytes, GssError>;
    /// GSS_Unwrap of a token that must have been encrypted.
    fn unwrap(&mut self, token: &[u8]) -> Result<Bytes, GssError>;
}

/// A context the server has accepted.
pub struct Established {
    pub ctx: Box<dyn SecContext>,
    /// The last token for the client, empty when there is none.
    pub token: Vec<u8>,
    /// The client's principal as the mechanism displays it
    /// (`alice@EXAMPLE.COM`, `nfs/host.example.com@EXAMPLE.COM`).
    pub principal: String,
    /// How long the context (the client's ticket) stays valid.
    pub lifetime: Duration,
}

/// One step of GSS_Accept_sec_context.
pub enum AcceptStep {
    /// The mechanism wants another token from the client: send it `token`.
    Continue {
        next: Box<dyn Accepting>,
        token: Vec<u8>,
    },
    Complete(Established),
}

/// The server's side of a context being set up.
pub trait Accepting: Send {
    fn step(self: Box<Self>, token: &[u8]) -> Result<AcceptStep, GssError>;
}

/// Where the server's contexts come from: its service credential.
pub trait Acceptor: Send + Sync {
    fn start(&self) -> Box<dyn Accepting>;
}

/// One step of GSS_Init_sec_context.
pub enum InitStep {
    /// Send `token` to the server and feed its answer to `next`.
    Continue { next: Box<dyn Initiating>, token: Vec<u8> },
    /// Set up; `token`, when not empty, still goes to the server.
    Complete { ctx: Box<dyn SecContext>, token: Vec<u8>, lifetime: Duration },
}

/// The client's side of a context being set up.
pub trait Initiating: Send {
    /// The first step takes no token; later ones the server's.
    fn step(self: Box<Self>, token: Option<&[u8]>) -> Result<InitStep, GssError>;
}

/// Where the client's contexts come from: a user's credential.
pub trait Initiator: Send + Sync {
    /// Starts a context with the service `service@host` (GSS
    /// host-based service name, e.g. `nfs@server.example.com`).
    fn start(&self, target: &str) -> Result<Box<dyn Initiating>, GssError>;
}

/// The local identity a principal acts as on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub gids: Vec<u32>,
}

/// How the server turns a client's principal into a local identity (as
/// rpc.svcgssd and gssproxy do); `None` when the principal has no local
/// account, which the server then treats as the anonymous user.
pub trait PrincipalMap: Send + Sync {
    fn identity(&self, principal: &str) -> Option<Identity>;
}

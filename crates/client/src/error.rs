//! Client errors: each says what failed in words a user can act on.

use client_core::rpc::RpcError;
use proto::nfs3::nfsstat3;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("bad URL {url}: {why}")]
    Url { url: String, why: String },
    #[error("cannot reach {what}: {why}")]
    Connect { what: String, why: String },
    #[error("mount of {export} refused: {why}")]
    Mount { export: String, why: String },
    #[error("{proc} failed: {err}")]
    Rpc { proc: &'static str, err: RpcError },
    #[error("{proc} failed: {status:?}")]
    Nfs { proc: &'static str, status: nfsstat3 },
    #[error("{proc}: malformed reply: {why}")]
    Decode { proc: &'static str, why: String },
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// The NFS status, when the server answered with one.
    pub fn status(&self) -> Option<nfsstat3> {
        match self {
            Error::Nfs { status, .. } => Some(*status),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

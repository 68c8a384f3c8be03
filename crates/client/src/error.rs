//! Client errors: each says what failed in words a user can act on.

use client_core::fattr::TimeRangeError;
use client_core::rpc::RpcError;
use proto::nfs3::nfsstat3;
use proto::nfs4::nfsstat4;

fn flavor_list(f: &[rpcsec::Flavor]) -> String {
    f.iter().map(|f| f.name()).collect::<Vec<_>>().join(":")
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("bad URL {url}: {why}")]
    Url { url: String, why: String },
    #[error("cannot reach {what}: {why}")]
    Connect { what: String, why: String },
    #[error("mount of {export} refused: {why}")]
    Mount { export: String, why: String },
    /// The export does not admit this mount's security flavor; it lists
    /// `offered` (MOUNT's flavors, NFSv4 SECINFO), most preferred first.
    #[error(
        "mount of {export} refused: the export asks for sec={}, this mount speaks sec={asked} (add ?sec= to the URL)",
        flavor_list(offered)
    )]
    WrongSec { export: String, asked: rpcsec::Flavor, offered: Vec<rpcsec::Flavor> },
    #[error("{proc} failed: {err}")]
    Rpc { proc: &'static str, err: RpcError },
    #[error("{proc} failed: {status:?}")]
    Nfs { proc: &'static str, status: nfsstat3 },
    #[error("{op} failed: {status:?}")]
    Nfs4 { op: &'static str, status: nfsstat4 },
    #[error("{proc} failed: {status:?}")]
    Nlm { proc: &'static str, status: proto::nlm::nlm4_stats },
    #[error("{proc}: malformed reply: {why}")]
    Decode { proc: &'static str, why: String },
    /// A time to set that the protocol in use cannot carry (NFSv3's
    /// seconds are unsigned 32-bit).
    #[error("{0}")]
    TimeRange(#[from] TimeRangeError),
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// The NFS status, when the server answered with one.
    pub fn status(&self) -> Option<nfsstat3> {
        match self {
            Error::Nfs { status, .. } => Some(*status),
            Error::Nfs4 { status, .. } => Some(v3_status(*status)),
            Error::Nlm { status, .. } => Some(nlm_status(*status)),
            _ => None,
        }
    }
}

/// The NFSv3 status nearest an NLM failure, for the same errno mapping.
pub fn nlm_status(s: proto::nlm::nlm4_stats) -> nfsstat3 {
    use proto::nlm::nlm4_stats::*;
    match s {
        nlm4_granted => nfsstat3::NFS3_OK,
        nlm4_denied | nlm4_blocked | nlm4_deadlck => nfsstat3::NFS3ERR_ACCES,
        nlm4_denied_grace_period => nfsstat3::NFS3ERR_JUKEBOX,
        nlm4_denied_nolocks => nfsstat3::NFS3ERR_NOSPC,
        nlm4_rofs => nfsstat3::NFS3ERR_ROFS,
        nlm4_stale_fh => nfsstat3::NFS3ERR_STALE,
        nlm4_fbig => nfsstat3::NFS3ERR_FBIG,
        nlm4_failed => nfsstat3::NFS3ERR_IO,
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The NFSv3 status of an NFSv4 error, so callers (the mount's errno
/// mapping) see one set: RFC 7530 kept the numbers of the errors both
/// versions have; the v4-only ones become the nearest v3 error.
pub fn v3_status(s: nfsstat4) -> nfsstat3 {
    use nfsstat4::*;
    match s {
        NFS4ERR_DELAY | NFS4ERR_GRACE => nfsstat3::NFS3ERR_JUKEBOX,
        NFS4ERR_SYMLINK | NFS4ERR_WRONG_TYPE => nfsstat3::NFS3ERR_NOTDIR,
        NFS4ERR_LOCKED | NFS4ERR_DENIED | NFS4ERR_SHARE_DENIED | NFS4ERR_OPENMODE => nfsstat3::NFS3ERR_ACCES,
        NFS4ERR_FHEXPIRED | NFS4ERR_NOFILEHANDLE => nfsstat3::NFS3ERR_STALE,
        NFS4ERR_BADCHAR | NFS4ERR_BADNAME | NFS4ERR_BADOWNER => nfsstat3::NFS3ERR_INVAL,
        other => nfsstat3::try_from(other as i32).unwrap_or(nfsstat3::NFS3ERR_IO),
    }
}

//! Finding a server's MOUNT, NFS and NLM ports through its portmapper, and
//! MOUNT v3 MNT to get the export's root file handle.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use proto::mount3::{self, mountres3};
use proto::nfs3::{self, nfs_fh3};
use proto::nlm::NLM_PROG;
use proto::portmap::{pmap2_mapping, PMAP2_GETPORT, PMAP_PROGRAM, PMAP_V2};
use xdr::{Decode, Decoder, Encoder};

use crate::error::{Error, Result};
use crate::transport::{ConnParams, Connection};

const IPPROTO_TCP: u32 = 6;
pub(crate) const PORTMAP_PORT: u16 = 111;
const NFS_PORT: u16 = 2049;

/// Where a server's services are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerAddrs {
    pub mount: SocketAddr,
    pub nfs: SocketAddr,
    /// The lock manager (NLM v4) for NFSv3 locks, when there is one.
    pub nlm: Option<SocketAddr>,
}

/// Asks the portmapper at `port` (111 when None) where MOUNT v3, NFS v3
/// and NLM v4 listen over TCP. A server without a portmapper is assumed to
/// serve everything on the given port (or 2049), as nfsx does.
pub async fn discover(ip: std::net::IpAddr, port: Option<u16>, params: &ConnParams) -> Result<ServerAddrs> {
    let pmap = SocketAddr::new(ip, port.unwrap_or(PORTMAP_PORT));
    let fallback = SocketAddr::new(ip, port.unwrap_or(NFS_PORT));
    let conn = match Connection::connect(ConnParams { addr: pmap, ..params.clone() }).await {
        Ok(c) => c,
        Err(e) if port.is_none() => {
            tracing::debug!("no portmapper at {pmap} ({e}); assuming {fallback}");
            return Ok(ServerAddrs { mount: fallback, nfs: fallback, nlm: Some(fallback) });
        }
        Err(e) => return Err(Error::Connect { what: pmap.to_string(), why: e.to_string() }),
    };
    let getport = |prog, vers| {
        let conn = conn.clone();
        async move {
            let args = pmap2_mapping { prog, vers, prot: IPPROTO_TCP, port: 0 };
            let res = conn.call(PMAP_PROGRAM, PMAP_V2, PMAP2_GETPORT, vec![xdr::to_bytes(&args)]).await;
            match res.map(|b| u32::decode(&mut Decoder::new(b))) {
                Ok(Ok(p)) if p > 0 && p <= u16::MAX as u32 => Some(p as u16),
                _ => None,
            }
        }
    };
    let mount = getport(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3).await;
    let nfs = getport(nfs3::NFS_PROGRAM, nfs3::NFS_V3).await;
    let nlm = getport(NLM_PROG, crate::nlm::NLM_V4).await.map(|p| SocketAddr::new(ip, p));
    match (mount, nfs) {
        (Some(m), Some(n)) => Ok(ServerAddrs {
            mount: SocketAddr::new(ip, m),
            nfs: SocketAddr::new(ip, n),
            nlm: nlm.or(port.map(|_| fallback)),
        }),
        // A portmapper that does not know the programs: they may still be
        // served on its port (nfsx) — MNT will tell.
        _ if port.is_some() => Ok(ServerAddrs { mount: fallback, nfs: fallback, nlm: nlm.or(Some(fallback)) }),
        _ => Err(Error::Connect {
            what: format!("{pmap}"),
            why: "the portmapper knows no MOUNT v3 / NFS v3 over TCP".into(),
        }),
    }
}

/// MOUNT v3 MNT: the root handle of `export`.
pub async fn mnt(addr: SocketAddr, export: &str, params: &ConnParams, timeout: Duration) -> Result<nfs_fh3> {
    let conn = Connection::connect(ConnParams { addr, ..params.clone() })
        .await
        .map_err(|e| Error::Connect { what: format!("MOUNT service at {addr}"), why: e.to_string() })?;
    let mut e = Encoder::new();
    mount3::encode_dirpath(&Bytes::copy_from_slice(export.as_bytes()), &mut e);
    let call = conn.call(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, mount3::MOUNT3_MNT, e.into_segments());
    let reply = tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| Error::Mount { export: export.into(), why: format!("no answer from {addr}") })?
        .map_err(|err| Error::Mount { export: export.into(), why: err.to_string() })?;
    let res =
        mountres3::decode(&mut Decoder::new(reply)).map_err(|e| Error::Decode { proc: "MNT", why: e.to_string() })?;
    match res {
        mountres3::MNT3_OK(ok) => {
            let flavors = &ok.auth_flavors;
            // The flavor this mount speaks must be listed (AUTH_NONE, 0,
            // stands in for AUTH_SYS); an empty list means "any".
            let ours = params.gss.as_ref().map_or(rpcsec::Flavor::Sys, |g| rpcsec::Flavor::of_service(g.service));
            let listed = |f: i32| f as u32 == ours.pseudo_flavor() || (ours == rpcsec::Flavor::Sys && f == 0);
            if !flavors.is_empty() && !flavors.iter().any(|&f| listed(f)) {
                let mut offered: Vec<rpcsec::Flavor> = Vec::new();
                for f in flavors.iter().filter_map(|&f| rpcsec::Flavor::from_pseudo_flavor(f as u32)) {
                    if !offered.contains(&f) {
                        offered.push(f);
                    }
                }
                if offered.is_empty() {
                    let why = format!("needs auth flavors {flavors:?}");
                    return Err(Error::Mount { export: export.into(), why });
                }
                return Err(Error::WrongSec { export: export.into(), asked: ours, offered });
            }
            Ok(nfs_fh3 { data: ok.fhandle })
        }
        mountres3::default(status) => Err(Error::Mount { export: export.into(), why: format!("{status:?}") }),
    }
}

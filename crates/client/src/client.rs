//! Connecting: URL → portmap discovery → MOUNT → NFS connections → FSINFO.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use client_core::rpc::auth_sys;
use client_core::stats::Stats;
use proto::nfs3::nfs_fh3;

use crate::error::{Error, Result};
use crate::fs::Inner;
use crate::mount::{self, ServerAddrs};
use crate::nfs::Nfs;
use crate::nfs3::Nfs3;
use crate::nfs41::Nfs41;
use crate::nlm::Nlm;
use crate::settings::ClientSettings;
use crate::transport::{ConnParams, Connection};
use crate::url::{NfsUrl, Version};

/// A mounted export over NFSv3 or NFSv4.1: the raw calls ([`Client::nfs3`]) and the cached
/// file API ([`Client::open`] and friends, in `fs.rs`). Cheap to clone;
/// clones share connections and caches. Each [`Client::connect`] is an
/// independent client with its own connections and caches.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

/// The address of `url`'s host and where its services listen.
pub async fn resolve(url: &NfsUrl, settings: &ClientSettings) -> Result<ServerAddrs> {
    let ip = lookup(&url.host).await?;
    mount::discover(ip, url.port, &conn_params(settings, SocketAddr::new(ip, 0))).await
}

async fn lookup(host: &str) -> Result<IpAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip);
    }
    let mut addrs = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| Error::Connect { what: host.to_string(), why: e.to_string() })?;
    addrs.next().map(|a| a.ip()).ok_or_else(|| Error::Connect { what: host.to_string(), why: "no address".into() })
}

/// The name this client gives itself (AUTH_SYS, NLM's caller name).
fn machine_name(s: &ClientSettings) -> String {
    s.machine_name.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
    })
}

/// [`conn_params`] for the server of `url`: with RPC-with-TLS when the
/// URL asks for it (`tls=1`).
fn conn_params_for(url: &NfsUrl, s: &ClientSettings, addr: SocketAddr) -> Result<ConnParams> {
    let mut p = conn_params(s, addr);
    if url.tls {
        p.tls = Some(crate::tls::ClientTls::new(&s.tls, &url.host)?);
    }
    if let Some(service) = url.sec.and_then(|f| f.service()) {
        p.gss = Some(crate::transport::GssParams {
            initiator: kerberos_credential(&s.gss)?,
            target: format!("nfs@{}", url.host),
            service,
            renew_before: Duration::from_secs(s.gss.renew_before_secs),
        });
    }
    Ok(p)
}

/// The Kerberos credential of `[gss]`: a keytab's, or the caller's cache.
fn kerberos_credential(g: &crate::settings::GssSettings) -> Result<Arc<dyn rpcsec::Initiator>> {
    let failed = |why: String| Error::Connect { what: "Kerberos credential".into(), why };
    Ok(match (&g.keytab, &g.principal) {
        (Some(keytab), Some(principal)) => {
            Arc::new(::gss::KrbInitiator::from_keytab(keytab, principal).map_err(|e| failed(e.to_string()))?)
        }
        (Some(_), None) => return Err(failed("[gss] keytab needs [gss] principal".into())),
        (None, _) => Arc::new(::gss::KrbInitiator::default_ccache()),
    })
}

pub(crate) fn conn_params(s: &ClientSettings, addr: SocketAddr) -> ConnParams {
    let machine = machine_name(s);
    let (euid, egid) = effective_ids();
    let gid = s.gid.unwrap_or(egid);
    ConnParams {
        addr,
        rpc: s.rpc.clone(),
        cred: auth_sys(&machine, s.uid.unwrap_or(euid), gid, &[gid]),
        connect_timeout: Duration::from_millis(s.connect_timeout_ms),
        reconnect_timeout: Duration::from_millis(s.reconnect_timeout_ms),
        reconnect_max_pause: Duration::from_millis(s.reconnect_max_pause_ms.max(1)),
        max_record: s.max_record,
        read_buffer: s.read_buffer,
        copy_replies_below: s.copy_replies_below,
        reply_lowat_min: s.reply_lowat_min,
        reply_lowat_max: s.reply_lowat_max,
        tls: None,
        reply_poll: Duration::from_micros(s.reply_poll_us),
        gss: None,
    }
}

fn effective_ids() -> (u32, u32) {
    // SAFETY: geteuid/getegid cannot fail and touch no memory.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

impl Client {
    /// Mounts `url` (`nfs://host[:port]/export`).
    pub async fn connect(url: &str, settings: ClientSettings) -> Result<Client> {
        let parsed = NfsUrl::parse(url)?;
        let addrs = resolve(&parsed, &settings).await?;
        Client::connect_to(&parsed, addrs, settings).await
    }

    /// Mounts with the service addresses already known (or redirected,
    /// e.g. through a delay proxy).
    pub async fn connect_to(url: &NfsUrl, addrs: ServerAddrs, settings: ClientSettings) -> Result<Client> {
        match Self::connect_version(url, addrs, settings.clone()).await {
            // No `sec=` asked and the export wants Kerberos: the first
            // Kerberos flavor it lists (its preference), with the
            // credential the settings name (RFC 8881 section 2.6.3.1).
            Err(Error::WrongSec { offered, .. })
                if url.sec.is_none() && offered.iter().any(|f| f.service().is_some()) =>
            {
                let f = offered.into_iter().find(|f| f.service().is_some());
                let url = NfsUrl { sec: f, ..url.clone() };
                tracing::info!(url = %url, "the export asks for Kerberos; mounting with the flavor it prefers");
                Self::connect_version(&url, addrs, settings).await
            }
            other => other,
        }
    }

    async fn connect_version(url: &NfsUrl, addrs: ServerAddrs, settings: ClientSettings) -> Result<Client> {
        match url.version {
            Version::V3 => Self::connect_v3(url, addrs, settings).await,
            Version::V41 => Self::connect_v41(url, addrs, settings, &[1]).await,
            Version::V42 => Self::connect_v41(url, addrs, settings, &[2]).await,
            Version::Auto => match Self::connect_v41(url, addrs, settings.clone(), &[2, 1]).await {
                Err(e) if no_v41(&e) => {
                    tracing::info!(url = %url, why = %e, "NFSv4.1 and 4.2 not offered for this export; using NFSv3");
                    Self::connect_v3(url, addrs, settings).await
                }
                other => other,
            },
        }
    }

    /// NFSv4.1 and 4.2 need no MOUNT: a session on the NFS port (at the
    /// first of `minors` the server offers), and the export's handle from
    /// a PUTROOTFH + LOOKUP compound.
    async fn connect_v41(
        url: &NfsUrl,
        addrs: ServerAddrs,
        mut settings: ClientSettings,
        minors: &[u32],
    ) -> Result<Client> {
        if let Some(d) = url.delegations {
            settings.v41.delegations = d;
        }
        if let Some(d) = url.dir_delegations {
            settings.v41.dir_delegations = d;
        }
        let base = conn_params_for(url, &settings, addrs.nfs)?;
        let nfs = Nfs41::connect(base, &settings, &url.export, minors).await?;
        let root = nfs_fh3 { data: nfs.root() };
        let fs = nfs.io_limits(&root.data).await?;
        settings.rsize = clamp_io(settings.rsize, fs.rtmax);
        settings.wsize = clamp_io(settings.wsize, fs.wtmax);
        settings.writeback.wsize = settings.wsize as u64;
        let inner = Inner::new(Nfs::V41(nfs.clone()), root, settings, url.clone()).with_time_delta(fs.time_delta_ns);
        let inner = Arc::new(inner);
        Client::install_dir_hooks(&inner);
        // A recall writes back what the delegation let this client keep,
        // and forgets the attributes it let it trust.
        let weak = Arc::downgrade(&inner);
        nfs.set_flush_hook(Arc::new(move |fh| {
            let weak = weak.clone();
            Box::pin(async move {
                if let Some(inner) = weak.upgrade() {
                    let _ = inner.flush(&fh).await;
                    inner.caches.invalidate_attrs(&fh);
                }
            })
        }));
        Ok(Client { inner })
    }

    async fn connect_v3(url: &NfsUrl, addrs: ServerAddrs, mut settings: ClientSettings) -> Result<Client> {
        let base = conn_params_for(url, &settings, addrs.nfs)?;
        let root = mount::mnt(addrs.mount, &url.export, &base, base.connect_timeout * 2).await?;
        let mut conns = Vec::new();
        for _ in 0..settings.nconnect.max(1) {
            let c = Connection::connect(base.clone())
                .await
                .map_err(|e| Error::Connect { what: format!("NFS service at {}", addrs.nfs), why: e.to_string() })?;
            conns.push(c);
        }
        // Each process locks under a name of its own, so that a server
        // told this process ended frees its locks and no other's.
        let caller = match settings.nlm.process_names {
            true => format!("{}.nfsx-{}", machine_name(&settings), std::process::id()),
            false => machine_name(&settings),
        };
        let portmap = SocketAddr::new(addrs.nfs.ip(), url.port.unwrap_or(mount::PORTMAP_PORT));
        let nlm = Nlm::new(addrs.nlm, portmap, base.clone(), &caller, settings.v41.retry.clone(), settings.nlm.clone());
        // Servers still holding locks of nfsx processes of this host that
        // were killed are told now.
        let (lockd, params) = (settings.nlm.clone(), base.clone());
        tokio::spawn(async move { crate::lockd::notify_ended(&lockd, &params).await });
        let nfs = Nfs3::new(conns).with_lock_manager(nlm);
        let info = nfs.fsinfo(&root).await?;
        settings.rsize = clamp_io(settings.rsize, info.rtmax);
        settings.wsize = clamp_io(settings.wsize, info.wtmax);
        settings.writeback.wsize = settings.wsize as u64;
        let inner = Inner::new(Nfs::V3(Box::new(nfs)), root, settings, url.clone());
        let delta = info.time_delta.seconds as u64 * 1_000_000_000 + info.time_delta.nseconds as u64;
        Ok(Client { inner: Arc::new(inner.with_time_delta(Some(delta))) })
    }

    /// The raw NFSv3 calls (None over NFSv4.1), sharing this client's
    /// connections and counters.
    pub fn nfs3(&self) -> Option<&Nfs3> {
        match &self.inner.nfs {
            Nfs::V3(n) => Some(n.as_ref()),
            Nfs::V41(_) => None,
        }
    }

    /// The NFSv4.1 session (None over NFSv3).
    pub fn nfs41(&self) -> Option<&Arc<Nfs41>> {
        self.inner.nfs.v41()
    }

    /// Whether byte-range locks go to the server: NFSv4.1, or NFSv3 when
    /// the server's portmapper named a lock manager (NLM).
    pub fn locks_at_server(&self) -> bool {
        self.inner.nfs.locks_at_server()
    }

    /// "3" or "4.1".
    pub fn version(&self) -> &'static str {
        self.inner.nfs.version()
    }

    /// Ends an NFSv4.1 session: delegations returned, the session and the
    /// client id destroyed, so the server frees their state now rather
    /// than at lease expiry. Nothing to do over NFSv3.
    pub async fn shutdown(&self) {
        if let Some(n) = self.inner.nfs.v41() {
            n.shutdown().await;
        }
    }

    pub fn root(&self) -> &nfs_fh3 {
        &self.inner.root
    }

    /// The settings in force (rsize/wsize after the server's limits).
    pub fn settings(&self) -> &ClientSettings {
        &self.inner.settings
    }

    /// Whether NFS calls go under Kerberos (`?sec=krb5`, `krb5i`,
    /// `krb5p`): the server then knows the caller by its principal, and
    /// new files belong to the principal's user.
    pub fn kerberos(&self) -> bool {
        self.inner.url.sec.is_some_and(|f| f.service().is_some())
    }

    /// Per-procedure counters of the NFS connections.
    pub fn stats(&self) -> Stats {
        self.inner.nfs.stats()
    }
}

/// Whether a failed NFSv4.1 mount means the server does not offer the
/// export over NFSv4.1 (so NFSv3 is worth a try), as opposed to a server
/// that is down or refuses this client: no NFS version 4 program, no
/// minor version 1, or an export path its NFSv4 namespace does not have
/// (servers may publish exports under other pseudo paths).
fn no_v41(e: &Error) -> bool {
    use client_core::rpc::RpcError;
    use proto::nfs4::nfsstat4::*;
    match e {
        Error::Rpc { err: RpcError::ProgMismatch(..) | RpcError::ProgUnavail | RpcError::ProcUnavail, .. } => true,
        Error::Nfs4 { status, .. } => {
            matches!(status, NFS4ERR_MINOR_VERS_MISMATCH | NFS4ERR_NOENT | NFS4ERR_NOTDIR | NFS4ERR_WRONGSEC)
        }
        _ => false,
    }
}

/// An I/O size the server accepts: at most its maximum, a multiple of 4 KiB
/// when large enough, never zero.
fn clamp_io(want: u32, server_max: u32) -> u32 {
    let v = if server_max > 0 { want.min(server_max) } else { want };
    if v >= 8192 {
        v & !4095
    } else {
        v.max(512)
    }
}

//! Turns `nfsx serve DIR` or an exports file into backends and rules.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use server_core::exports::{parse_exports, ClientMatcher, ClientRule, ExportEntry, ExportOptions};
use server_core::Export;
use vfs::{LocalFs, MemFs, Vfs};

use crate::{state, ServeConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Local,
    Memory,
    /// A Ceph file system; export paths are paths inside it.
    Ceph,
}

/// `nfsx serve DIR` without an exports file: read-write for this host only.
/// Root is not squashed, so a local root client can write into a root-owned
/// directory; nothing off the machine may connect.
fn localhost_rules() -> Vec<ClientRule> {
    let options = ExportOptions { read_only: false, root_squash: false, secure: false, ..ExportOptions::default() };
    vec![
        ClientRule::new(ClientMatcher::Net(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)), 8), options.clone()),
        ClientRule::new(ClientMatcher::Addr(IpAddr::V6(Ipv6Addr::LOCALHOST)), options),
    ]
}

pub fn needs_hostname(rule: &ClientRule) -> bool {
    matches!(rule.matcher, ClientMatcher::Host(_) | ClientMatcher::Wildcard(_))
}

/// What keeps the exports from being served.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot read exports file {}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Parse { path: PathBuf, line: usize, message: String },
    #[error("exports file {} exports nothing", path.display())]
    Empty { path: PathBuf },
    #[error("no directory to export")]
    NoDirectory,
    #[error("cannot export {}: not an accessible directory", path.display())]
    Inaccessible {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("export path {} is not UTF-8", path.display())]
    NotUtf8 { path: PathBuf },
    #[error("cannot export {path}: not a directory")]
    NotDirectory { path: String },
    #[error("creating {}", path.display())]
    StateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot export {path}")]
    Backend {
        path: String,
        #[source]
        source: vfs::VfsError,
    },
    /// libcephfs's own words, with the step that failed.
    #[error("cannot export CephFS {path}: {detail}")]
    Ceph { path: String, detail: String },
}

fn entries(cfg: &ServeConfig) -> Result<Vec<ExportEntry>, ExportError> {
    if let Some(file) = &cfg.exports_file {
        let text =
            std::fs::read_to_string(file).map_err(|source| ExportError::ReadFile { path: file.clone(), source })?;
        let parsed = parse_exports(&text).map_err(|e| ExportError::Parse {
            path: file.clone(),
            line: e.line,
            message: e.message,
        })?;
        for w in &parsed.warnings {
            tracing::warn!(file = %file.display(), "{w}");
        }
        if parsed.entries.is_empty() {
            return Err(ExportError::Empty { path: file.clone() });
        }
        return Ok(parsed.entries);
    }
    let dir = cfg.dir.as_ref().ok_or(ExportError::NoDirectory)?;
    let inaccessible = |source| ExportError::Inaccessible { path: dir.clone(), source };
    let abs = match cfg.backend {
        Backend::Local => std::fs::canonicalize(dir).map_err(inaccessible)?,
        Backend::Memory => std::path::absolute(dir).map_err(inaccessible)?,
        Backend::Ceph => std::path::Path::new("/").join(dir),
    };
    let path = abs.to_str().ok_or_else(|| ExportError::NotUtf8 { path: abs.clone() })?;
    Ok(vec![ExportEntry { path: path.to_string(), rules: localhost_rules(), line: 0 }])
}

pub fn build(cfg: &ServeConfig, state_dir: &Path) -> Result<Vec<Export>, ExportError> {
    let mut out = Vec::new();
    for entry in entries(cfg)? {
        let id = state::export_id(&entry.path);
        let fs: Arc<dyn Vfs> = match cfg.backend {
            Backend::Local => {
                let root = Path::new(&entry.path);
                if !root.is_dir() {
                    return Err(ExportError::NotDirectory { path: entry.path });
                }
                let dir = state_dir.join("exports").join(format!("{id:08x}"));
                std::fs::create_dir_all(&dir).map_err(|source| ExportError::StateDir { path: dir.clone(), source })?;
                let fs = LocalFs::open(root, &dir, localfs_settings(cfg, &entry))
                    .map_err(|source| ExportError::Backend { path: entry.path.clone(), source })?;
                Arc::new(fs)
            }
            Backend::Memory => Arc::new(MemFs::with_settings(cfg.settings.memfs.clone())),
            Backend::Ceph => {
                let mut settings = cfg.settings.ceph.clone();
                settings.sync_metadata = sync_metadata(settings.sync_metadata, &entry);
                let instance = ceph_session(state_dir, id);
                let fs = vfs_ceph::CephFs::open_as(&settings, &entry.path, Some(&instance))
                    .map_err(|detail| ExportError::Ceph { path: entry.path.clone(), detail })?;
                Arc::new(fs)
            }
        };
        tracing::info!(path = %entry.path, id, clients = ?entry.rules.iter().map(|r| r.pattern.as_str()).collect::<Vec<_>>(), "export");
        out.push(Export { id, path: entry.path, fs, rules: entry.rules });
    }
    Ok(out)
}

/// The name export `id`'s Ceph session goes by: one per head and export,
/// the same after a restart.
pub fn ceph_session(state_dir: &std::path::Path, id: u32) -> String {
    format!("nfsx:{}:{}:{id:08x}", hostname(), state_dir.display())
}

/// This machine's name, to tell heads apart.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// Whether an export's backend makes namespace changes durable, from
/// the backend's own `sync_metadata` and the export's rules. exports(5)
/// `async` covers namespace changes as well as WRITEs, as with knfsd
/// (which skips its metadata commit for such exports): an export whose
/// every rule is `async` does not flush creates, removes and renames
/// either. The backend is shared by all of an export's rules, so an export
/// that is `sync` for some clients and `async` for others keeps namespace
/// changes durable for all of them (its WRITEs still follow each client's
/// rule).
fn sync_metadata(configured: bool, entry: &ExportEntry) -> bool {
    let asynchronous = entry.rules.iter().filter(|r| !r.options.sync).count();
    if asynchronous > 0 && asynchronous == entry.rules.len() {
        return false;
    }
    if asynchronous > 0 && configured {
        tracing::warn!(
            path = %entry.path,
            "export is sync for some clients and async for others: namespace changes stay durable for all"
        );
    }
    configured
}

fn localfs_settings(cfg: &ServeConfig, entry: &ExportEntry) -> vfs::LocalFsSettings {
    let mut settings = cfg.settings.localfs.clone();
    settings.sync_metadata = sync_metadata(settings.sync_metadata, entry);
    settings
}

/// The client's host name for host-name rules (`getnameinfo`, name required).
pub async fn reverse_lookup(ip: IpAddr) -> Option<String> {
    tokio::task::spawn_blocking(move || {
        let addr = std::net::SocketAddr::new(ip, 0);
        let (storage, len) = sockaddr(&addr);
        let mut host = [0 as libc::c_char; 1025];
        // SAFETY: `storage` holds a valid sockaddr of `len` bytes and `host`
        // is a writable buffer whose length is passed; getnameinfo writes a
        // NUL-terminated string within it.
        let rc = unsafe {
            libc::getnameinfo(
                &storage as *const libc::sockaddr_storage as *const libc::sockaddr,
                len,
                host.as_mut_ptr(),
                host.len() as libc::socklen_t,
                std::ptr::null_mut(),
                0,
                libc::NI_NAMEREQD,
            )
        };
        if rc != 0 {
            return None;
        }
        // SAFETY: getnameinfo succeeded, so `host` is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) };
        Some(name.to_string_lossy().to_ascii_lowercase())
    })
    .await
    .ok()
    .flatten()
}

fn sockaddr(addr: &std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data for which all-zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        std::net::SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: 0,
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;

    fn settings_for(line: &str) -> vfs::LocalFsSettings {
        let cfg = ServeConfig { dir: None, backend: Backend::Local, exports_file: None, settings: Settings::default() };
        let parsed = parse_exports(line).unwrap();
        localfs_settings(&cfg, &parsed.entries[0])
    }

    #[test]
    fn async_exports_do_not_flush_namespace_changes() {
        assert!(settings_for("/srv 127.0.0.1(rw,sync) 10.0.0.0/8(rw)\n").sync_metadata);
        assert!(!settings_for("/srv 127.0.0.1(rw,async) 10.0.0.0/8(rw,async)\n").sync_metadata);
        // Mixed: durable for everyone, since the backend is shared.
        assert!(settings_for("/srv 127.0.0.1(rw,async) 10.0.0.0/8(rw)\n").sync_metadata);
    }
}

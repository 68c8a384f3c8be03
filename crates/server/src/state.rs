//! The state directory: the key that signs file handles (so handles stay
//! valid across restarts and cannot be forged) and per-export backend state.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rand::RngCore;

const HANDLE_KEY_FILE: &str = "handle.key";
const HANDLE_KEY_LEN: usize = 32;

/// What the state directory can fail with, by file.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("creating state directory {}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is corrupt: expected {HANDLE_KEY_LEN} bytes, found {found}", path.display())]
    CorruptKey { path: PathBuf, found: usize },
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Default location: the system state directory for root, else the user's.
pub fn default_state_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        return PathBuf::from("/var/lib/nfsx");
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME") {
        return PathBuf::from(d).join("nfsx");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".local/state/nfsx"),
        None => PathBuf::from(".nfsx-state"),
    }
}

/// Loads the handle key, creating it (atomically, mode 0600, synced) on
/// first start.
pub fn handle_key(dir: &Path) -> Result<[u8; HANDLE_KEY_LEN], StateError> {
    std::fs::create_dir_all(dir).map_err(|source| StateError::CreateDir { dir: dir.to_path_buf(), source })?;
    let path = dir.join(HANDLE_KEY_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            return bytes.as_slice().try_into().map_err(|_| StateError::CorruptKey { path, found: bytes.len() })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(StateError::Read { path, source }),
    }
    let mut key = [0u8; HANDLE_KEY_LEN];
    rand::thread_rng().fill_bytes(&mut key);
    let tmp = dir.join(format!("{HANDLE_KEY_FILE}.tmp"));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true).mode(0o600);
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(&key)?;
        f.sync_all()
    });
    written.map_err(|source| StateError::Write { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, &path).map_err(|source| StateError::Write { path: path.clone(), source })?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| StateError::Write { path: dir.to_path_buf(), source })?;
    Ok(key)
}

/// A fresh write verifier for this server instance: it must differ from
/// the previous instance's so clients resend unstable data a restart may
/// have lost (RFC 1813 section 3.3.7).
pub fn boot_verifier() -> [u8; 8] {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let mut v = nanos.to_be_bytes();
    let mut salt = [0u8; 2];
    rand::thread_rng().fill_bytes(&mut salt);
    v[0] ^= salt[0];
    v[1] ^= salt[1];
    v
}

/// A stable 32-bit export id from the export's path (FNV-1a), so handles
/// name the same export after a restart or a reordering of the exports file.
pub fn export_id(path: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in path.as_bytes() {
        h ^= *b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    // u32::MAX names the NFSv4 pseudo file system in handles.
    h.min(u32::MAX - 1)
}

//! `nfs://host[:port]/export` targets: the nfsx client, optionally through
//! the delay proxy.

use std::path::PathBuf;
use std::sync::Arc;

use crate::target::{BenchError, Result, Target};

/// Client knobs a bench invocation may set.
#[derive(Debug, Clone, Default)]
pub struct NfsOptions {
    /// A TOML file of client settings (see docs/CONFIGURATION.md).
    pub client_config: Option<PathBuf>,
    /// Connections per client (like the `nconnect` mount option).
    pub nconnect: Option<usize>,
}

/// Opens an `nfs://` target (MOUNT happens here, so a wrong export fails
/// before any run starts).
pub fn open(url: &str, _opts: &NfsOptions) -> Result<Arc<dyn Target>> {
    Err(BenchError::Target(format!("{url}: nfs:// targets are not available yet")))
}

//! Kerberos for RPCSEC_GSS (`[gss]`): the service's key, and how client
//! principals become local users. The protocol is the core's
//! (`server_core::gss`); the mechanism is the system's GSS-API through the
//! `gss` crate.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use server_core::{Export, GssLimits};

/// `[gss]`: used when an export's `sec=` names krb5, krb5i or krb5p.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GssSettings {
    /// The keytab holding the service's key. Default: the system's
    /// (`KRB5_KTNAME`, else /etc/krb5.keytab).
    pub keytab: Option<PathBuf>,
    /// The service principal clients name, `nfs/HOST@REALM` (or the
    /// host-based `nfs@HOST`). Default: any key in the keytab, as
    /// rpc.svcgssd does.
    pub principal: Option<String>,
    /// Realms besides the default one whose users map to the local user
    /// of the same name (`alice@OTHER.REALM` acts as `alice`). In the
    /// default realm the mapping is krb5.conf's `auth_to_local`.
    pub realms: Vec<String>,
    /// The local user and group machine principals (`nfs/host`,
    /// `host/host`: a client's own credential) act as. Default 65534
    /// (nobody).
    pub machine_uid: u32,
    pub machine_gid: u32,
    /// The sequence window of each context (RFC 2203 5.3.3.1). Default 128.
    pub seq_window: u32,
    /// Contexts kept at once; beyond it the longest unused goes. Default 16384.
    pub max_contexts: usize,
    /// A context unused this long is dropped. Default 3600.
    pub context_idle_secs: u32,
    /// Largest context-creation token accepted, in bytes. Default 65536.
    pub max_token_bytes: u32,
    /// Clients whose refusals are remembered so that each kind is logged
    /// once per client. Default 4096.
    pub logged_clients: usize,
}

impl Default for GssSettings {
    fn default() -> Self {
        let l = GssLimits::default();
        GssSettings {
            keytab: None,
            principal: None,
            realms: Vec::new(),
            machine_uid: server_core::exports::NOBODY,
            machine_gid: server_core::exports::NOBODY,
            seq_window: l.seq_window,
            max_contexts: l.max_contexts,
            context_idle_secs: l.context_idle_secs,
            max_token_bytes: l.max_token_bytes,
            logged_clients: l.logged_clients,
        }
    }
}

impl GssSettings {
    pub fn limits(&self) -> GssLimits {
        GssLimits {
            seq_window: self.seq_window,
            max_contexts: self.max_contexts,
            context_idle_secs: self.context_idle_secs,
            max_token_bytes: self.max_token_bytes,
            logged_clients: self.logged_clients,
        }
    }
}

/// The service's Kerberos key cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("Kerberos ([gss] keytab {keytab}): {why}")]
pub struct GssError {
    keytab: String,
    why: String,
}

/// Whether some export offers a Kerberos flavor.
pub fn wanted(exports: &[Export]) -> bool {
    exports.iter().flat_map(|e| &e.rules).any(|r| r.options.sec.iter().any(|f| f.service().is_some()))
}

/// The mechanism and principal map of `s`; fails when the keytab holds
/// no usable key, so that a misconfigured server says so at start rather
/// than at its first Kerberos client.
pub fn mechanism(s: &GssSettings) -> Result<(Arc<dyn rpcsec::Acceptor>, Arc<dyn rpcsec::PrincipalMap>), GssError> {
    let acceptor = gss::KrbAcceptor::new(s.keytab.as_deref(), s.principal.as_deref()).map_err(|e| GssError {
        keytab: s.keytab.as_ref().map_or_else(|| "(the system's)".to_string(), |p| p.display().to_string()),
        why: e.to_string(),
    })?;
    let map = gss::NssMap::new().with_realms(s.realms.iter().cloned()).with_machine(s.machine_uid, s.machine_gid);
    tracing::info!(keytab = ?s.keytab, principal = ?s.principal, default_realm = ?map.default_realm(), "Kerberos (RPCSEC_GSS) on");
    Ok((Arc::new(acceptor), Arc::new(map)))
}

//! The server's side: a service credential from a keytab, and the contexts
//! it accepts.

use std::path::Path;
use std::time::Duration;

use libgssapi::context::{SecurityContext, ServerCtx};
use libgssapi::credential::{Cred, CredUsage};
use rpcsec::{major, AcceptStep, Accepting, Acceptor, Established, GssError};

use crate::raw::{acquire_cred_from, NameKind};
use crate::{display, gss_error, KrbContext};

/// The server's Kerberos credential: the keys of a keytab.
#[derive(Debug, Clone)]
pub struct KrbAcceptor {
    cred: Cred,
}

impl KrbAcceptor {
    /// The credential of `keytab` (`None`: KRB5_KTNAME, else krb5.conf's
    /// default keytab) for `service`: a host-based service name
    /// (`nfs@server.example.com`), or a Kerberos principal when it holds a
    /// `/` (`nfs/server.example.com@REALM`). With `None` a client may name
    /// any principal whose key is in the keytab (GSS_C_NO_NAME), which is
    /// how a server with several names (aliases, addresses) runs.
    ///
    /// Fails when the keytab cannot be read or has no key for `service`.
    pub fn new(keytab: Option<&Path>, service: Option<&str>) -> Result<KrbAcceptor, GssError> {
        let keytab = keytab
            .map(|p| p.to_str().ok_or_else(|| GssError::new(major::GSS_S_FAILURE, 0, "the keytab path is not UTF-8")))
            .transpose()?;
        let store: Vec<(&str, &str)> = keytab.map(|k| ("keytab", k)).into_iter().collect();
        let name = service.map(|s| (s, if s.contains('/') { NameKind::Principal } else { NameKind::HostService }));
        let cred = acquire_cred_from(name, CredUsage::Accept, &store)?;
        Ok(KrbAcceptor { cred })
    }
}

impl Acceptor for KrbAcceptor {
    fn start(&self) -> Box<dyn Accepting> {
        Box::new(KrbAccepting { ctx: ServerCtx::new(Some(self.cred.clone())) })
    }
}

struct KrbAccepting {
    ctx: ServerCtx,
}

impl Accepting for KrbAccepting {
    fn step(mut self: Box<Self>, token: &[u8]) -> Result<AcceptStep, GssError> {
        let out = self.ctx.step(token, None).map_err(gss_error)?;
        let token = out.map(|b| b.to_vec()).unwrap_or_default();
        if !self.ctx.is_complete() {
            return Ok(AcceptStep::Continue { next: self, token });
        }
        let principal = display(&self.ctx.source_name().map_err(gss_error)?)?;
        let lifetime = self.ctx.lifetime().map_err(gss_error)?;
        Ok(AcceptStep::Complete(Established {
            ctx: Box::new(KrbContext::from(self.ctx)),
            token,
            principal,
            lifetime: clamp(lifetime),
        }))
    }
}

/// GSS_C_INDEFINITE (all ones) reads as a lifetime of 136 years; a context
/// that says so is held to a day, as the KDC's tickets would be.
pub(crate) fn clamp(lifetime: Duration) -> Duration {
    lifetime.min(Duration::from_secs(24 * 3600))
}

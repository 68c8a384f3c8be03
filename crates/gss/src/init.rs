//! The client's side: a user's credential, and the contexts it starts.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};
use rpcsec::{major, GssError, InitStep, Initiating, Initiator};

use crate::accept::clamp;
use crate::raw::{acquire_cred_from, NameKind};
use crate::{gss_error, KrbContext};

/// What a context is asked for: the server proves itself, and messages can
/// be checksummed and encrypted. Not replay or sequence detection:
/// RPCSEC_GSS keeps its own window, and retransmitted or reordered calls
/// must not be refused by the mechanism (RFC 2203 section 5.2.2).
const FLAGS: CtxFlags = CtxFlags::GSS_C_MUTUAL_FLAG.union(CtxFlags::GSS_C_INTEG_FLAG).union(CtxFlags::GSS_C_CONF_FLAG);

/// A user's Kerberos credential, where the client's contexts come from.
#[derive(Debug, Clone)]
pub struct KrbInitiator {
    /// `None`: the default credential, looked up anew by each context.
    cred: Option<Cred>,
}

impl KrbInitiator {
    /// The default credential cache (KRB5CCNAME, else krb5.conf's) as it is
    /// when each context starts, so that a `kinit` in between counts.
    pub fn default_ccache() -> KrbInitiator {
        KrbInitiator { cred: None }
    }

    /// The tickets of credential cache `ccache` (`FILE:/tmp/krb5cc_1000`,
    /// `KEYRING:persistent:1000`, ...). Fails when it holds none.
    pub fn from_ccache(ccache: &str) -> Result<KrbInitiator, GssError> {
        let cred = acquire_cred_from(None, CredUsage::Initiate, &[("ccache", ccache)])?;
        Ok(KrbInitiator { cred: Some(cred) })
    }

    /// `principal` (`alice`, or `alice@REALM`) with its key from the client
    /// keytab `keytab`: the library gets and renews tickets itself. They
    /// are kept in a credential cache in this process's memory, never in
    /// the user's. (The memory cache lives as long as the process; an
    /// initiator is made once per user, not per context.)
    pub fn from_keytab(keytab: &Path, principal: &str) -> Result<KrbInitiator, GssError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let keytab =
            keytab.to_str().ok_or_else(|| GssError::new(major::GSS_S_FAILURE, 0, "the keytab path is not UTF-8"))?;
        let ccache = format!("MEMORY:nfsx-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let store = [("client_keytab", keytab), ("ccache", ccache.as_str())];
        let cred = acquire_cred_from(Some((principal, NameKind::Principal)), CredUsage::Initiate, &store)?;
        Ok(KrbInitiator { cred: Some(cred) })
    }
}

impl Initiator for KrbInitiator {
    fn start(&self, target: &str) -> Result<Box<dyn Initiating>, GssError> {
        let name = Name::new(target.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE)).map_err(gss_error)?;
        let ctx = ClientCtx::new(self.cred.clone(), name, FLAGS, Some(GSS_MECH_KRB5));
        Ok(Box::new(KrbInitiating { ctx }))
    }
}

struct KrbInitiating {
    ctx: ClientCtx,
}

impl Initiating for KrbInitiating {
    fn step(mut self: Box<Self>, token: Option<&[u8]>) -> Result<InitStep, GssError> {
        let out = self.ctx.step(token, None).map_err(gss_error)?;
        let token = out.map(|b| b.to_vec()).unwrap_or_default();
        if !self.ctx.is_complete() {
            return Ok(InitStep::Continue { next: self, token });
        }
        // The client sends its credentials' secrets only to a server that
        // proved it holds the service's key.
        let flags = self.ctx.flags().map_err(gss_error)?;
        if !flags.contains(FLAGS) {
            return Err(GssError::new(
                major::GSS_S_FAILURE,
                0,
                format!("the context lacks mutual authentication, integrity or confidentiality ({flags:?})"),
            ));
        }
        let lifetime = clamp(self.ctx.lifetime().map_err(gss_error)?);
        Ok(InitStep::Complete { ctx: Box::new(KrbContext::from(self.ctx)), token, lifetime })
    }
}

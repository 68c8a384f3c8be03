//! SECINFO (RFC 8881 section 18.29, RFC 7530 section 16.31): the flavors
//! that may be used for the named object, as its export's `sec=` lists
//! them: Kerberos as RPCSEC_GSS with the krb5 mechanism and its service,
//! AUTH_SYS followed by AUTH_NONE (callers squashed to the anonymous
//! user). A pseudo-file-system directory lists what any export offers.
//! The name must exist. In minor version 1 the current filehandle is
//! consumed (RFC 8881 section 2.6.3.1.1.8); in 4.0 it is kept.

use bytes::Bytes;
use proto::nfs4::*;
use rpcsec::{Flavor, Service, KRB5_OID_DER};
use vfs::Access;

use super::dirops::directory;
use super::status::stat4;
use super::{check_name, Compound, Fh};
use crate::auth::may;

const AUTH_NONE: u32 = 0;
const AUTH_SYS: u32 = 1;

/// The flavors admitted for `fh`, most preferred first.
pub(super) fn flavors(cx: &Compound, fh: Fh) -> SECINFO4resok {
    let mut sec: Vec<Flavor> = Vec::new();
    let peer = cx.call.peer;
    let mut add =
        |listed: &[Flavor]| sec.extend(listed.iter().filter(|f| !sec.contains(f)).copied().collect::<Vec<_>>());
    match fh {
        Fh::Obj { export_id, .. } => {
            if let Some(rule) = cx.core.export_by_id(export_id).and_then(|x| crate::exports::match_rule(&x.rules, peer))
            {
                add(&rule.options.sec);
            }
        }
        Fh::Pseudo(_) => {
            for x in cx.core.exports() {
                if let Some(rule) = crate::exports::match_rule(&x.rules, peer) {
                    add(&rule.options.sec);
                }
            }
        }
    }
    let mut out = Vec::with_capacity(sec.len() + 1);
    for f in sec {
        match f.service() {
            None => out.extend([secinfo4::default(AUTH_SYS), secinfo4::default(AUTH_NONE)]),
            Some(service) => out.push(secinfo4::RPCSEC_GSS(rpcsec_gss_info {
                oid: Bytes::from_static(KRB5_OID_DER),
                qop: 0,
                service: match service {
                    Service::None => rpc_gss_svc_t::RPC_GSS_SVC_NONE,
                    Service::Integrity => rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY,
                    Service::Privacy => rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY,
                },
            })),
        }
    }
    out
}

/// After a successful SECINFO or SECINFO_NO_NAME.
pub(super) fn consume_fh(cx: &mut Compound) {
    if cx.minor >= 1 {
        cx.cfh = None;
        cx.current_stateid = None;
    }
}

pub(super) fn run(cx: &mut Compound, args: SECINFO4args) -> Result<SECINFO4resok, nfsstat4> {
    let target = match cx.cfh()? {
        Fh::Pseudo(node) => {
            let name = check_name(cx.core, &args.name)?;
            cx.pseudo_lookup(node, name)?
        }
        fh => {
            let dir = cx.resolve(fh)?;
            directory(&dir, false)?;
            let name = check_name(cx.core, &args.name)?;
            if !may(&dir.attrs, &dir.creds, Access::LOOKUP) {
                return Err(nfsstat4::NFS4ERR_ACCESS);
            }
            dir.fs().lookup(dir.id, name).map_err(stat4)?;
            fh
        }
    };
    consume_fh(cx);
    Ok(flavors(cx, target))
}

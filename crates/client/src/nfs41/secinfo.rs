//! The security flavors a SECINFO reply lists, as the mount names them
//! (RFC 8881 section 18.29): Kerberos V5 under RPCSEC_GSS by its service,
//! AUTH_SYS; other mechanisms and flavors are not spoken here and left out.

use proto::nfs4::{rpc_gss_svc_t, secinfo4};
use rpcsec::{Flavor, Service, KRB5_OID_DER};

const AUTH_SYS: u32 = 1;

/// The flavors of `list` this client can speak, in the server's order.
pub(crate) fn flavors(list: &[secinfo4]) -> Vec<Flavor> {
    let mut out = Vec::new();
    for s in list {
        let f = match s {
            secinfo4::RPCSEC_GSS(g) if g.oid[..] == *KRB5_OID_DER => Flavor::of_service(match g.service {
                rpc_gss_svc_t::RPC_GSS_SVC_NONE => Service::None,
                rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY => Service::Integrity,
                rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY => Service::Privacy,
            }),
            secinfo4::default(AUTH_SYS) => Flavor::Sys,
            _ => continue,
        };
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proto::nfs4::rpcsec_gss_info;

    #[test]
    fn kerberos_and_sys_in_the_server_s_order() {
        let gss =
            |service| secinfo4::RPCSEC_GSS(rpcsec_gss_info { oid: Bytes::from_static(KRB5_OID_DER), qop: 0, service });
        let other_mech = secinfo4::RPCSEC_GSS(rpcsec_gss_info {
            oid: Bytes::from_static(b"\x2b\x06"),
            qop: 0,
            service: rpc_gss_svc_t::RPC_GSS_SVC_NONE,
        });
        let list = [
            gss(rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY),
            other_mech,
            gss(rpc_gss_svc_t::RPC_GSS_SVC_NONE),
            secinfo4::default(AUTH_SYS),
            secinfo4::default(0),
        ];
        assert_eq!(flavors(&list), vec![Flavor::Krb5p, Flavor::Krb5, Flavor::Sys]);
    }
}

//! The security flavors an export offers and a mount asks for, by the
//! names of exports(5) and nfs(5).

use proto::rpcsec_gss::{rpc_gss_service_t, RPCSEC_GSS_KRB5, RPCSEC_GSS_KRB5I, RPCSEC_GSS_KRB5P};

/// The Kerberos V5 mechanism's OID (1.2.840.113554.1.2.2) in DER, as
/// SECINFO carries it.
pub const KRB5_OID_DER: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02];

/// What RPCSEC_GSS protects in each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Service {
    /// The header only: the caller is authenticated.
    None,
    /// Arguments and results checksummed.
    Integrity,
    /// Arguments and results encrypted.
    Privacy,
}

impl Service {
    pub fn from_wire(v: u32) -> Option<Service> {
        Some(match v {
            1 => Service::None,
            2 => Service::Integrity,
            3 => Service::Privacy,
            _ => return None,
        })
    }

    pub fn to_wire(self) -> rpc_gss_service_t {
        match self {
            Service::None => rpc_gss_service_t::rpc_gss_svc_none,
            Service::Integrity => rpc_gss_service_t::rpc_gss_svc_integrity,
            Service::Privacy => rpc_gss_service_t::rpc_gss_svc_privacy,
        }
    }
}

/// A security flavor as exports(5) `sec=` and nfs(5) `sec=` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flavor {
    /// AUTH_SYS (and AUTH_NONE, which exports treat alike).
    Sys,
    Krb5,
    Krb5i,
    Krb5p,
}

impl Flavor {
    pub const ALL: [Flavor; 4] = [Flavor::Sys, Flavor::Krb5, Flavor::Krb5i, Flavor::Krb5p];

    pub fn parse(s: &str) -> Option<Flavor> {
        Some(match s {
            "sys" => Flavor::Sys,
            "krb5" => Flavor::Krb5,
            "krb5i" => Flavor::Krb5i,
            "krb5p" => Flavor::Krb5p,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Flavor::Sys => "sys",
            Flavor::Krb5 => "krb5",
            Flavor::Krb5i => "krb5i",
            Flavor::Krb5p => "krb5p",
        }
    }

    /// The Kerberos flavor giving `service`.
    pub fn of_service(service: Service) -> Flavor {
        match service {
            Service::None => Flavor::Krb5,
            Service::Integrity => Flavor::Krb5i,
            Service::Privacy => Flavor::Krb5p,
        }
    }

    /// The RPCSEC_GSS service, for the Kerberos flavors.
    pub fn service(self) -> Option<Service> {
        match self {
            Flavor::Sys => None,
            Flavor::Krb5 => Some(Service::None),
            Flavor::Krb5i => Some(Service::Integrity),
            Flavor::Krb5p => Some(Service::Privacy),
        }
    }

    /// The number MOUNT's reply lists (RFC 2623 section 2.2 pseudo-flavors;
    /// AUTH_SYS is 1).
    pub fn pseudo_flavor(self) -> u32 {
        match self {
            Flavor::Sys => 1,
            Flavor::Krb5 => RPCSEC_GSS_KRB5,
            Flavor::Krb5i => RPCSEC_GSS_KRB5I,
            Flavor::Krb5p => RPCSEC_GSS_KRB5P,
        }
    }

    pub fn from_pseudo_flavor(v: u32) -> Option<Flavor> {
        Flavor::ALL.into_iter().find(|f| f.pseudo_flavor() == v)
    }
}

impl std::fmt::Display for Flavor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_round_trip() {
        for f in Flavor::ALL {
            assert_eq!(Flavor::parse(f.name()), Some(f));
            assert_eq!(Flavor::from_pseudo_flavor(f.pseudo_flavor()), Some(f));
            if let Some(s) = f.service() {
                assert_eq!(Flavor::of_service(s), f);
                assert_eq!(Service::from_wire(s.to_wire() as u32), Some(s));
            }
        }
        assert_eq!(Flavor::parse("krb4"), None);
        assert_eq!(Service::from_wire(0), None);
    }
}

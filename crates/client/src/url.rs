//! `nfs://host[:port]/export[?version=3|4.1|4.2]` URLs. The port, when given,
//! is where the server's portmapper answers (nfsx serves portmap, MOUNT
//! and NFS on one port); without it the client asks the portmapper on 111
//! and falls back to 2049 for everything. `version` picks the protocol:
//! NFSv3, NFSv4.1 or NFSv4.2; without it the client speaks NFSv4.2 where
//! the server offers it, then NFSv4.1, then NFSv3, as the Linux client
//! negotiates.
//! `delegations=0` (NFSv4.1) makes the client ask for no delegation,
//! overriding the settings file; `dir_delegations=0` for no directory
//! delegation. `tls=1` protects every connection with
//! RPC-with-TLS (RFC 9289) and refuses a server that does not offer it.
//! `sec=krb5|krb5i|krb5p` makes the NFS calls under Kerberos V5
//! (RPCSEC_GSS: authentication, integrity, privacy), with the caller's
//! credential cache or the client settings' keytab; `sec=sys` (the
//! default) under AUTH_SYS.

use crate::error::{Error, Result};

/// The NFS version a URL asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// NFSv4.2 where the server offers it (and the export is found
    /// there), else NFSv4.1, else NFSv3.
    #[default]
    Auto,
    V3,
    V41,
    V42,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NfsUrl {
    /// Host name or address, without IPv6 brackets.
    pub host: String,
    pub port: Option<u16>,
    /// The export path as MOUNT expects it, starting with `/`.
    pub export: String,
    pub version: Version,
    /// `delegations=0|1`: overrides `[v41] delegations`.
    pub delegations: Option<bool>,
    /// `dir_delegations=0|1`: overrides `[v41] dir_delegations`.
    pub dir_delegations: Option<bool>,
    /// `tls=1`: RPC-with-TLS on every connection to the server.
    pub tls: bool,
    /// `sec=`: the security flavor of NFS calls; `None` is AUTH_SYS.
    pub sec: Option<rpcsec::Flavor>,
}

impl NfsUrl {
    pub fn parse(url: &str) -> Result<NfsUrl> {
        let bad = |why: &str| Error::Url { url: url.to_string(), why: why.to_string() };
        let rest = url.strip_prefix("nfs://").ok_or_else(|| bad("must start with nfs://"))?;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, q.split('#').next().unwrap_or_default()),
            None => (rest.split('#').next().unwrap_or_default(), ""),
        };
        let mut version = Version::Auto;
        let mut delegations = None;
        let mut dir_delegations = None;
        let mut tls = false;
        let mut sec = None;
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            match kv.split_once('=') {
                Some(("version", "3")) => version = Version::V3,
                Some(("version", "4.1")) => version = Version::V41,
                Some(("version", "4.2")) => version = Version::V42,
                Some(("version", v)) => return Err(bad(&format!("version {v} is not spoken (3, 4.1 or 4.2)"))),
                Some(("delegations", "0")) => delegations = Some(false),
                Some(("delegations", "1")) => delegations = Some(true),
                Some(("delegations", v)) => return Err(bad(&format!("delegations={v}: 0 or 1"))),
                Some(("dir_delegations", "0")) => dir_delegations = Some(false),
                Some(("dir_delegations", "1")) => dir_delegations = Some(true),
                Some(("dir_delegations", v)) => return Err(bad(&format!("dir_delegations={v}: 0 or 1"))),
                Some(("tls", "0")) => tls = false,
                Some(("tls", "1")) => tls = true,
                Some(("tls", v)) => return Err(bad(&format!("tls={v}: 0 or 1"))),
                Some(("sec", v)) => match rpcsec::Flavor::parse(v) {
                    Some(f) => sec = Some(f),
                    None => return Err(bad(&format!("sec={v}: sys, krb5, krb5i or krb5p"))),
                },
                _ => {
                    return Err(bad(&format!(
                        "unknown option {kv:?} (known: version, delegations, dir_delegations, tls, sec)"
                    )))
                }
            }
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed [ in host"))?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| bad("port must be 1-65535"))?),
            None => None,
        };
        let export = if path.len() > 1 { path.trim_end_matches('/') } else { path };
        Ok(NfsUrl {
            host: host.to_string(),
            port,
            export: export.to_string(),
            version,
            delegations,
            dir_delegations,
            tls,
            sec,
        })
    }
}

impl std::fmt::Display for NfsUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.port {
            Some(p) => write!(f, "nfs://{host}:{p}{}", self.export)?,
            None => write!(f, "nfs://{host}{}", self.export)?,
        }
        let mut query = Vec::new();
        match self.version {
            Version::Auto => {}
            Version::V3 => query.push("version=3".to_string()),
            Version::V41 => query.push("version=4.1".to_string()),
            Version::V42 => query.push("version=4.2".to_string()),
        }
        if let Some(d) = self.delegations {
            query.push(format!("delegations={}", u8::from(d)));
        }
        if let Some(d) = self.dir_delegations {
            query.push(format!("dir_delegations={}", u8::from(d)));
        }
        if self.tls {
            query.push("tls=1".to_string());
        }
        if let Some(f) = self.sec {
            query.push(format!("sec={f}"));
        }
        if !query.is_empty() {
            write!(f, "?{}", query.join("&"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_ports_and_exports() {
        let u = NfsUrl::parse("nfs://127.0.0.1:2049/srv/data/").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.export.as_str()), ("127.0.0.1", Some(2049), "/srv/data"));
        let u = NfsUrl::parse("nfs://[::1]/export?version=3").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.export.as_str()), ("::1", None, "/export"));
        assert_eq!(NfsUrl::parse("nfs://server").unwrap().export, "/");
        assert_eq!(NfsUrl::parse("nfs://[::1]:20/x").unwrap().to_string(), "nfs://[::1]:20/x");
        let u = NfsUrl::parse("nfs://h:20/x?version=4.1").unwrap();
        assert_eq!((u.version, u.export.as_str()), (Version::V41, "/x"));
        assert_eq!(u.to_string(), "nfs://h:20/x?version=4.1");
        assert_eq!(NfsUrl::parse("nfs://h/x?version=3").unwrap().version, Version::V3);
        assert_eq!(NfsUrl::parse("nfs://h/x?version=3").unwrap().to_string(), "nfs://h/x?version=3");
        assert_eq!(NfsUrl::parse("nfs://h/x").unwrap().version, Version::Auto);
        let u = NfsUrl::parse("nfs://h/x?version=4.1&dir_delegations=0").unwrap();
        assert_eq!(u.dir_delegations, Some(false));
        assert_eq!(u.to_string(), "nfs://h/x?version=4.1&dir_delegations=0");
        let u = NfsUrl::parse("nfs://h/x?version=4.1&delegations=0").unwrap();
        assert_eq!((u.version, u.delegations), (Version::V41, Some(false)));
        assert_eq!(u.to_string(), "nfs://h/x?version=4.1&delegations=0");
        assert!(NfsUrl::parse("nfs://h/x?delegations=maybe").is_err());
        let u = NfsUrl::parse("nfs://h/x?sec=krb5p&version=4.1").unwrap();
        assert_eq!(u.sec, Some(rpcsec::Flavor::Krb5p));
        assert_eq!(u.to_string(), "nfs://h/x?version=4.1&sec=krb5p");
        assert!(NfsUrl::parse("nfs://h/x?sec=krb4").is_err());
        for bad in [
            "http://x/y",
            "nfs:///x",
            "nfs://h:0/x",
            "nfs://h:99999/x",
            "nfs://[::1/x",
            "nfs://h/x?version=4.0",
            "nfs://h/x?vers=3",
        ] {
            assert!(NfsUrl::parse(bad).is_err(), "{bad}");
        }
    }
}

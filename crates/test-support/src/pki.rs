//! A throwaway certificate authority for RPC-with-TLS tests: the CA, a
//! server certificate for localhost and 127.0.0.1, an expired one, a
//! client certificate and an unrelated CA, as PEM files in a temporary
//! directory.

use std::path::PathBuf;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

/// The authority and what it signed. Files: `ca.pem`, `server.pem` and
/// `server.key`, `expired.pem` and `expired.key`, `client.pem` and
/// `client.key`, `other-ca.pem`.
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        let pki = Pki { dir: tempfile::tempdir().expect("a temporary directory") };
        let (ca, ca_key) = authority();
        pki.write("ca.pem", &ca.pem());
        let (cert, key) = leaf(&["localhost", "127.0.0.1"], &ca, &ca_key, false);
        pki.write("server.pem", &cert);
        pki.write("server.key", &key);
        let (cert, key) = leaf(&["localhost", "127.0.0.1"], &ca, &ca_key, true);
        pki.write("expired.pem", &cert);
        pki.write("expired.key", &key);
        let (cert, key) = leaf(&["client.test"], &ca, &ca_key, false);
        pki.write("client.pem", &cert);
        pki.write("client.key", &key);
        let (other, _) = authority();
        pki.write("other-ca.pem", &other.pem());
        pki
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join(name), text).expect("writing a PEM file");
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Default for Pki {
    fn default() -> Self {
        Pki::new()
    }
}

fn authority() -> (rcgen::Certificate, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(rcgen::DnType::CommonName, "nfsx test CA");
    let key = KeyPair::generate().expect("a CA key");
    (p.self_signed(&key).expect("a self-signed CA"), key)
}

fn leaf(names: &[&str], ca: &rcgen::Certificate, ca_key: &KeyPair, expired: bool) -> (String, String) {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect("leaf parameters");
    if expired {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = KeyPair::generate().expect("a leaf key");
    (p.signed_by(&key, ca, ca_key).expect("a signed certificate").pem(), key.serialize_pem())
}

//! A Kerberos realm for the RPCSEC_GSS tests: scripts/kdc.sh started in a
//! temporary directory and stopped when the [`Realm`] is dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts").join(name)
}

/// Whether the suite runs under CI (`CI` set and not 0 or false): there a
/// realm that cannot start fails the test instead of skipping it.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// A realm started by scripts/kdc.sh, stopped when dropped.
pub struct Realm {
    /// The realm's directory (its krb5.conf, keytabs, passwd and group).
    pub dir: PathBuf,
    _tmp: tempfile::TempDir,
    /// The keytab with nfs/localhost and nfs/127.0.0.1 (KRB5_KTNAME).
    pub server_keytab: String,
    /// The keytab with alice and bob (KRB5_CLIENT_KTNAME).
    pub client_keytab: String,
}

impl Realm {
    /// Starts a realm and points this process at it (KRB5_CONFIG, which
    /// the processes the test starts inherit). `None`, said on stderr,
    /// where no KDC can be had outside CI.
    pub fn start() -> Option<Realm> {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = tmp.path().join("realm");
        let out = Command::new(script("kdc.sh")).arg("start").arg(&dir).output().expect("run scripts/kdc.sh");
        match out.status.code() {
            Some(0) => {}
            Some(3) if !ci() => {
                eprintln!("skipped: no KDC here ({})", String::from_utf8_lossy(&out.stderr).trim());
                return None;
            }
            _ => panic!("scripts/kdc.sh start failed: {}", String::from_utf8_lossy(&out.stderr)),
        }
        let vars: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        let var = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).expect(k);
        std::env::set_var("KRB5_CONFIG", var("KRB5_CONFIG"));
        Some(Realm { server_keytab: var("KRB5_KTNAME"), client_keytab: var("KRB5_CLIENT_KTNAME"), dir, _tmp: tmp })
    }

    /// The environment that makes a server map alice to uid 20001 and bob
    /// to 20002: nss_wrapper with the realm's passwd and group files.
    pub fn nss_env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), "libnss_wrapper.so".into()),
            ("NSS_WRAPPER_PASSWD".into(), self.dir.join("passwd").display().to_string()),
            ("NSS_WRAPPER_GROUP".into(), self.dir.join("group").display().to_string()),
        ]
    }
}

impl Drop for Realm {
    fn drop(&mut self) {
        let _ = Command::new(script("kdc.sh")).arg("stop").arg(&self.dir).output();
    }
}

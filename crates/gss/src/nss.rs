//! Principals to local identities through the name service (passwd and
//! group: files, LDAP, sssd, whatever nsswitch.conf says), as rpc.svcgssd
//! and gssproxy map them.

use std::ffi::CString;

use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_KRB5_PRINCIPAL};
use nix::unistd::{getgrouplist, User};
use rpcsec::{Identity, PrincipalMap};

use crate::display;

/// uid and gid 65534, `nobody` and `nogroup` on Debian.
const NOBODY: u32 = 65534;

/// Users of the local realms as the local accounts of the same name:
///
/// - `user@REALM` with REALM the default realm: the local name krb5.conf's
///   `auth_to_local` rules give (gss_localname(3); by default the name
///   part), then getpwnam and getgrouplist;
/// - `user@REALM` with REALM one of the extra realms: the name part, then
///   the same;
/// - a host or service principal of those realms (`nfs/host@REALM`, any
///   name with an instance): the machine identity, `nobody` unless set;
/// - anything else, and users without an account: no identity.
///
/// Every call asks the name service; there is no cache (a server asks once
/// per context, not per call).
#[derive(Debug, Clone)]
pub struct NssMap {
    default_realm: Option<String>,
    extra_realms: Vec<String>,
    machine: Identity,
}

impl Default for NssMap {
    fn default() -> NssMap {
        NssMap::new()
    }
}

impl NssMap {
    /// The map of the default realm of the Kerberos configuration
    /// (KRB5_CONFIG, else /etc/krb5.conf), read now.
    pub fn new() -> NssMap {
        NssMap {
            default_realm: default_realm(),
            extra_realms: Vec::new(),
            machine: Identity { uid: NOBODY, gid: NOBODY, gids: Vec::new() },
        }
    }

    /// Users of `realms` map too, by their name part.
    pub fn with_realms<I, S>(mut self, realms: I) -> NssMap
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_realms.extend(realms.into_iter().map(Into::into));
        self
    }

    /// Host and service principals act as `uid`:`gid`.
    pub fn with_machine(mut self, uid: u32, gid: u32) -> NssMap {
        self.machine = Identity { uid, gid, gids: Vec::new() };
        self
    }

    /// The realm found in the Kerberos configuration, if any.
    pub fn default_realm(&self) -> Option<&str> {
        self.default_realm.as_deref()
    }

    fn is_default_realm(&self, realm: &str) -> bool {
        self.default_realm.as_deref() == Some(realm)
    }
}

impl PrincipalMap for NssMap {
    fn identity(&self, principal: &str) -> Option<Identity> {
        let (name, realm) = split(principal)?;
        let extra = self.extra_realms.iter().any(|r| r == realm);
        if !extra && !self.is_default_realm(realm) {
            return None;
        }
        if has_instance(name) {
            return Some(self.machine.clone());
        }
        let user = if extra {
            // An escaped name (`a\@b`) is no account name.
            (!name.contains('\\')).then(|| name.to_string())?
        } else {
            local_name(principal)?
        };
        lookup(&user)
    }
}

/// `name@REALM` split at the realm's `@`, the last one not escaped with a
/// backslash, as krb5_unparse_name(3) writes it.
fn split(principal: &str) -> Option<(&str, &str)> {
    let mut at = None;
    let mut escaped = false;
    for (i, c) in principal.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '@' => at = Some(i),
            _ => {}
        }
    }
    let at = at?;
    let (name, realm) = (&principal[..at], &principal[at + 1..]);
    (!name.is_empty() && !realm.is_empty()).then_some((name, realm))
}

/// Whether the name part has more than one component (`nfs/host`).
fn has_instance(name: &str) -> bool {
    let mut escaped = false;
    name.chars().any(|c| match c {
        _ if escaped => {
            escaped = false;
            false
        }
        '\\' => {
            escaped = true;
            false
        }
        c => c == '/',
    })
}

/// The realm the mechanism appends to a name without one: "nfsx" parsed as
/// a Kerberos principal and displayed again reads `nfsx@REALM`.
fn default_realm() -> Option<String> {
    let name = Name::new(b"nfsx", Some(GSS_NT_KRB5_PRINCIPAL)).ok()?;
    let shown = display(&name.canonicalize(Some(GSS_MECH_KRB5)).ok()?).ok()?;
    let realm = shown.strip_prefix("nfsx@")?;
    (!realm.is_empty()).then(|| realm.to_string())
}

/// The local account name of `principal` by krb5.conf's auth_to_local
/// rules, what gssproxy asks.
fn local_name(principal: &str) -> Option<String> {
    let name = Name::new(principal.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL)).ok()?;
    let local = name.local_name(Some(GSS_MECH_KRB5)).ok()?;
    String::from_utf8(local.to_vec()).ok().filter(|s| !s.is_empty())
}

fn lookup(user: &str) -> Option<Identity> {
    let account = match User::from_name(user) {
        Ok(Some(u)) => u,
        Ok(None) => return None,
        Err(e) => {
            tracing::warn!(user, error = %e, "looking up the account failed");
            return None;
        }
    };
    let gid = account.gid;
    let gids = match CString::new(user).map(|c| getgrouplist(&c, gid)) {
        Ok(Ok(groups)) => groups.into_iter().filter(|g| *g != gid).map(|g| g.as_raw()).collect(),
        Ok(Err(e)) => {
            // Without its groups the user would act with fewer rights than
            // it has: no identity rather than a partial one.
            tracing::warn!(user, error = %e, "looking up the account's groups failed");
            return None;
        }
        Err(_) => return None,
    };
    Some(Identity { uid: account.uid.as_raw(), gid: gid.as_raw(), gids })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_split_at_the_realm() {
        assert_eq!(split("alice@EXAMPLE.COM"), Some(("alice", "EXAMPLE.COM")));
        assert_eq!(split("nfs/host.example.com@EXAMPLE.COM"), Some(("nfs/host.example.com", "EXAMPLE.COM")));
        assert_eq!(split(r"a\@b@EXAMPLE.COM"), Some((r"a\@b", "EXAMPLE.COM")));
        assert_eq!(split(r"alice\@EXAMPLE.COM"), None);
        assert_eq!(split("alice"), None);
        assert_eq!(split("@EXAMPLE.COM"), None);
        assert_eq!(split("alice@"), None);
    }

    #[test]
    fn instances_are_unescaped_slashes() {
        assert!(has_instance("nfs/host"));
        assert!(has_instance("host/a.b/c"));
        assert!(!has_instance("alice"));
        assert!(!has_instance(r"a\/b"));
        assert!(has_instance(r"a\\/b"));
    }

    #[test]
    fn foreign_realms_have_no_identity() {
        let map = NssMap { default_realm: Some("A.TEST".into()), extra_realms: vec!["B.TEST".into()], ..NssMap::new() };
        assert_eq!(map.identity("root@OTHER.TEST"), None);
        assert_eq!(map.identity("nfs/host@OTHER.TEST"), None);
        assert_eq!(map.identity("nfs/host@B.TEST").map(|i| i.uid), Some(NOBODY));
        assert_eq!(map.clone().with_machine(7, 8).identity("host/h@A.TEST").map(|i| (i.uid, i.gid)), Some((7, 8)));
        // root exists everywhere, so the extra realm's users are looked up.
        assert_eq!(map.identity("root@B.TEST").map(|i| i.uid), Some(0));
        assert_eq!(map.identity("no-such-user-nfsx@B.TEST"), None);
    }
}

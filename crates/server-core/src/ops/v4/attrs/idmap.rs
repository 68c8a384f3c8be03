//! `owner` / `owner_group` strings (RFC 8881 section 5.9): `user@domain`
//! from the host's user and group databases, or bare numeric ids, per
//! `OwnerFormat` and the caller's flavor: a Kerberos caller always gets
//! names (numeric strings are for AUTH_SYS, RFC 7530 section 5.9, and
//! Kerberos clients map names through their own id mapper). The names
//! come from the [`NameSource`] the server installs (its NSS databases,
//! where directory users live too); without one, /etc/passwd and
//! /etc/group, read once. Numeric strings are always accepted from
//! clients.

use std::collections::HashMap;
use std::sync::OnceLock;

use proto::nfs4::nfsstat4;

use crate::state::{Nfs4Settings, OwnerFormat};

/// Where owner names come from.
pub trait NameSource: Send + Sync {
    /// The name of user `id` (group `id` with `group`).
    fn name(&self, id: u32, group: bool) -> Option<String>;
    /// The id of user (or group) `name`.
    fn id(&self, name: &str, group: bool) -> Option<u32>;
}

static SOURCE: OnceLock<Box<dyn NameSource>> = OnceLock::new();

/// Makes `source` the one owner names come from, for the process (the
/// host's databases are the process's too). The first call wins; later
/// ones return false.
pub fn use_name_source(source: Box<dyn NameSource>) -> bool {
    SOURCE.set(source).is_ok()
}

fn name_of(id: u32, group: bool) -> Option<String> {
    match SOURCE.get() {
        Some(s) => s.name(id, group),
        None => (if group { groups() } else { users() }).names.get(&id).cloned(),
    }
}

fn id_of(name: &str, group: bool) -> Option<u32> {
    match SOURCE.get() {
        Some(s) => s.id(name, group),
        None => (if group { groups() } else { users() }).ids.get(name).copied(),
    }
}

/// Whether owners go out as names: the setting says so, or the caller is
/// Kerberos's.
pub(crate) fn by_name(s: &Nfs4Settings, auth: &crate::rpc::Auth) -> bool {
    s.owner_format == OwnerFormat::Name || matches!(auth, crate::rpc::Auth::Gss(_))
}

#[derive(Default)]
struct Table {
    names: HashMap<u32, String>,
    ids: HashMap<String, u32>,
}

impl Table {
    /// `name:password:id:...` lines; the first line for a name or id wins.
    fn parse(text: &str) -> Table {
        let mut t = Table::default();
        for line in text.lines() {
            let mut f = line.split(':');
            let (Some(name), Some(_), Some(id)) = (f.next(), f.next(), f.next()) else { continue };
            let Ok(id) = id.trim().parse::<u32>() else { continue };
            if name.is_empty() || name.starts_with('#') {
                continue;
            }
            t.names.entry(id).or_insert_with(|| name.to_owned());
            t.ids.entry(name.to_owned()).or_insert(id);
        }
        t
    }

    fn load(path: &str) -> Table {
        match std::fs::read_to_string(path) {
            Ok(text) => Table::parse(&text),
            Err(e) => {
                tracing::warn!("cannot read {path} for NFSv4 owner names, sending numeric ids: {e}");
                Table::default()
            }
        }
    }
}

fn users() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::load("/etc/passwd"))
}

fn groups() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table::load("/etc/group"))
}

/// The wire form of uid (or gid with `group`).
#[cfg(test)]
pub(crate) fn to_name(s: &Nfs4Settings, id: u32, group: bool) -> String {
    let mut e = xdr::Encoder::new();
    encode_name(&mut e, s, s.owner_format == OwnerFormat::Name, id, group);
    let name = xdr::Decoder::new(e.into_bytes()).opaque_var(u32::MAX).unwrap_or_default();
    String::from_utf8_lossy(&name).into_owned()
}

/// The wire form of uid (or gid with `group`) as an XDR string in `e`:
/// `name@domain` with `by_name` (see [`by_name`]) when the id has a name,
/// else a numeric id without an allocation, as a READDIR writes two per
/// entry.
pub(crate) fn encode_name(e: &mut xdr::Encoder, s: &Nfs4Settings, by_name: bool, id: u32, group: bool) {
    if by_name {
        if let Some(name) = name_of(id, group) {
            return e.opaque_var(format!("{name}@{}", s.domain).as_bytes());
        }
    }
    let mut digits = [0u8; 10];
    let mut rest = &mut digits[..];
    // u32::MAX has ten digits: the write always fits.
    let _ = std::io::Write::write_fmt(&mut rest, format_args!("{id}"));
    let n = 10 - rest.len();
    e.opaque_var(&digits[..n]);
}

/// A client's owner string: a decimal id, or `name@domain` in our domain
/// with a name the host knows; anything else is NFS4ERR_BADOWNER.
pub(crate) fn from_name(s: &Nfs4Settings, owner: &[u8], group: bool) -> Result<u32, nfsstat4> {
    let owner = std::str::from_utf8(owner).map_err(|_| nfsstat4::NFS4ERR_INVAL)?;
    // An empty principal is malformed, not unknown (RFC 8881 5.9).
    if owner.is_empty() {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    if !owner.is_empty() && owner.bytes().all(|b| b.is_ascii_digit()) {
        return owner.parse::<u32>().map_err(|_| nfsstat4::NFS4ERR_BADOWNER);
    }
    let Some((name, domain)) = owner.rsplit_once('@') else {
        return Err(nfsstat4::NFS4ERR_BADOWNER);
    };
    if !domain.eq_ignore_ascii_case(&s.domain) {
        return Err(nfsstat4::NFS4ERR_BADOWNER);
    }
    id_of(name, group).ok_or(nfsstat4::NFS4ERR_BADOWNER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_passwd_lines() {
        let t = Table::parse(
            "root:x:0:0:root:/root:/bin/sh\n# comment\nbad\nalice:x:1000:1000::/home/a:/bin/sh\nalias:x:1000:1\n",
        );
        assert_eq!(t.names.get(&0).map(String::as_str), Some("root"));
        assert_eq!(t.names.get(&1000).map(String::as_str), Some("alice"));
        assert_eq!(t.ids.get("alias"), Some(&1000));
        assert_eq!(t.ids.len(), 3);
    }

    #[test]
    fn numeric_and_foreign_owners() {
        let s = Nfs4Settings::default();
        assert_eq!(from_name(&s, b"1234", false), Ok(1234));
        assert_eq!(from_name(&s, b"99999999999", false), Err(nfsstat4::NFS4ERR_BADOWNER));
        assert_eq!(from_name(&s, b"root@elsewhere.org", false), Err(nfsstat4::NFS4ERR_BADOWNER));
        assert_eq!(from_name(&s, b"", false), Err(nfsstat4::NFS4ERR_INVAL));
        let n = Nfs4Settings { owner_format: OwnerFormat::Numeric, ..Nfs4Settings::default() };
        assert_eq!(to_name(&n, 0, false), "0");
        assert_eq!(to_name(&n, 1000, true), "1000");
        assert_eq!(to_name(&n, u32::MAX, false), "4294967295");
        let named = Nfs4Settings { owner_format: OwnerFormat::Name, ..Nfs4Settings::default() };
        assert_eq!(to_name(&named, 0, false), "root@localdomain");
    }
}

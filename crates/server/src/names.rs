//! NFSv4 owner names (`alice@domain`) from the host's user and group
//! databases through NSS (files, LDAP, sssd: whatever nsswitch.conf says),
//! where the users Kerberos principals map to live too. Answers, found or
//! not, are kept for `owner_cache_secs`, so that a READDIR of many files
//! of few owners asks the databases once per owner.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nix::unistd::{Gid, Group, Uid, User};
use parking_lot::Mutex;
use server_core::NameSource;

/// Names and ids looked up, with when.
#[derive(Default)]
struct Cache {
    names: HashMap<(u32, bool), (Option<String>, Instant)>,
    ids: HashMap<(String, bool), (Option<u32>, Instant)>,
}

pub struct NssNames {
    ttl: Duration,
    max_entries: usize,
    cache: Mutex<Cache>,
}

impl NssNames {
    pub fn new(ttl: Duration, max_entries: usize) -> NssNames {
        NssNames { ttl, max_entries: max_entries.max(1), cache: Mutex::default() }
    }

    fn fresh<T: Clone>(&self, at: Option<&(T, Instant)>) -> Option<T> {
        at.filter(|(_, when)| when.elapsed() < self.ttl).map(|(v, _)| v.clone())
    }
}

fn lookup_name(id: u32, group: bool) -> Option<String> {
    let found = if group {
        Group::from_gid(Gid::from_raw(id)).map(|g| g.map(|g| g.name))
    } else {
        User::from_uid(Uid::from_raw(id)).map(|u| u.map(|u| u.name))
    };
    found.unwrap_or_else(|e| {
        tracing::warn!(id, group, error = %e, "looking up an owner name failed; sending the number");
        None
    })
}

fn lookup_id(name: &str, group: bool) -> Option<u32> {
    let found = if group {
        Group::from_name(name).map(|g| g.map(|g| g.gid.as_raw()))
    } else {
        User::from_name(name).map(|u| u.map(|u| u.uid.as_raw()))
    };
    found.unwrap_or_else(|e| {
        tracing::warn!(name, group, error = %e, "looking up an owner failed");
        None
    })
}

impl NameSource for NssNames {
    fn name(&self, id: u32, group: bool) -> Option<String> {
        if let Some(v) = self.fresh(self.cache.lock().names.get(&(id, group))) {
            return v;
        }
        // Looked up outside the lock: the name service may be a network
        // round trip away.
        let v = lookup_name(id, group);
        let mut c = self.cache.lock();
        if c.names.len() >= self.max_entries {
            c.names.clear();
        }
        c.names.insert((id, group), (v.clone(), Instant::now()));
        v
    }

    fn id(&self, name: &str, group: bool) -> Option<u32> {
        let key = (name.to_owned(), group);
        if let Some(v) = self.fresh(self.cache.lock().ids.get(&key)) {
            return v;
        }
        let v = lookup_id(name, group);
        let mut c = self.cache.lock();
        if c.ids.len() >= self.max_entries {
            c.ids.clear();
        }
        c.ids.insert(key, (v, Instant::now()));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_found_both_ways_and_answers_are_kept() {
        let n = NssNames::new(Duration::from_secs(60), 2);
        assert_eq!(n.name(0, false).as_deref(), Some("root"));
        assert_eq!(n.id("root", false), Some(0));
        assert_eq!(n.name(0, true).as_deref(), Some("root"));
        assert_eq!(n.id("no-such-user-nfsx", false), None);
        assert_eq!(n.cache.lock().names.len(), 2);
        assert_eq!(n.name(0, false).as_deref(), Some("root"), "from the cache");
        // Past the bound the cache starts over.
        assert_eq!(n.name(4_000_000_000, false), None);
        assert_eq!(n.cache.lock().names.len(), 1);
    }
}

//! The delegations a client holds (RFC 8881 section 10.2), by file handle.
//!
//! While a delegation is held the client may trust what it has cached of
//! the file without asking (read), and keep writes to itself (write). A
//! recall marks it: no new use starts under it, and the client returns it
//! once what it cached is written back.

use std::collections::HashMap;
use std::hash::Hash;

use proto::nfs4::stateid4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelegationKind {
    Read,
    Write,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delegation {
    pub stateid: stateid4,
    pub kind: DelegationKind,
    /// The server asked for it back (CB_RECALL).
    pub recalled: bool,
}

#[derive(Debug)]
pub struct Delegations<K> {
    held: HashMap<K, Delegation>,
}

impl<K: Hash + Eq + Clone> Default for Delegations<K> {
    fn default() -> Self {
        Delegations { held: HashMap::new() }
    }
}

impl<K: Hash + Eq + Clone> Delegations<K> {
    /// An OPEN granted a delegation. A second grant for the same file (a
    /// write delegation after a read one) replaces the first, which the
    /// caller returns: `Some(old)`.
    pub fn granted(&mut self, key: K, stateid: stateid4, kind: DelegationKind) -> Option<Delegation> {
        let other = stateid.other;
        let new = Delegation { stateid, kind, recalled: false };
        match self.held.insert(key, new) {
            Some(old) if old.stateid.other != other => Some(old),
            _ => None,
        }
    }

    /// The delegation usable for `key` now (not being recalled).
    pub fn usable(&self, key: &K) -> Option<&Delegation> {
        self.held.get(key).filter(|d| !d.recalled)
    }

    /// The stateid of `key`'s delegation, recalled or not.
    pub fn usable_or_recalled(&self, key: &K) -> Option<stateid4> {
        self.held.get(key).map(|d| d.stateid.clone())
    }

    /// Whether `key` may be written under a delegation.
    pub fn may_write(&self, key: &K) -> bool {
        self.usable(key).is_some_and(|d| d.kind == DelegationKind::Write)
    }

    /// CB_RECALL: the file whose delegation has this `stateid`. None when
    /// the client holds no such delegation (already returned, or never
    /// granted): the caller answers NFS4ERR_BADHANDLE or OK as RFC 8881
    /// section 20.2.3 allows.
    pub fn recall(&mut self, stateid: &stateid4) -> Option<K> {
        let (k, d) = self.held.iter_mut().find(|(_, d)| d.stateid.other == stateid.other)?;
        d.recalled = true;
        Some(k.clone())
    }

    /// Takes the delegation of `key` to return it (DELEGRETURN).
    pub fn take(&mut self, key: &K) -> Option<Delegation> {
        self.held.remove(key)
    }

    /// Every delegation, for returning them all (unmount, lost lease).
    pub fn drain(&mut self) -> Vec<(K, Delegation)> {
        self.held.drain().collect()
    }

    /// The files a delegation is held for.
    pub fn keys(&self) -> Vec<K> {
        self.held.keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(n: u8) -> stateid4 {
        stateid4 { seqid: 1, other: [n; 12] }
    }

    #[test]
    fn a_recall_stops_use_until_returned() {
        let mut d = Delegations::default();
        assert_eq!(d.granted("f", sid(1), DelegationKind::Write), None);
        assert!(d.may_write(&"f"));
        assert_eq!(d.recall(&sid(1)), Some("f"));
        assert!(d.usable(&"f").is_none() && !d.may_write(&"f"));
        assert_eq!(d.take(&"f").unwrap().stateid, sid(1));
        assert_eq!(d.recall(&sid(1)), None, "returned already");
    }

    #[test]
    fn a_new_grant_hands_back_the_old_one() {
        let mut d = Delegations::default();
        d.granted("f", sid(1), DelegationKind::Read);
        assert_eq!(d.granted("f", sid(2), DelegationKind::Write).unwrap().stateid, sid(1));
        assert_eq!(d.granted("f", stateid4 { seqid: 2, other: [2; 12] }, DelegationKind::Write), None);
        assert_eq!(d.len(), 1);
    }
}

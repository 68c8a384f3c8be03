//! The directory delegations a client holds (RFC 8881 section 10.9), by
//! directory handle, and when to ask for one: at the second listing of a
//! directory within a short window, as a directory listed once is
//! usually not listed again, and a delegation costs the server a watch
//! and a callback per change.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use proto::dir_notify::DirChange;
use proto::nfs4::stateid4;

use super::dirdeleg::{DelegatedDir, Ids, Touched};

/// When to ask for directory delegations.
#[derive(Debug, Clone)]
pub struct AskPolicy {
    /// A second listing of a directory within this many ns of the first
    /// asks for a delegation.
    pub window: u64,
    /// A directory the server declined is not asked for again for this
    /// many ns.
    pub declined_hold: u64,
    /// Delegated directories held at most; past it none is asked for.
    pub max_held: usize,
}

/// Listings remembered for the window, at most: past it the ones out of
/// the window are forgotten.
const LISTED_KEPT: usize = 4096;

/// One directory delegation.
#[derive(Debug)]
pub struct HeldDir {
    pub stateid: stateid4,
    /// The server asked for it back (CB_RECALL): no new use starts.
    pub recalled: bool,
    /// Whether the server notifies the directory's own attributes.
    pub dir_attrs_notified: bool,
    pub cache: DelegatedDir,
}

/// What a CB_NOTIFY did.
#[derive(Debug, PartialEq)]
pub enum Notified {
    /// Applied; what it changed.
    Applied(Vec<Touched>),
    /// It did not fit the cache, which was dropped ([`Touched::All`]);
    /// the delegation stays and the next listing reads the directory.
    Dropped(String),
    /// No delegation of this client has that stateid for that directory.
    NotHeld,
}

#[derive(Debug)]
pub struct DirDelegations {
    policy: AskPolicy,
    held: HashMap<Bytes, HeldDir>,
    /// Directories listed lately, and when.
    listed: HashMap<Bytes, u64>,
    /// Directories the server declined lately, and when.
    declined: HashMap<Bytes, u64>,
    /// Asked for, no answer yet.
    asking: HashSet<Bytes>,
}

impl DirDelegations {
    pub fn new(policy: AskPolicy) -> Self {
        DirDelegations {
            policy,
            held: HashMap::new(),
            listed: HashMap::new(),
            declined: HashMap::new(),
            asking: HashSet::new(),
        }
    }

    /// `dir` is being listed at `now` (ns, monotonic). True when a
    /// delegation should be asked for now; the caller then reports
    /// [`DirDelegations::granted`] or [`DirDelegations::declined`].
    pub fn listed(&mut self, dir: &Bytes, now: u64) -> bool {
        if self.held.contains_key(dir) || self.asking.contains(dir) {
            return false;
        }
        if self.declined.get(dir).is_some_and(|&t| now.saturating_sub(t) < self.policy.declined_hold) {
            return false;
        }
        let before = self.listed.insert(dir.clone(), now);
        if self.listed.len() > LISTED_KEPT {
            let (window, hold) = (self.policy.window, self.policy.declined_hold);
            self.listed.retain(|_, t| now.saturating_sub(*t) < window);
            self.declined.retain(|_, t| now.saturating_sub(*t) < hold);
        }
        let again = before.is_some_and(|t| now.saturating_sub(t) < self.policy.window);
        if !again || self.held.len() + self.asking.len() >= self.policy.max_held {
            return false;
        }
        self.asking.insert(dir.clone());
        true
    }

    /// The server granted a delegation on `dir`.
    pub fn granted(&mut self, dir: &Bytes, stateid: stateid4, dir_attrs_notified: bool) {
        self.asking.remove(dir);
        self.listed.remove(dir);
        let cache = DelegatedDir::default();
        self.held.insert(dir.clone(), HeldDir { stateid, recalled: false, dir_attrs_notified, cache });
    }

    /// The server did not grant one (GDD4_UNAVAIL, an error).
    pub fn declined(&mut self, dir: &Bytes, now: u64) {
        self.asking.remove(dir);
        self.listed.remove(dir);
        self.declined.insert(dir.clone(), now);
    }

    /// Whether a delegation on `dir` was asked for, no answer yet.
    pub fn is_asking(&self, dir: &[u8]) -> bool {
        self.asking.contains(dir)
    }

    /// The delegation on `dir`, when it is usable (held, not recalled).
    pub fn usable(&self, dir: &[u8]) -> Option<&HeldDir> {
        self.held.get(dir).filter(|d| !d.recalled)
    }

    pub fn usable_mut(&mut self, dir: &[u8]) -> Option<&mut HeldDir> {
        self.held.get_mut(dir).filter(|d| !d.recalled)
    }

    /// The delegation on `dir`, recalled or not.
    pub fn get_mut(&mut self, dir: &[u8]) -> Option<&mut HeldDir> {
        self.held.get_mut(dir)
    }

    /// The attributes of a child of a usable delegated directory.
    pub fn child_attrs(&self, fh: &[u8]) -> Option<&crate::fattr::Fattr> {
        self.held.values().filter(|d| !d.recalled).find_map(|d| d.cache.child_attrs(fh))
    }

    /// This client changed `dir`: what is cached of it goes (see
    /// [`DelegatedDir::forget`]).
    pub fn changed(&mut self, dir: &[u8]) {
        if let Some(d) = self.held.get_mut(dir) {
            d.cache.forget();
        }
    }

    /// A CB_NOTIFY for the delegation `stateid` on `dir`. A delegation
    /// being recalled still takes its notifications: it is in force until
    /// returned, and the revalidation under way reads what they say.
    pub fn notify(&mut self, stateid: &stateid4, dir: &[u8], changes: &[DirChange], ids: Ids<'_>) -> Notified {
        let Some(d) = self.held.get_mut(dir).filter(|d| d.stateid.other == stateid.other) else {
            return Notified::NotHeld;
        };
        match d.cache.apply(changes, ids) {
            Ok(t) => Notified::Applied(t),
            Err(e) => Notified::Dropped(e.to_string()),
        }
    }

    /// Drops what is cached of `dir` (a notification that does not
    /// decode); whether a delegation is held on it.
    pub fn drop_cache(&mut self, stateid: &stateid4, dir: &[u8]) -> bool {
        match self.held.get_mut(dir).filter(|d| d.stateid.other == stateid.other) {
            Some(d) => {
                d.cache.forget();
                true
            }
            None => false,
        }
    }

    /// CB_RECALL: the directory whose delegation has this stateid, now
    /// marked recalled; None when none of this client's has it.
    pub fn recall(&mut self, stateid: &stateid4) -> Option<Bytes> {
        let (dir, d) = self.held.iter_mut().find(|(_, d)| d.stateid.other == stateid.other)?;
        d.recalled = true;
        Some(dir.clone())
    }

    /// Takes the delegation on `dir` to return it (DELEGRETURN).
    pub fn take(&mut self, dir: &[u8]) -> Option<HeldDir> {
        self.held.remove(dir)
    }

    /// Every delegation (unmount; or revoked, when the server could not
    /// reach this client: nothing cached under them holds any more).
    pub fn drain(&mut self) -> Vec<(Bytes, HeldDir)> {
        self.asking.clear();
        self.held.drain().collect()
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

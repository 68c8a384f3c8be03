//! The hosts NSM monitors for this server: every NFSv3 host that was
//! granted a lock or a share, kept durably by the [`StableStore`] so that
//! after a restart each is told (SM_NOTIFY, with the new NSM state) to
//! reclaim, and the grace period waits for them. A host leaves the list
//! when it says it restarted (SM_NOTIFY, FREE_ALL: its locks are gone)
//! and after it was notified of a restart (it is added again at its next
//! grant).

use std::collections::HashMap;
use std::net::IpAddr;

use bytes::Bytes;
use parking_lot::Mutex;

use super::StableStore;

/// A monitored host: its name as its lock calls give it (`caller_name`),
/// the address they came from, where SM_NOTIFY goes, and ours they came
/// to, which SM_NOTIFY comes from and names us by (a client knows its
/// server by the address it mounted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsmHost {
    pub name: Bytes,
    pub addr: Option<IpAddr>,
    pub local: Option<IpAddr>,
}

/// Most hosts monitored at once: each costs a durable write when added
/// and a notification after a restart. Past it a host's locks are still
/// granted, unmonitored (logged).
pub(crate) const MAX_MONITORED: usize = 65_536;

/// The monitored hosts in memory (the store has them durably), and those
/// of before the restart still to be notified.
#[derive(Debug)]
pub(crate) struct NsmHosts {
    /// This run's NSM state number: odd, larger than before each restart.
    pub state: i32,
    monitored: Mutex<HashMap<Bytes, (Option<IpAddr>, Option<IpAddr>)>>,
    /// Hosts of before the restart, for SM_NOTIFY (taken when the core
    /// gets a transport to send it).
    pub(crate) before: Mutex<Vec<NsmHost>>,
}

impl NsmHosts {
    pub(crate) fn new(state: i32, before: Vec<NsmHost>) -> NsmHosts {
        let monitored = before.iter().map(|h| (h.name.clone(), (h.addr, h.local))).collect();
        NsmHosts { state, monitored: Mutex::new(monitored), before: Mutex::new(before) }
    }

    /// Monitors `name` (calling from `addr` to our `local`) unless it is
    /// already: the store writes it durably before the grant is answered,
    /// so that a crash right after cannot lose the host.
    pub(crate) fn monitor(&self, store: &dyn StableStore, name: &Bytes, addr: IpAddr, local: IpAddr) {
        let mut m = self.monitored.lock();
        let at = (Some(addr), Some(local));
        if m.get(name).is_some_and(|a| *a == at) {
            return;
        }
        if m.len() >= MAX_MONITORED && !m.contains_key(name) {
            tracing::warn!(host = %String::from_utf8_lossy(name), "NSM: too many monitored hosts; not monitored");
            return;
        }
        m.insert(name.clone(), at);
        store.nsm_monitor(&NsmHost { name: name.clone(), addr: Some(addr), local: Some(local) });
    }

    /// Stops monitoring `name` (it restarted, or was told of our restart).
    pub(crate) fn unmonitor(&self, store: &dyn StableStore, name: &[u8]) {
        if self.monitored.lock().remove(name).is_some() {
            store.nsm_unmonitor(name);
        }
    }

    /// The monitored host whose calls came from `addr`, if one: an
    /// SM_NOTIFY names its host as that host's status monitor calls it,
    /// which need not be the name its lock manager gave.
    pub(crate) fn named_at(&self, addr: IpAddr) -> Vec<Bytes> {
        self.monitored.lock().iter().filter(|(_, a)| a.0 == Some(addr)).map(|(n, _)| n.clone()).collect()
    }

    pub(crate) fn count(&self) -> usize {
        self.monitored.lock().len()
    }
}

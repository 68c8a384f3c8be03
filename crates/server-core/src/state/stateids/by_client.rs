//! Each client's part of the stateid state, under the client's own lock:
//! its open-owners and lock-owners (with NFSv4.0's seqids and kept
//! replies), the index from (owner, file) to the owner's open or lock
//! stateid there, and the set of every stateid it holds.
//!
//! Lock order: the tables (when taken), then one client, then one file
//! shard. A thread holds at most one client at a time, and takes none
//! while it holds a shard (checked, as for the shards: a violation
//! panics at once rather than deadlocking some day).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RawMutex};

use super::{Other, Owner, OwnerKey, OwnerSort};
use crate::state::FileKey;

/// What one client holds, indexed.
#[derive(Debug, Default)]
pub(crate) struct ClientIds {
    pub open_owners: HashMap<OwnerKey, Owner>,
    pub lock_owners: HashMap<OwnerKey, Owner>,
    /// The open stateid of (open-owner, file).
    pub opens_by: HashMap<(OwnerKey, FileKey), Other>,
    /// The lock stateid of (lock-owner, file).
    pub locks_by: HashMap<(OwnerKey, FileKey), Other>,
    /// Every stateid of the client.
    pub ids: HashSet<Other>,
    /// How many of them are delegations.
    pub delegs: usize,
}

impl ClientIds {
    pub fn owners(&mut self, sort: OwnerSort) -> &mut HashMap<OwnerKey, Owner> {
        match sort {
            OwnerSort::Open => &mut self.open_owners,
            OwnerSort::Lock => &mut self.lock_owners,
        }
    }
}

/// The clients' parts, each under its own lock. The map's own lock is
/// held only to find or add a client's.
#[derive(Debug, Default)]
pub(crate) struct ClientTable {
    map: Mutex<HashMap<u64, Arc<Mutex<ClientIds>>>>,
    /// How many times a client's lock was taken (tests count a request's).
    locked: AtomicU64,
}

impl ClientTable {
    /// `client`'s part, locked, if it has one.
    pub fn lock(&self, client: u64) -> Option<ClientGuard> {
        let held = ClientHeld::take();
        let c = self.map.lock().get(&client).cloned()?;
        Some(self.guard(c, held))
    }

    /// `client`'s part, locked, made if it has none.
    pub fn lock_or_new(&self, client: u64) -> ClientGuard {
        let held = ClientHeld::take();
        let c = self.map.lock().entry(client).or_default().clone();
        self.guard(c, held)
    }

    /// Takes `client`'s part out of the table (the client goes), locked.
    pub fn take(&self, client: u64) -> Option<ClientGuard> {
        let held = ClientHeld::take();
        let c = self.map.lock().remove(&client)?;
        Some(self.guard(c, held))
    }

    fn guard(&self, c: Arc<Mutex<ClientIds>>, held: ClientHeld) -> ClientGuard {
        self.locked.fetch_add(1, Ordering::Relaxed);
        ClientGuard { guard: c.lock_arc(), _held: held }
    }

    /// Drops `client`'s part if it holds nothing: a request made it
    /// ([`ClientTable::lock_or_new`]) and then found the client gone.
    pub fn forget_if_empty(&self, client: u64) {
        let mut map = self.map.lock();
        let empty = map.get(&client).is_some_and(|c| {
            c.try_lock().is_some_and(|c| c.ids.is_empty() && c.open_owners.is_empty() && c.lock_owners.is_empty())
        });
        if empty {
            map.remove(&client);
        }
    }

    pub fn locked(&self) -> u64 {
        self.locked.load(Ordering::Relaxed)
    }
}

/// A client's part, locked.
pub(crate) struct ClientGuard {
    guard: parking_lot::lock_api::ArcMutexGuard<RawMutex, ClientIds>,
    _held: ClientHeld,
}

impl std::ops::Deref for ClientGuard {
    type Target = ClientIds;
    fn deref(&self) -> &ClientIds {
        &self.guard
    }
}

impl std::ops::DerefMut for ClientGuard {
    fn deref_mut(&mut self) -> &mut ClientIds {
        &mut self.guard
    }
}

/// The mark that a thread holds a client's part.
struct ClientHeld;

thread_local! {
    static CLIENT_HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl ClientHeld {
    fn take() -> ClientHeld {
        if crate::state::shards::shard_held() {
            panic!("a client's stateids taken while a file shard is held");
        }
        if CLIENT_HELD.with(|h| h.replace(true)) {
            panic!("a client's stateids taken while another client's are held");
        }
        ClientHeld
    }
}

impl Drop for ClientHeld {
    fn drop(&mut self) {
        CLIENT_HELD.with(|h| h.set(false));
    }
}

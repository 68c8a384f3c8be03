//! Stateids and the state they name: opens, locks, delegations.

use super::lockmgr::LockManager;

#[derive(Debug, Default)]
pub(crate) struct Stateids {}

impl Stateids {
    /// Drops everything `client` holds (expiry, DESTROY_CLIENTID, a new
    /// incarnation of the client), releasing its locks in `locks`.
    pub fn purge_client(&mut self, client: u64, locks: &mut LockManager) {
        let _ = (client, locks);
    }

    /// Whether `client` still holds opens, locks or delegations.
    pub fn has_state(&self, client: u64) -> bool {
        let _ = client;
        false
    }
}

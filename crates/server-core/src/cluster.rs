//! What a head of a cluster (several servers over one shared store) is
//! told by the others, through the transport that reads the cluster's
//! shared record: another head is in its grace period; this head took
//! over a dead head's address and must let its clients reclaim; or gives
//! those clients back to the head that came back. The record itself and
//! its storage are the transport's; this is the state machine's side.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::Core;

impl Core {
    /// The flag that puts this server in grace while another head is:
    /// set and cleared by whoever follows the cluster's record.
    pub fn cluster_grace_flag(&self) -> Arc<AtomicBool> {
        self.v4.cluster_grace_flag()
    }

    /// Whether this server's own clients (or ones it adopted) may still
    /// reclaim: its part of the cluster's grace period.
    pub fn in_local_grace(&self) -> bool {
        self.v4.in_local_grace()
    }

    /// Whether other servers share an export's file system, so that this
    /// server's opens and locks are also held in it.
    pub fn shares_store(&self) -> bool {
        self.shared_locks
    }

    /// Expires the NFSv4 clients whose lease ran out and releases in the
    /// shared store what they held there. Lease expiry is otherwise
    /// checked when a client of this server takes the state tables; a
    /// server whose exports are shared calls this periodically, as the
    /// clients that wait on that state may be another server's.
    pub fn expire_lapsed_clients(&self) {
        if !self.shared_locks {
            return;
        }
        self.v4.expire_lapsed_clients();
        self.release_shared_locks();
    }

    /// Lets the clients of `records` (a dead head's) reclaim here, in a
    /// grace period of the usual length from now.
    pub fn adopt_clients(&self, records: Vec<Vec<u8>>) {
        self.v4.adopt_clients(records);
    }

    /// Ends the state of the clients with these owners (they move to
    /// another head, which they will reclaim it from): as if their leases
    /// had expired, their locks released in the shared store too.
    pub fn release_clients(&self, owners: &[Vec<u8>]) -> usize {
        let released = self.v4.release_clients(owners);
        self.release_shared_locks();
        released
    }
}

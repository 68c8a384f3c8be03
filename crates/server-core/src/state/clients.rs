//! Client records: EXCHANGE_ID (4.1) and SETCLIENTID (4.0), leases,
//! courtesy clients.

use std::time::Duration;

use proto::nfs4::nfsstat4;

#[derive(Debug, Default)]
pub(crate) struct Clients {}

impl Clients {
    /// Renews `client`'s lease (any operation by a client renews it) and
    /// says whether it may act: NFS4ERR_STALE_CLIENTID for ids this server
    /// instance never issued (including ones from before a restart) or
    /// that are unconfirmed, NFS4ERR_EXPIRED for clients whose state was
    /// already taken away.
    pub fn renew(&mut self, client: u64, now: Duration) -> Result<(), nfsstat4> {
        let _ = (client, now);
        Ok(())
    }

    /// Whether `client`'s lease ran out (it is a courtesy client whose
    /// state may be taken when it conflicts with another client).
    pub fn lease_expired(&self, client: u64, now: Duration, lease: Duration) -> bool {
        let _ = (client, now, lease);
        false
    }

    /// Marks `client` expired: its sessions go, its stable record goes, and
    /// its next request learns it (the caller purges its state).
    pub fn expire(&mut self, client: u64) {
        let _ = client;
    }

    /// Whether `client` may reclaim state now (it was known before the
    /// restart and has not sent RECLAIM_COMPLETE).
    pub fn may_reclaim(&self, client: u64) -> bool {
        let _ = client;
        false
    }
}

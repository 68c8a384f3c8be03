//! Stateids as the operations that name them use them: TEST_STATEID,
//! FREE_STATEID and DELEGRETURN (RFC 8881), and the stateid check of
//! every operation on a file's data (READ, WRITE, SETATTR of the size and
//! the NFSv4.2 data operations).

use proto::nfs4::*;

use crate::state::stateids::{check_io, io_allowed_by_shard, Entry, IoKind, Kind};
use crate::state::{delegations, FileKey, State4, Tables};

impl State4 {
    /// TEST_STATEID (RFC 8881 section 18.48): the status each of
    /// `stateids` would get if `client` used it. The lease is not renewed.
    pub(crate) fn test_stateids(&self, client: clientid4, stateids: &[stateid4]) -> Vec<nfsstat4> {
        let t = self.lock_tables();
        stateids.iter().map(|s| t.stateids.test(self.boot, client, s)).collect()
    }

    /// FREE_STATEID (RFC 8881 section 18.38): frees `sid`, a lock stateid
    /// without locks or a revoked delegation; anything still holding locks
    /// is NFS4ERR_LOCKS_HELD. `client` is the session's.
    pub(crate) fn free_stateid(&self, minor: u32, client: Option<clientid4>, sid: &stateid4) -> Result<(), nfsstat4> {
        let mut t = self.lock_tables();
        match t.stateids.find(self.boot, minor, client, sid) {
            Ok(_) | Err(nfsstat4::NFS4ERR_DELEG_REVOKED) => {}
            Err(e) => return Err(e),
        }
        let revoked_deleg = |e: &Entry| matches!(&e.kind, Kind::Deleg(d) if d.revoked);
        let freed_revoked = t.stateids.get(&sid.other).filter(|e| revoked_deleg(e)).map(|e| e.client);
        let Tables { stateids, clients, .. } = &mut *t;
        stateids.free(&sid.other)?;
        // SEQ4_STATUS_RECALLABLE_STATE_REVOKED stays up until the client has
        // freed every revoked delegation (RFC 8881 18.46.3).
        if let Some(c) = freed_revoked {
            if !stateids.any_of_client(c, revoked_deleg) {
                clients.clear_status_flags(c, SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
            }
        }
        Ok(())
    }

    /// DELEGRETURN (RFC 8881 section 18.6): delegation `sid` of `client`
    /// (`None` in 4.0) on `file` goes, so requests of other clients
    /// waiting on its recall go through.
    pub(crate) fn delegreturn(
        &self,
        minor: u32,
        client: Option<clientid4>,
        sid: &stateid4,
        file: FileKey,
    ) -> Result<(), nfsstat4> {
        if let (1.., Some(c)) = (minor, client) {
            if self.delegreturn_in_shard(c, sid, file).is_some() {
                return Ok(());
            }
        }
        delegations::delegreturn(self, &mut self.lock_tables(), minor, client, sid, file)
    }

    /// The stateid check of I/O (RFC 8881 sections 8.2.5 and 9.1.4):
    /// whether `stateid` allows `kind` access to `range` (offset, length)
    /// of `file` for `client` (the session's, `None` in 4.0), against
    /// share reservations, byte-range locks and other clients'
    /// delegations ([`check_io`]).
    pub(crate) fn check_io_stateid(
        &self,
        client: Option<clientid4>,
        stateid: &stateid4,
        file: FileKey,
        kind: IoKind,
        range: (u64, u64),
    ) -> Result<(), nfsstat4> {
        // I/O is decided in the file's shard when nothing there needs the
        // tables (the common case: its own open, no other client's
        // delegation in the way).
        if io_allowed_by_shard(self, &self.shards, client, stateid, file, kind, range) {
            return Ok(());
        }
        check_io(self, &mut self.lock_tables(), client, stateid, file, kind, range)
    }
}

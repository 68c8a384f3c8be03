//! Byte-range locks as NFSv4's LOCK, LOCKT, LOCKU and RELEASE_LOCKOWNER
//! take, test and release them (RFC 8881 sections 9.4, 18.10-18.12; RFC
//! 7530 16.37). Each method takes the state's lock once; LOCK's shared
//! store is asked by the operation around them.

use proto::nfs4::*;

use super::opens::{record, Answer};
use crate::state::lockmgr::{Lock, LockKind, LockOwner};
use crate::state::stateids::{v4_lock_owner, Kind, OwnerKey, OwnerSort, Replay, SeqCheck};
use crate::state::{FileKey, State4, Tables};

/// The grace period's rule for LOCK and LOCKT (RFC 8881 8.4.2): reclaims
/// only in grace (and only by clients that may reclaim), new locks only
/// outside it.
pub(super) fn check_grace(st: &State4, t: &mut Tables, client: u64, reclaim: bool) -> Result<(), nfsstat4> {
    let in_grace = t.grace.in_grace(st.now());
    if reclaim && (!in_grace || !t.clients.may_reclaim(client)) {
        return Err(nfsstat4::NFS4ERR_NO_GRACE);
    }
    if !reclaim && in_grace {
        return Err(nfsstat4::NFS4ERR_GRACE);
    }
    Ok(())
}

impl State4 {
    /// LOCKT (RFC 8881 18.11): the lock of another owner than `owner`
    /// that conflicts with `kind` on `start..=end` of `file`, renewing
    /// `client`'s lease; creates no state.
    pub(crate) fn lockt(
        &self,
        client: u64,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
    ) -> Result<Option<Lock>, nfsstat4> {
        let mut t = self.lock_tables();
        t.clients.renew(client, self.now())?;
        check_grace(self, &mut t, client, false)?;
        Ok(t.locks.test(file, owner, kind, start, end))
    }

    /// LOCKU (RFC 8881 18.12): releases `start..=end` of `file` for the
    /// lock-owner of lock stateid `sid`, which stays valid. `Done`
    /// carries that owner, whose locks a shared store is to match.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn locku(
        &self,
        minor: u32,
        io_client: Option<u64>,
        sid: &stateid4,
        file: FileKey,
        seqid: seqid4,
        start: u64,
        end: u64,
    ) -> Answer<stateid4, LockOwner> {
        let mut t = self.lock_tables();
        let Some((client, Kind::Lock(l))) = t.stateids.ids.get(&sid.other).map(|e| (e.client, &e.kind)) else {
            let e = t.stateids.find(self.boot, minor, io_client, sid).err();
            return Answer::Early(Err(e.unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID)));
        };
        let key = OwnerKey { client, owner: l.owner.clone() };
        if minor == 0 {
            if let Err(e) = t.clients.renew(client, self.now()) {
                return Answer::Early(Err(e));
            }
            match t.stateids.seqid_check(OwnerSort::Lock, &key, seqid) {
                Err(e) => return Answer::Early(Err(e)),
                Ok(SeqCheck::Replay(Replay::Locku(r))) => return Answer::Early(r),
                Ok(SeqCheck::Replay(_)) => return Answer::Early(Err(nfsstat4::NFS4ERR_BAD_SEQID)),
                Ok(SeqCheck::Go) => {}
            }
        }
        let owner = v4_lock_owner(client, &key.owner);
        let r = (|| {
            let e = t.stateids.find(self.boot, minor, io_client, sid)?;
            if e.file != file {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
            t.clients.renew(client, self.now())?;
            t.locks.unlock(file, &owner, start, end);
            Ok(t.stateids.bump(&sid.other))
        })();
        if minor == 0 {
            record(&mut t, OwnerSort::Lock, &key, seqid, &r, Replay::Locku);
        }
        Answer::Done(r, owner)
    }

    /// RELEASE_LOCKOWNER (RFC 7530 16.37): forgets `client`'s lock-owner
    /// `owner` and its lock stateids, unless it still holds locks
    /// (NFS4ERR_LOCKS_HELD).
    pub(crate) fn release_lockowner(&self, client: u64, owner: &bytes::Bytes) -> Result<(), nfsstat4> {
        let mut t = self.lock_tables();
        t.clients.renew(client, self.now())?;
        if t.locks.holds_any(&v4_lock_owner(client, owner)) {
            return Err(nfsstat4::NFS4ERR_LOCKS_HELD);
        }
        let key = OwnerKey { client, owner: owner.clone() };
        let mine: Vec<[u8; 12]> = t.stateids.locks_by.iter().filter(|((k, _), _)| *k == key).map(|(_, o)| *o).collect();
        for o in mine {
            t.stateids.remove(&o);
        }
        t.stateids.lock_owners.remove(&key);
        Ok(())
    }
}

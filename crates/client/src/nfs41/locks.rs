//! Byte-range locks (RFC 8881 section 9 and 18.10-18.12): LOCK, LOCKT and
//! LOCKU for a lock-owner of the caller's choosing (the mount uses the
//! kernel's lock owner), one lock stateid per file and owner, and waiting
//! for a lock held elsewhere by asking again after 1 ms, doubling.

use std::time::Duration;

use bytes::Bytes;
use client_core::v41::backoff::{Backoff, RetrySettings};
use proto::nfs4::*;

use super::compound::failure;
use super::ops::attrs_of;
use super::Nfs41;
use crate::error::{Error, Result};
use crate::nfs::Locked;

/// A lock that stands in the way: its range and whether it is a write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockConflict {
    pub offset: u64,
    /// `u64::MAX`: to the end of the file.
    pub length: u64,
    pub write: bool,
}

fn conflict(d: &LOCK4denied) -> LockConflict {
    let write = matches!(d.locktype, nfs_lock_type4::WRITE_LT | nfs_lock_type4::WRITEW_LT);
    LockConflict { offset: d.offset, length: d.length, write }
}

fn lock_type(write: bool, wait: bool) -> nfs_lock_type4 {
    match (write, wait) {
        (false, false) => nfs_lock_type4::READ_LT,
        (true, false) => nfs_lock_type4::WRITE_LT,
        (false, true) => nfs_lock_type4::READW_LT,
        (true, true) => nfs_lock_type4::WRITEW_LT,
    }
}

/// Longest pause between two asks for a lock held elsewhere.
const LOCK_POLL_MAX: Duration = Duration::from_secs(1);

impl Nfs41 {
    fn lock_owner(&self, owner: u64) -> lock_owner4 {
        let mut name = b"nfsx-lock-".to_vec();
        name.extend_from_slice(&owner.to_be_bytes());
        lock_owner4 { clientid: self.session.lock().clientid, owner: Bytes::from(name) }
    }

    /// The open stateid a first LOCK of `fh` names: an open made locally
    /// under a delegation is made on the server first, since a lock
    /// stands on an open the server knows.
    async fn open_stateid_for_lock(&self, fh: &Bytes) -> Result<stateid4> {
        let (local, stateid) = match self.opens.lock().get(fh) {
            Some(o) => (o.local, o.stateid.clone()),
            None => return Err(Error::Invalid("a lock needs the file open".into())),
        };
        if !local {
            return Ok(stateid);
        }
        self.make_local_opens_real(fh, &stateid).await;
        match self.opens.lock().get(fh) {
            Some(o) if !o.local => Ok(o.stateid.clone()),
            _ => Err(Error::Invalid("the open under the delegation could not be made on the server".into())),
        }
    }

    /// LOCK `[offset, offset + length)` (`length` `u64::MAX`: to the end)
    /// for `owner`. Returns the conflicting lock when it is held elsewhere
    /// and `wait` is false; with `wait` asks again until it is granted.
    /// With `attrs`, a GETATTR rides in the LOCK's compound (Chen et al.
    /// 2015 proposed it: the attributes a cache check after a lock needs,
    /// without a call of their own).
    #[allow(clippy::too_many_arguments)]
    pub async fn lock(
        &self,
        fh: &Bytes,
        owner: u64,
        offset: u64,
        length: u64,
        write: bool,
        wait: bool,
        attrs: bool,
    ) -> Result<Locked> {
        let poll = RetrySettings {
            delay_max_ms: LOCK_POLL_MAX.as_millis() as u64,
            give_up_ms: u64::MAX,
            ..self.retry.clone()
        };
        let mut backoff = Backoff::new(&poll);
        loop {
            let known = self.locks.lock().get(&(fh.clone(), owner)).cloned();
            let locker = match known {
                Some(lock_stateid) => locker4::FALSE(exist_lock_owner4 { lock_stateid, lock_seqid: 0 }),
                None => locker4::TRUE(open_to_lock_owner4 {
                    open_seqid: 0,
                    open_stateid: self.open_stateid_for_lock(fh).await?,
                    lock_seqid: 0,
                    lock_owner: self.lock_owner(owner),
                }),
            };
            let mut ops = vec![
                nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
                nfs_argop4::OP_LOCK(LOCK4args {
                    locktype: lock_type(write, wait),
                    reclaim: false,
                    offset,
                    length,
                    locker,
                }),
            ];
            if attrs {
                ops.push(self.getattr_op());
            }
            let r = self.compound_status(ops).await?;
            match r.resarray.get(1) {
                Some(nfs_resop4::OP_LOCK(LOCK4res::NFS4_OK(ok))) => {
                    self.locks.lock().insert((fh.clone(), owner), ok.lock_stateid.clone());
                    // The lock is held whatever became of the GETATTR.
                    let attrs = r.resarray.get(2).and_then(|g| attrs_of(self, g).ok());
                    return Ok(Locked { conflict: None, attrs });
                }
                Some(nfs_resop4::OP_LOCK(LOCK4res::NFS4ERR_DENIED(d))) if !wait => {
                    return Ok(Locked { conflict: Some(conflict(d)), attrs: None })
                }
                Some(nfs_resop4::OP_LOCK(LOCK4res::NFS4ERR_DENIED(_))) => {
                    let pause = backoff.next_wait().unwrap_or(LOCK_POLL_MAX.as_nanos() as u64);
                    tokio::time::sleep(Duration::from_nanos(pause)).await;
                }
                _ => return Err(failure(&r)),
            }
        }
    }

    /// LOCKT: the lock standing in the way of one `owner` would take, if any.
    pub async fn test_lock(
        &self,
        fh: &Bytes,
        owner: u64,
        offset: u64,
        length: u64,
        write: bool,
    ) -> Result<Option<LockConflict>> {
        let ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            nfs_argop4::OP_LOCKT(LOCKT4args {
                locktype: lock_type(write, false),
                offset,
                length,
                owner: self.lock_owner(owner),
            }),
        ];
        let r = self.compound_status(ops).await?;
        match r.resarray.get(1) {
            Some(nfs_resop4::OP_LOCKT(LOCKT4res::NFS4_OK)) => Ok(None),
            Some(nfs_resop4::OP_LOCKT(LOCKT4res::NFS4ERR_DENIED(d))) => Ok(Some(conflict(d))),
            _ => Err(failure(&r)),
        }
    }

    /// LOCKU of `[offset, offset + length)` for `owner`; nothing to do
    /// when the owner never locked the file.
    pub async fn unlock(&self, fh: &Bytes, owner: u64, offset: u64, length: u64) -> Result<()> {
        let Some(lock_stateid) = self.locks.lock().get(&(fh.clone(), owner)).cloned() else { return Ok(()) };
        let ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            nfs_argop4::OP_LOCKU(LOCKU4args {
                locktype: nfs_lock_type4::READ_LT,
                seqid: 0,
                lock_stateid,
                offset,
                length,
            }),
        ];
        let res = self.compound(ops).await?;
        if let Some(nfs_resop4::OP_LOCKU(LOCKU4res::NFS4_OK(s))) = res.get(1) {
            self.locks.lock().insert((fh.clone(), owner), s.clone());
        }
        Ok(())
    }

    /// Whether some owner has lock state on `fh` here.
    pub fn has_lock_state(&self, fh: &Bytes) -> bool {
        self.locks.lock().keys().any(|(f, _)| f == fh)
    }

    /// The lock stateids of `fh`, taken out of the table: a CLOSE frees
    /// them in the same compound (FREE_STATEID; its locks were released).
    pub(crate) fn take_lock_stateids(&self, fh: &Bytes) -> Vec<stateid4> {
        let mut locks = self.locks.lock();
        let keys: Vec<(Bytes, u64)> = locks.keys().filter(|(f, _)| f == fh).cloned().collect();
        keys.into_iter().filter_map(|k| locks.remove(&k)).collect()
    }
}

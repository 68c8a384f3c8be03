//! Byte-range locks (RFC 8881 section 9 and 18.10-18.12): LOCK, LOCKT and
//! LOCKU for a lock-owner of the caller's choosing (the mount uses the
//! kernel's lock owner), one lock stateid per file and owner, and waiting
//! for a lock held elsewhere by asking again after 1 ms, doubling.

use std::time::Duration;

use bytes::Bytes;
use client_core::v41::backoff::{Backoff, RetrySettings};
use client_core::v41::locallocks::{range_end, LocalLock};
use proto::nfs4::*;

use super::compound::failure;
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

/// A lock taken under a delegation, as the lock in someone's way.
fn local_conflict(l: &LocalLock) -> LockConflict {
    let (offset, length) = l.offset_length();
    LockConflict { offset, length, write: l.write }
}

/// One LOCK as the server is asked for it.
#[derive(Debug, Clone, Copy)]
struct Ask {
    owner: u64,
    offset: u64,
    length: u64,
    write: bool,
    wait: bool,
    /// A GETATTR in the same compound.
    attrs: bool,
}

fn lock_type(write: bool, wait: bool) -> nfs_lock_type4 {
    match (write, wait) {
        (false, false) => nfs_lock_type4::READ_LT,
        (true, false) => nfs_lock_type4::WRITE_LT,
        (false, true) => nfs_lock_type4::READW_LT,
        (true, true) => nfs_lock_type4::WRITEW_LT,
    }
}

/// Shards of files whose lock operations are serialised (see
/// `Nfs41::lock_gates`).
pub(crate) const LOCK_GATES: usize = 64;

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
    /// without a call of their own). Under a write delegation the lock is
    /// taken here, without a call (RFC 8881 section 10.4.2).
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
        let end = range_end(offset, length);
        let mut backoff = Backoff::new(&self.lock_poll());
        loop {
            let gate = self.gate(fh).lock().await;
            let local = self.lock_locally(fh, owner, offset, end, write);
            drop(gate);
            match local {
                None => break,
                Some(Ok(())) => return Ok(Locked::default()),
                Some(Err(c)) if !wait => return Ok(Locked { conflict: Some(c), attrs: None }),
                Some(Err(_)) => {
                    let pause = backoff.next_wait().unwrap_or(LOCK_POLL_MAX.as_nanos() as u64);
                    tokio::time::sleep(Duration::from_nanos(pause)).await;
                }
            }
        }
        self.lock_at_server(fh, Ask { owner, offset, length, write, wait, attrs }).await
    }

    fn gate(&self, fh: &Bytes) -> &tokio::sync::Mutex<()> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        fh.hash(&mut h);
        let i = (h.finish() as usize) % self.lock_gates.len();
        // A hash modulo the table's length (LOCK_GATES, never 0), not data
        // from the network.
        #[allow(clippy::indexing_slicing)]
        &self.lock_gates[i]
    }

    /// The waits between asks for a lock held elsewhere: from the retry
    /// settings' first wait, doubling up to a second, never giving up.
    fn lock_poll(&self) -> RetrySettings {
        RetrySettings { delay_max_ms: LOCK_POLL_MAX.as_millis() as u64, give_up_ms: u64::MAX, ..self.retry.clone() }
    }

    /// Under a usable write delegation, on a file with no lock at the
    /// server: the lock taken locally (or the local lock in
    /// the way). None: the server decides. The delegation is checked
    /// under the local table's lock, and a recall marks it before it takes
    /// the table's locks, so no local lock is taken after the locks went
    /// to the server.
    fn lock_locally(
        &self,
        fh: &Bytes,
        owner: u64,
        start: u64,
        end: u64,
        write: bool,
    ) -> Option<std::result::Result<(), LockConflict>> {
        let mut local = self.local_locks.lock();
        // A lock some owner took at the server (before the delegation)
        // is not in the local table: then the server decides for all.
        if !self.delegations.lock().may_write(fh) || self.has_server_lock_state(fh) {
            return None;
        }
        self.counters.lock().local_locks += 1;
        Some(local.lock(fh, owner, start, end, write).map_err(|l| local_conflict(&l)))
    }

    /// The locks taken here under the delegation of `fh`, taken at the
    /// server before the delegation goes back (its opens were made real
    /// first). Nothing can be in their way: the delegation kept every
    /// other client out.
    pub(crate) async fn make_local_locks_real(&self, fh: &Bytes) {
        let _gate = self.gate(fh).lock().await;
        let held = self.local_locks.lock().take(fh);
        for l in held {
            let (offset, length) = l.offset_length();
            let ask = Ask { owner: l.owner, offset, length, write: l.write, wait: false, attrs: false };
            match self.lock_once_at_server(fh, ask).await {
                Ok(Locked { conflict: None, .. }) => {}
                other => tracing::warn!(?other, "a lock held under a delegation could not be taken at the server"),
            }
        }
    }

    /// LOCK at the server, asking again while the lock is held elsewhere
    /// and `wait`; each ask under the file's gate, the pauses outside it.
    async fn lock_at_server(&self, fh: &Bytes, ask: Ask) -> Result<Locked> {
        let mut backoff = Backoff::new(&self.lock_poll());
        loop {
            let r = {
                let _gate = self.gate(fh).lock().await;
                self.lock_once_at_server(fh, ask).await?
            };
            match r {
                Locked { conflict: Some(_), .. } if ask.wait => {
                    let pause = backoff.next_wait().unwrap_or(LOCK_POLL_MAX.as_nanos() as u64);
                    tokio::time::sleep(Duration::from_nanos(pause)).await;
                }
                r => return Ok(r),
            }
        }
    }

    /// One LOCK compound (the caller holds the file's gate).
    async fn lock_once_at_server(&self, fh: &Bytes, ask: Ask) -> Result<Locked> {
        let Ask { owner, offset, length, write, wait, attrs } = ask;
        let known = self.locks.lock().get(&(fh.clone(), owner)).cloned();
        let locker = match known {
            // Seqid 0: the stateid's current version (RFC 8881 section
            // 8.2.2). An OPEN of the file by another user of this client,
            // or a recall making local opens real, may have moved the
            // seqid on since it was read here.
            Some(lock_stateid) => {
                locker4::FALSE(exist_lock_owner4 { lock_stateid: stateid4 { seqid: 0, ..lock_stateid }, lock_seqid: 0 })
            }
            None => locker4::TRUE(open_to_lock_owner4 {
                open_seqid: 0,
                open_stateid: stateid4 { seqid: 0, ..self.open_stateid_for_lock(fh).await? },
                lock_seqid: 0,
                lock_owner: self.lock_owner(owner),
            }),
        };
        let mut ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            nfs_argop4::OP_LOCK(LOCK4args { locktype: lock_type(write, wait), reclaim: false, offset, length, locker }),
        ];
        if attrs {
            ops.push(self.getattr_op());
        }
        let r = self.compound_status(ops).await?;
        match r.get(1) {
            Some(nfs_resop4::OP_LOCK(LOCK4res::NFS4_OK(ok))) => {
                self.locks.lock().insert((fh.clone(), owner), ok.lock_stateid.clone());
                // The lock is held whatever became of the GETATTR.
                let attrs = r.attrs(2).ok();
                Ok(Locked { conflict: None, attrs })
            }
            Some(nfs_resop4::OP_LOCK(LOCK4res::NFS4ERR_DENIED(d))) => {
                Ok(Locked { conflict: Some(conflict(d)), attrs: None })
            }
            _ => Err(failure(&r)),
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
        // Locks taken here under a write delegation are this client's
        // alone to know; with no lock of the file at the server, nobody
        // else can hold one.
        let local = self.local_locks.lock().conflict(fh, owner, offset, range_end(offset, length), write);
        if let Some(l) = local {
            return Ok(Some(local_conflict(&l)));
        }
        if self.delegations.lock().may_write(fh) && !self.has_server_lock_state(fh) {
            return Ok(None);
        }
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
        match r.get(1) {
            Some(nfs_resop4::OP_LOCKT(LOCKT4res::NFS4_OK)) => Ok(None),
            Some(nfs_resop4::OP_LOCKT(LOCKT4res::NFS4ERR_DENIED(d))) => Ok(Some(conflict(d))),
            _ => Err(failure(&r)),
        }
    }

    /// LOCKU of `[offset, offset + length)` for `owner`; nothing to do
    /// when the owner never locked the file.
    pub async fn unlock(&self, fh: &Bytes, owner: u64, offset: u64, length: u64) -> Result<()> {
        let _gate = self.gate(fh).lock().await;
        self.local_locks.lock().unlock(fh, owner, offset, range_end(offset, length));
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
        self.has_server_lock_state(fh) || self.local_locks.lock().holds(fh, None)
    }

    /// Whether some owner holds a lock stateid of `fh` from the server.
    fn has_server_lock_state(&self, fh: &Bytes) -> bool {
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

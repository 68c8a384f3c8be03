//! Every request of a session: a slot, a SEQUENCE in front, and what the
//! reply's SEQUENCE result means for the slot, the session and a retry.

use std::time::Duration;

use bytes::Bytes;
use client_core::v41::backoff::Backoff;
use client_core::v41::slots::{Slot, SlotOutcome};
use proto::nfs4::*;
use xdr::{Decode, Decoder};

use super::reply::{self, Results};
use super::session::{NFS4_PROGRAM, NFS_V4};
use super::Nfs41;
use crate::error::{Error, Result};

/// Returns the slot when the request's future is dropped before its
/// reply (the caller gave up): the request may have reached the server.
struct SlotGuard<'a> {
    nfs: &'a Nfs41,
    slot: Option<Slot>,
    /// The session the slot is of. A recovery that replaced it made a new
    /// table whose slot of the same number may be in use by now: a slot
    /// of an old session is not given back into it, or two requests would
    /// go out on one slot (RFC 8881 section 2.10.6.1).
    generation: u64,
}

impl SlotGuard<'_> {
    fn give_back(&mut self, outcome: SlotOutcome) {
        if let Some(slot) = self.slot.take() {
            let mut table = self.nfs.slots.lock();
            if self.nfs.session.lock().generation == self.generation {
                table.release(slot, outcome);
            }
            drop(table);
            self.nfs.slot_freed.notify_waiters();
        }
    }

    fn finish(mut self, outcome: SlotOutcome) {
        self.give_back(outcome);
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.give_back(SlotOutcome::Unknown);
    }
}

/// Operations after which a retry of the whole compound would do
/// something twice.
fn changes_state(op: &nfs_argop4) -> bool {
    use nfs_argop4::*;
    matches!(
        op,
        OP_OPEN(_)
            | OP_CLOSE(_)
            | OP_CREATE(_)
            | OP_REMOVE(_)
            | OP_RENAME(_)
            | OP_LINK(_)
            | OP_SETATTR(_)
            | OP_WRITE(_)
            | OP_LOCK(_)
            | OP_LOCKU(_)
            | OP_DELEGRETURN(_)
            | OP_OPEN_DOWNGRADE(_)
    )
}

/// The operation a compound is for, to count it under (the first one
/// that is not about which object: LOOKUP of a path, OPEN, READ...).
pub(crate) fn main_op(ops: &[nfs_argop4]) -> &'static str {
    use nfs_argop4::*;
    let mut name = "SEQUENCE";
    for op in ops {
        let n = match op {
            OP_PUTFH(_) | OP_PUTROOTFH | OP_SAVEFH | OP_RESTOREFH | OP_GETFH => continue,
            OP_GETATTR(_) => {
                if name == "SEQUENCE" {
                    name = "GETATTR";
                }
                continue;
            }
            // Freed in passing (before a CLOSE).
            OP_FREE_STATEID(_) => {
                if name == "SEQUENCE" {
                    name = "FREE_STATEID";
                }
                continue;
            }
            OP_LOOKUP(_) | OP_LOOKUPP => "LOOKUP",
            OP_OPEN(_) => "OPEN",
            OP_CLOSE(_) => "CLOSE",
            OP_READ(_) => "READ",
            OP_WRITE(_) => "WRITE",
            OP_COMMIT(_) => "COMMIT",
            OP_CREATE(_) => "CREATE",
            OP_REMOVE(_) => "REMOVE",
            OP_RENAME(_) => "RENAME",
            OP_LINK(_) => "LINK",
            OP_SETATTR(_) => "SETATTR",
            OP_READDIR(_) => "READDIR",
            OP_READLINK => "READLINK",
            OP_LOCK(_) => "LOCK",
            OP_LOCKU(_) => "LOCKU",
            OP_LOCKT(_) => "LOCKT",
            OP_DELEGRETURN(_) => "DELEGRETURN",
            OP_OPEN_DOWNGRADE(_) => "OPEN_DOWNGRADE",
            OP_RECLAIM_COMPLETE(_) => "RECLAIM_COMPLETE",
            OP_ACCESS(_) => "ACCESS",
            OP_EXCHANGE_ID(_) => "EXCHANGE_ID",
            OP_CREATE_SESSION(_) => "CREATE_SESSION",
            OP_DESTROY_SESSION(_) => "DESTROY_SESSION",
            OP_DESTROY_CLIENTID(_) => "DESTROY_CLIENTID",
            OP_BIND_CONN_TO_SESSION(_) => "BIND_CONN_TO_SESSION",
            OP_COPY(_) => "COPY",
            OP_OFFLOAD_STATUS(_) => "OFFLOAD_STATUS",
            OP_CLONE(_) => "CLONE",
            OP_SEEK(_) => "SEEK",
            OP_ALLOCATE(_) => "ALLOCATE",
            OP_DEALLOCATE(_) => "DEALLOCATE",
            OP_READ_PLUS(_) => "READ_PLUS",
            OP_GETXATTR(_) => "GETXATTR",
            OP_SETXATTR(_) => "SETXATTR",
            OP_LISTXATTRS(_) => "LISTXATTRS",
            OP_REMOVEXATTR(_) => "REMOVEXATTR",
            OP_GET_DIR_DELEGATION(_) => "GET_DIR_DELEGATION",
            _ => "COMPOUND",
        };
        return n;
    }
    name
}

/// The name of an operation's result, for errors.
pub(crate) fn op_name(r: &nfs_resop4) -> &'static str {
    use nfs_opnum4::*;
    match r.discriminant() {
        OP_ACCESS => "ACCESS",
        OP_CLOSE => "CLOSE",
        OP_COMMIT => "COMMIT",
        OP_CREATE => "CREATE",
        OP_DELEGRETURN => "DELEGRETURN",
        OP_GETATTR => "GETATTR",
        OP_GETFH => "GETFH",
        OP_LINK => "LINK",
        OP_LOCK => "LOCK",
        OP_LOCKT => "LOCKT",
        OP_LOCKU => "LOCKU",
        OP_LOOKUP => "LOOKUP",
        OP_LOOKUPP => "LOOKUPP",
        OP_OPEN => "OPEN",
        OP_OPEN_DOWNGRADE => "OPEN_DOWNGRADE",
        OP_PUTFH => "PUTFH",
        OP_PUTROOTFH => "PUTROOTFH",
        OP_READ => "READ",
        OP_READDIR => "READDIR",
        OP_READLINK => "READLINK",
        OP_REMOVE => "REMOVE",
        OP_RENAME => "RENAME",
        OP_RESTOREFH => "RESTOREFH",
        OP_SAVEFH => "SAVEFH",
        OP_SETATTR => "SETATTR",
        OP_WRITE => "WRITE",
        OP_SEQUENCE => "SEQUENCE",
        OP_RECLAIM_COMPLETE => "RECLAIM_COMPLETE",
        OP_COPY => "COPY",
        OP_OFFLOAD_STATUS => "OFFLOAD_STATUS",
        OP_CLONE => "CLONE",
        OP_SEEK => "SEEK",
        OP_ALLOCATE => "ALLOCATE",
        OP_DEALLOCATE => "DEALLOCATE",
        OP_READ_PLUS => "READ_PLUS",
        OP_GETXATTR => "GETXATTR",
        OP_SETXATTR => "SETXATTR",
        OP_LISTXATTRS => "LISTXATTRS",
        OP_REMOVEXATTR => "REMOVEXATTR",
        OP_GET_DIR_DELEGATION => "GET_DIR_DELEGATION",
        _ => "COMPOUND",
    }
}

/// The status of a compound whose last result failed, as an error.
pub(crate) fn failure(r: &Results) -> Error {
    let op = r.last().map_or("COMPOUND", op_name);
    Error::Nfs4 { op, status: r.status() }
}

/// What a reply's first result says of the SEQUENCE sent.
enum Sequence {
    Done {
        highest_slotid: u32,
        target_highest_slotid: u32,
        flags: u32,
    },
    Failed(nfsstat4),
    /// No result at all: the compound was refused before SEQUENCE.
    Missing,
}

fn sequence_of(first: Option<&nfs_resop4>) -> Sequence {
    match first {
        Some(nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(ok))) => Sequence::Done {
            highest_slotid: ok.sr_highest_slotid,
            target_highest_slotid: ok.sr_target_highest_slotid,
            flags: ok.sr_status_flags,
        },
        Some(nfs_resop4::OP_SEQUENCE(SEQUENCE4res::default(status))) => Sequence::Failed(*status),
        // Anything else fails the check before it matters.
        _ => Sequence::Missing,
    }
}

fn lost_session(s: nfsstat4) -> bool {
    use nfsstat4::*;
    matches!(s, NFS4ERR_BADSESSION | NFS4ERR_DEADSESSION | NFS4ERR_STALE_CLIENTID | NFS4ERR_EXPIRED)
}

impl Nfs41 {
    /// A slot, with the session it is of and that session's generation,
    /// read under the table's lock: a recovery replaces both under it.
    async fn acquire_slot(&self) -> (Slot, sessionid4, u64) {
        loop {
            let freed = self.slot_freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut table = self.slots.lock();
                if let Some(slot) = table.acquire() {
                    let st = self.session.lock();
                    return (slot, st.sessionid, st.generation);
                }
            }
            freed.await;
        }
    }

    /// `ops` behind a SEQUENCE; every operation succeeded. Their results
    /// come back in order, the SEQUENCE's removed.
    pub(crate) async fn compound(&self, ops: Vec<nfs_argop4>) -> Result<Results> {
        let r = self.compound_status(ops).await?;
        if r.status() != nfsstat4::NFS4_OK {
            return Err(failure(&r));
        }
        Ok(r)
    }

    /// `ops` behind a SEQUENCE, the reply whole (SEQUENCE's result
    /// removed) whatever its status, once it passed [`reply::check`]. A
    /// session the server lost is re-established and the request sent
    /// again; NFS4ERR_DELAY and NFS4ERR_GRACE are retried after a wait that
    /// starts at 1 ms and doubles, as long as nothing in the compound took
    /// effect before the operation that asked for the wait.
    pub(crate) async fn compound_status(&self, mut ops: Vec<nfs_argop4>) -> Result<Results> {
        let name = main_op(&ops);
        let first_change = ops.iter().position(changes_state).unwrap_or(ops.len());
        let sent: Vec<nfs_opnum4> =
            std::iter::once(nfs_opnum4::OP_SEQUENCE).chain(ops.iter().map(nfs_argop4::discriminant)).collect();
        let mut backoff = Backoff::new(&self.retry);
        // A slot whose last send the server is still executing, to send on
        // again with the same sequence id (RFC 8881 section 2.10.6.2).
        let mut kept: Option<(SlotGuard, Slot, sessionid4)> = None;
        loop {
            let (slot, s, sessionid) = match kept.take() {
                Some(k) => k,
                None => {
                    let (s, sessionid, generation) = self.acquire_slot().await;
                    (SlotGuard { nfs: self, slot: Some(s), generation }, s, sessionid)
                }
            };
            let generation = slot.generation;
            let mut argarray = Vec::with_capacity(ops.len() + 1);
            argarray.push(nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
                sa_sessionid: sessionid,
                sa_sequenceid: s.seqid,
                sa_slotid: s.id,
                sa_highest_slotid: s.highest,
                sa_cachethis: first_change < ops.len(),
            }));
            argarray.extend(ops.iter().cloned());
            let args = COMPOUND4args { tag: Bytes::new(), minorversion: self.minor, argarray };
            let bytes = self
                .conn
                .call_as(Some(name), NFS4_PROGRAM, NFS_V4, 1, xdr::to_segments(&args))
                .await
                .map_err(|err| Error::Rpc { proc: name, err });
            let bytes = match bytes {
                Ok(b) => b,
                Err(e) => return Err(e), // the guard marks the slot Unknown
            };
            let r = COMPOUND4res::decode(&mut Decoder::new(bytes))
                .map_err(|e| Error::Decode { proc: name, why: e.to_string() })?;
            let status = r.status;
            let verdict = reply::check(&sent, status, &r.resarray);
            let retry_status = match (sequence_of(r.resarray.first()), verdict) {
                (Sequence::Done { highest_slotid, target_highest_slotid, flags }, verdict) => {
                    // The server executed the SEQUENCE: its sequence id
                    // is used whatever the rest of the reply is.
                    slot.finish(SlotOutcome::Done { highest_slotid, target_highest_slotid });
                    self.on_status_flags(flags);
                    verdict.map_err(|why| reply::bad_reply(name, why))?;
                    // The check left a failed result last, after the SEQUENCE.
                    let failed_at = r.resarray.len().saturating_sub(2);
                    match status {
                        nfsstat4::NFS4ERR_DELAY | nfsstat4::NFS4ERR_GRACE if failed_at <= first_change => status,
                        s if lost_session(s) && failed_at <= first_change => s,
                        _ => {
                            let results = r.resarray.into_iter().skip(1).collect();
                            return Ok(Results::new(name, status, results));
                        }
                    }
                }
                // Not a reply to this request: whether the server executed
                // it is unknown (the guard says so of the slot).
                (_, Err(why)) => return Err(reply::bad_reply(name, why)),
                // The server is still executing this slot's request with
                // this sequence id: the RPC layer sent this one again after
                // a timeout. Asking on another slot, or giving this one back
                // as unused, would put a different request under a sequence
                // id the server holds (SEQ_FALSE_RETRY once it is done);
                // the same request goes again on it after the wait, and gets
                // the reply the server kept, or RETRY_UNCACHED_REP.
                (Sequence::Failed(nfsstat4::NFS4ERR_DELAY), Ok(())) => {
                    kept = Some((slot, s, sessionid));
                    nfsstat4::NFS4ERR_DELAY
                }
                (Sequence::Failed(status), Ok(())) => {
                    let outcome = match status {
                        nfsstat4::NFS4ERR_SEQ_MISORDERED => SlotOutcome::Misordered,
                        nfsstat4::NFS4ERR_RETRY_UNCACHED_REP | nfsstat4::NFS4ERR_SEQ_FALSE_RETRY => SlotOutcome::Used,
                        _ => SlotOutcome::NotExecuted,
                    };
                    slot.finish(outcome);
                    status
                }
                (Sequence::Missing, Ok(())) => {
                    slot.finish(SlotOutcome::NotExecuted);
                    if !lost_session(status) {
                        return Err(Error::Nfs4 { op: "COMPOUND", status });
                    }
                    status
                }
            };
            if lost_session(retry_status) {
                Box::pin(self.recover(generation, retry_status)).await?;
                // The stateids the request carries may be from before.
                self.remap_stateids(&mut ops);
                continue;
            }
            // An uncached reply of a request that changed state: sending it
            // again would do that twice.
            if retry_status == nfsstat4::NFS4ERR_RETRY_UNCACHED_REP && first_change < ops.len() {
                return Err(Error::Nfs4 { op: "SEQUENCE", status: retry_status });
            }
            match retry_status {
                nfsstat4::NFS4ERR_DELAY
                | nfsstat4::NFS4ERR_GRACE
                | nfsstat4::NFS4ERR_SEQ_MISORDERED
                | nfsstat4::NFS4ERR_BADSLOT
                | nfsstat4::NFS4ERR_RETRY_UNCACHED_REP
                | nfsstat4::NFS4ERR_SEQ_FALSE_RETRY => {
                    let Some(wait) = backoff.next_wait() else {
                        return Err(Error::Nfs4 { op: name, status: retry_status });
                    };
                    self.counters.lock().delay_retries += 1;
                    tokio::time::sleep(Duration::from_nanos(wait)).await;
                }
                status => return Err(Error::Nfs4 { op: "SEQUENCE", status }),
            }
        }
    }

    /// What SEQUENCE's status flags ask of the client.
    fn on_status_flags(&self, flags: u32) {
        const LOST: u32 = SEQ4_STATUS_CB_PATH_DOWN
            | SEQ4_STATUS_CB_PATH_DOWN_SESSION
            | SEQ4_STATUS_RECALLABLE_STATE_REVOKED
            | SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED
            | SEQ4_STATUS_ADMIN_STATE_REVOKED;
        // The server cannot tell this client of changes (no back channel),
        // or took its delegations: what a directory delegation let it
        // trust is not true any more. On the flags' rise only: they stay
        // up until the state is freed, and delegations granted since are
        // good.
        let before = self.seen_status_flags.swap(flags & LOST, std::sync::atomic::Ordering::AcqRel);
        if flags & LOST & !before != 0 {
            self.dir_delegations_lost();
        }
        if flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION) != 0 {
            // After a reconnect the server has no way to call back: offer
            // this connection again, once at a time.
            if let Ok(_one) = self.recovering.try_lock() {
                if let Some(me) = self.arc() {
                    tokio::spawn(async move { me.bind_back_channel().await });
                }
            }
        }
        if flags & (SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING | SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED) != 0
            && self.cb_sec.refresh_due()
        {
            tracing::info!(flags, "the context lent for callbacks ends: lending a newer one");
            if let Some(me) = self.arc() {
                tokio::spawn(async move { me.refresh_back_channel(super::session::CbRefresh::Expiring).await });
            }
        }
        if flags
            & (SEQ4_STATUS_RECALLABLE_STATE_REVOKED
                | SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED
                | SEQ4_STATUS_ADMIN_STATE_REVOKED)
            != 0
        {
            tracing::warn!(flags, "the server revoked delegations or opens of this client");
            self.delegations.lock().drain();
        }
    }
}

//! POSIX and flock locks through the mount, as NFSv4.1 byte-range locks
//! (LOCK, LOCKT, LOCKU) or, over NFSv3, NLM locks (LOCK, TEST, UNLOCK),
//! held for the kernel's lock owner, so programs on different machines
//! (or mounts) exclude each other. Over NFSv3 against a server without a
//! lock manager the mount does not take them: the kernel then keeps locks
//! local to the machine, as it does for any FUSE file system without lock
//! support.

use std::sync::Arc;

use client::{Client, LockConflict};
use fuser::{Errno, ReplyEmpty, ReplyLock};
use proto::nfs3::nfs_fh3;

use crate::attr::errno;
use crate::files::Shared;

/// The kernel's "to the end of the file" (OFFSET_MAX).
const TO_END: u64 = i64::MAX as u64;

/// FUSE's inclusive [start, end] as NFSv4's (offset, length).
fn range(start: u64, end: u64) -> (u64, u64) {
    if end >= TO_END {
        (start, u64::MAX)
    } else {
        (start, end.saturating_sub(start).saturating_add(1))
    }
}

/// The inclusive end of a conflicting lock the server described. A
/// length of all ones is "to the end of the file"; so, from some servers
/// (Ganesha), is a length of 0, which no lock can have; and so is any end
/// past the kernel's OFFSET_MAX, which it would refuse with EIO.
fn end_of(c: &LockConflict) -> u64 {
    match c.length.checked_sub(1).and_then(|l| c.offset.checked_add(l)) {
        Some(end) if end < TO_END => end,
        _ => TO_END,
    }
}

fn kind(write: bool) -> i32 {
    if write {
        libc::F_WRLCK
    } else {
        libc::F_RDLCK
    }
}

/// One lock request from the kernel: whose, on which file, what range
/// (inclusive, as FUSE gives it) and what kind (F_RDLCK, F_WRLCK, F_UNLCK).
pub struct LockRequest {
    pub client: Arc<Client>,
    pub fh: nfs_fh3,
    pub file: Shared,
    pub owner: u64,
    pub start: u64,
    pub end: u64,
    pub typ: i32,
}

impl LockRequest {
    fn write(&self) -> bool {
        self.typ == libc::F_WRLCK
    }

    fn range(&self) -> (u64, u64) {
        range(self.start, self.end)
    }

    /// The server must hold an open with the access the lock needs. The
    /// open is made under the file's lock; the wait for a lock held
    /// elsewhere is not, so reads and writes of other processes go on.
    async fn opened(&self, write: bool) -> Result<(), Errno> {
        self.file.lock().await.open_on_server(write).await.map_err(|e| errno(&e))
    }
}

/// Releases every lock `owner` holds on `fh`: POSIX locks when the owner
/// closes any descriptor of the file (FUSE flush), flock locks when the
/// last descriptor of the open file description goes (FUSE release).
/// Nothing is sent when this client holds no lock state on the file.
pub async fn release_owner(client: &Client, fh: &nfs_fh3, owner: u64) -> Result<(), Errno> {
    if !client.has_lock_state(fh) {
        return Ok(());
    }
    client.unlock_handle(fh, owner, (0, u64::MAX)).await.map_err(|e| errno(&e))
}

/// getlk: the lock in the way, or F_UNLCK when there is none.
pub async fn test(r: LockRequest, pid: u32, reply: ReplyLock) {
    if let Err(e) = r.opened(false).await {
        return reply.error(e);
    }
    match r.client.test_lock_handle(&r.fh, r.owner, r.range(), r.write()).await {
        Ok(None) => reply.locked(r.start, r.end, libc::F_UNLCK, pid),
        // The holder may be on another machine: no pid to give.
        Ok(Some(c)) => reply.locked(c.offset, end_of(&c), kind(c.write), 0),
        Err(e) => reply.error(errno(&e)),
    }
}

/// setlk/setlkw: take (waiting when `sleep`) or release a lock.
pub async fn set(r: LockRequest, sleep: bool, reply: ReplyEmpty) {
    let done = if r.typ == libc::F_UNLCK {
        r.client.unlock_handle(&r.fh, r.owner, r.range()).await.map(|_| None)
    } else {
        if let Err(e) = r.opened(r.write()).await {
            return reply.error(e);
        }
        r.client.lock_handle(&r.fh, r.owner, r.range(), r.write(), sleep).await
    };
    match done {
        Ok(None) => reply.ok(),
        Ok(Some(_)) => reply.error(Errno::EAGAIN),
        Err(e) => reply.error(errno(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_end_where_the_kernel_can_say() {
        let c = |offset, length| LockConflict { offset, length, write: true };
        assert_eq!(end_of(&c(0, 0)), TO_END);
        assert_eq!(end_of(&c(5, u64::MAX)), TO_END);
        assert_eq!(end_of(&c(1, u64::MAX - 1)), TO_END);
        assert_eq!(end_of(&c(10, 1)), 10);
        assert_eq!(end_of(&c(10, 5)), 14);
    }
}

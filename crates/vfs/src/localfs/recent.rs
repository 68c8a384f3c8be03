//! The object a request resolved last, kept for the next call of that
//! request (see [`crate::RequestScope`]).
//!
//! A request's first statx of an object (the protocol layer's resolution
//! of its handle) is all the next call on it needs: the backend's own
//! resolution of the directory a CREATE, LOOKUP or REMOVE works in, the
//! GETATTR of the object an NFSv4 LOOKUP just found, the post-operation
//! attributes of a READ that took them after reading. One slot per thread,
//! taken by the next resolution whatever it is for, and so emptied by
//! every call that can change an object (all of them resolve the object,
//! or open it for I/O, first): attributes kept before a change are never
//! handed out after it. Outside a scope nothing is kept.

use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustix::fs::Statx;

use super::LocalFs;
use crate::FileId;

struct Recent {
    /// Which LocalFs and which scope kept it.
    fs: u64,
    scope: u64,
    id: FileId,
    stx: Statx,
    /// The O_PATH fd the object was resolved to; `None` when the statx was
    /// taken through an fd open for I/O, which only GETATTR may use.
    fd: Option<Arc<OwnedFd>>,
}

thread_local! {
    static RECENT: RefCell<Option<Recent>> = const { RefCell::new(None) };
}

static INSTANCES: AtomicU64 = AtomicU64::new(1);

/// A number telling this LocalFs from others in the same process.
pub(super) fn new_instance() -> u64 {
    INSTANCES.fetch_add(1, Ordering::Relaxed)
}

/// Drops what the thread kept (its scope ended).
pub(crate) fn forget() {
    // Taken out before it is dropped: closing an fd must not run while
    // the slot is borrowed.
    let kept = RECENT.with(|r| r.borrow_mut().take());
    drop(kept);
}

impl LocalFs {
    /// Keeps `stx` of `id` (and its O_PATH `fd`) for the next call of the
    /// current request, if there is one.
    pub(super) fn keep_recent(&self, id: FileId, stx: &Statx, fd: Option<&Arc<OwnedFd>>) {
        let Some(scope) = crate::scope::current() else {
            return;
        };
        let kept = Recent { fs: self.instance, scope, id, stx: *stx, fd: fd.cloned() };
        let old = RECENT.with(|r| r.borrow_mut().replace(kept));
        drop(old);
    }

    /// Empties the slot, returning what it kept about `id` in the current
    /// request: its statx, and its O_PATH fd if `need_fd` (without one,
    /// nothing is returned).
    pub(super) fn take_recent(&self, id: FileId, need_fd: bool) -> Option<(Statx, Option<Arc<OwnedFd>>)> {
        let kept = RECENT.with(|r| r.borrow_mut().take())?;
        let scope = crate::scope::current()?;
        if kept.fs != self.instance || kept.scope != scope || kept.id != id || (need_fd && kept.fd.is_none()) {
            return None;
        }
        self.recent_reused.fetch_add(1, Ordering::Relaxed);
        Some((kept.stx, kept.fd))
    }
}

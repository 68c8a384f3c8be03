//! Change events of directories, for NFSv4.1 directory delegations
//! (RFC 8881 section 10.9): the server tells the holders of a
//! directory's delegation what changed in it, whoever made the change
//! (an NFSv4 or NFSv3 client, or a program on the server's host). A
//! backend that can report every change to a directory offers
//! [`DirEvents`]; one that cannot (a distributed store changed by other
//! clients) offers none, and its directories get no delegations.

use std::os::fd::BorrowedFd;

use bytes::Bytes;

use crate::{FileId, VfsResult};

/// A directory being watched. The same directory watched twice gives the
/// same id (the caller counts its watchers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatchId(pub i32);

/// What happened in a watched directory, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirEvent {
    /// A name appeared: created, linked, made by mkdir, symlink or mknod.
    Added { watch: WatchId, name: Bytes },
    /// A name went (unlink, rmdir).
    Removed { watch: WatchId, name: Bytes },
    /// A name was renamed away; `cookie` pairs it with the [`DirEvent::MovedIn`]
    /// of the same rename, in this directory or another.
    MovedOut { watch: WatchId, name: Bytes, cookie: u32 },
    /// A name was renamed here, possibly over an existing one.
    MovedIn { watch: WatchId, name: Bytes, cookie: u32 },
    /// An entry's attributes or data changed (chmod, chown, utimes, a
    /// write that moved size and mtime).
    ChildChanged { watch: WatchId, name: Bytes },
    /// The directory's own attributes changed (not by a change of its
    /// entries, which moves them too).
    DirChanged { watch: WatchId },
    /// The directory is gone or no longer watched (removed, its file
    /// system unmounted): nothing more will be reported of it.
    Gone { watch: WatchId },
    /// Events were lost: every watched directory may have changed in ways
    /// not reported.
    Overflow,
}

/// A backend's change events of directories.
pub trait DirEvents: Send + Sync {
    /// Starts reporting the changes of directory `dir`.
    fn watch(&self, dir: FileId) -> VfsResult<WatchId>;
    /// Stops reporting the changes of `watch`; a [`DirEvent::Gone`] may
    /// still follow.
    fn unwatch(&self, watch: WatchId);
    /// A descriptor that becomes readable while events wait, for the
    /// server's poller.
    fn ready_fd(&self) -> BorrowedFd<'_>;
    /// Up to `max` events that wait, without blocking.
    fn take(&self, max: usize) -> Vec<DirEvent>;
}

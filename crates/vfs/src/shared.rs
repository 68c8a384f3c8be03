//! Coordination with the other servers of a distributed store: what a
//! backend offers ([`crate::Vfs::shared_store`]) when several heads serve
//! one file system, so that each sees the delegations, locks and share
//! reservations the others grant.

use crate::{FileId, RangeLock, VfsResult};

/// Receives the ids of files whose store delegation is wanted back (see
/// [`SharedStore::delegate`]).
pub type DelegationRecallSink = std::sync::Arc<dyn Fn(FileId) + Send + Sync>;

/// Where a store tells a server that another server is about to grant an
/// OPEN that denies ([`SharedStore::watch_share_denials`]); it must only
/// queue.
pub type ShareDenialSink = std::sync::Arc<dyn Fn() + Send + Sync>;

/// A file system other servers change behind this one. The server keeps
/// its own tables too and asks the store only for such file systems.
pub trait SharedStore: Send + Sync {
    /// Takes a delegation in the store on file `id` (`write`: for a write
    /// delegation), so that other servers' (and the store's other
    /// clients') access that would conflict with a delegation this server
    /// hands out waits until it is given back.
    /// `Ok(false)`: not now (someone else uses the file, or the store does
    /// not offer them); the server then grants none. Taking one already
    /// held is a no-op. When the store wants it back, the sink given to
    /// [`SharedStore::on_delegation_recall`] is called with `id`; the
    /// server then recalls its own delegations on the file and calls
    /// [`SharedStore::undelegate`], at the latest
    /// [`SharedStore::delegation_return_deadline`] after the recall.
    fn delegate(&self, id: FileId, write: bool) -> VfsResult<bool>;

    /// Gives back the store's delegation on `id` (none held: nothing).
    fn undelegate(&self, id: FileId);

    /// Where the store's recalls go; called from any thread, possibly with
    /// the store's own locks held, so it must only queue the id. Set once;
    /// later calls are ignored.
    fn on_delegation_recall(&self, sink: DelegationRecallSink);

    /// How long after a recall the store's delegation must be given back
    /// (the server revokes its clients' delegations on the file by then).
    fn delegation_return_deadline(&self) -> std::time::Duration;

    /// Takes `lock` (or releases, with [`RangeLock::Unlock`]) on
    /// `start..=end` of file `id` for `owner` in the store itself, where
    /// the locks other servers grant are seen, with POSIX semantics per
    /// owner (a new lock replaces what the owner held in the range).
    /// `Ok(false)`: another owner there holds a conflicting lock; nothing
    /// changed.
    fn range_lock(&self, id: FileId, owner: u64, lock: RangeLock, start: u64, end: u64) -> VfsResult<bool>;

    /// A lock that another owner holds in the store and that conflicts
    /// with `lock` on `start..=end` of file `id` for `owner` (its kind and
    /// range, `end` inclusive), or `None`. LOCKT and NLM TEST ask it when
    /// this server's own table has no conflict, so the locks other servers
    /// granted are seen too.
    fn range_test(
        &self,
        id: FileId,
        owner: u64,
        lock: RangeLock,
        start: u64,
        end: u64,
    ) -> VfsResult<Option<(RangeLock, u64, u64)>>;

    /// Makes `owner`'s share reservation on file `id` (RFC 8881 section
    /// 9.7) `access`/`deny` in the store itself, where the reservations
    /// other servers grant are seen. The bits are OPEN's:
    /// [`crate::SHARE_READ`] and [`crate::SHARE_WRITE`]; both 0 releases
    /// the reservation. `Ok(false)`: another owner denies an access newly
    /// asked for, or accesses what is newly denied; nothing changed. The
    /// server calls this after its own table found no conflict.
    fn share_reserve(&self, id: FileId, owner: u64, access: u32, deny: u32) -> VfsResult<bool>;

    /// Opens file `id` in the store (for writing too with `write`) for an
    /// NFS OPEN whose share modes are not held there, so that the store
    /// knows it open as other servers see it (their delegations on it are
    /// recalled, and none granted while it stays open).
    fn open_shared(&self, id: FileId, write: bool) -> VfsResult<()>;

    /// On a server that learns of the others' denials from nowhere else:
    /// `Ok(true)` when the store says no server has granted an OPEN that
    /// denies yet, and will tell this one (calling `sink` once, from any
    /// thread, possibly with the store's locks held) before any does.
    /// Until then an access cannot conflict anywhere, so this server need
    /// not hold its opens' modes in the store
    /// ([`SharedStore::share_reserve`]); once told, it holds them (those
    /// granted already first) and calls
    /// [`SharedStore::unwatch_share_denials`], which lets the other server
    /// go on. `Ok(false)`: a denial was granted before, or the store
    /// cannot say; hold them from the start.
    fn watch_share_denials(&self, sink: ShareDenialSink) -> VfsResult<bool>;

    /// Whether the store says a denial was granted, for a server watching:
    /// a check beside the sink, which a store may fail to call (a session
    /// that lapsed while the server was stopped).
    fn share_denials_marked(&self) -> VfsResult<bool>;

    /// Stops watching (no watch: nothing).
    fn unwatch_share_denials(&self);

    /// Before this server grants its first OPEN that denies, having
    /// stopped watching and holding its own opens' modes in the store:
    /// tells every server watching, and returns once each has stopped
    /// watching, so all of them hold their opens' modes there. Blocking.
    fn mark_share_denials(&self) -> VfsResult<()>;
}

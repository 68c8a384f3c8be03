//! The stateids of open, lock and delegation state, kept in shards by
//! file: every stateid of a file sits in that file's shard, under the
//! shard's own lock, and a stateid's `other` carries its shard's number,
//! so that it is found without knowing its file.
//!
//! The stateid check of I/O (READ, WRITE, SETATTR of the size) takes only
//! the file's shard ([`super::stateids::check_io`]): clients doing I/O to
//! different files never share a lock, and I/O does not queue behind OPEN,
//! LOCK or CLOSE of other files. A change that also touches a client's
//! owners and indexes takes that client's lock first
//! ([`super::stateids::by_client`]): the order is tables (when taken),
//! then one client, then one shard. The byte-range locks of
//! a file live in its shard too, so that NLM's locks, which have no
//! owners in the tables, take only the file's shard.
//!
//! At most one shard is held at a time by a thread (checked, [`Held`]),
//! so that two files' shards can never be taken in opposite orders.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};

use super::lockmgr::{LockBook, LockManager, LockOwner};
use super::stateids::{Entry, Other, OwnerKey};
use super::FileKey;

/// How many shards the files' state is kept in: enough that a server's
/// cores rarely meet on one, few enough that a walk over all of them (a
/// client's expiry) stays cheap. A power of two at most 256 (the shard's
/// number is the last byte of a stateid's `other`).
pub(crate) const FILE_SHARDS: usize = 64;

/// One shard: the stateids and byte-range locks of the files that hash
/// to it.
#[derive(Debug, Default)]
pub(crate) struct FileShard {
    pub(crate) ids: HashMap<Other, Entry>,
    /// Open and delegation stateids per file.
    pub(crate) files: HashMap<FileKey, Vec<Other>>,
    /// The byte-range locks on the files (NFSv4 and NLM alike).
    pub(crate) locks: LockManager,
    /// NLM share reservations per file ([`super::nlm_shares`]).
    pub(crate) nlm_shares: HashMap<FileKey, Vec<super::nlm_shares::NlmShare>>,
    /// NFSv4.0 open stateids of this shard just closed → their owner
    /// (replays of CLOSE).
    pub(crate) closed: HashMap<Other, OwnerKey>,
    /// Files removed while open, kept by the backend until the last open
    /// or delegation stateid of the file goes (see [`super::unlinked`]).
    pub(crate) kept_unlinked: HashMap<FileKey, vfs::Kept>,
}

impl FileShard {
    /// The open and delegation stateids on `file`.
    pub(crate) fn on_file(&self, file: FileKey) -> impl Iterator<Item = (&Other, &Entry)> {
        self.files.get(&file).into_iter().flatten().filter_map(move |o| self.ids.get(o).map(|e| (o, e)))
    }
}

#[derive(Debug)]
pub(crate) struct FileShards {
    shards: Box<[Mutex<FileShard>]>,
    /// How many times a shard's lock was taken (tests count a request's).
    locked: AtomicU64,
    /// What the shards' lock lists share (counts per client, releases).
    pub(crate) lock_book: Arc<LockBook>,
}

impl Default for FileShards {
    fn default() -> FileShards {
        let lock_book = Arc::new(LockBook::default());
        let shard =
            || Mutex::new(FileShard { locks: LockManager::with_book(lock_book.clone()), ..FileShard::default() });
        FileShards { shards: (0..FILE_SHARDS).map(|_| shard()).collect(), locked: AtomicU64::new(0), lock_book }
    }
}

/// The shard `file` is kept in.
pub(crate) fn shard_of_file(file: FileKey) -> usize {
    // File ids of one export are mostly sequential: mixing in the
    // generation and export spreads neighbours over every shard.
    let h = file.1 ^ file.2.rotate_left(17) ^ u64::from(file.0).rotate_left(41);
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % FILE_SHARDS
}

/// The shard stateid `other` was handed out from (its last byte).
pub(crate) fn shard_of_other(other: &Other) -> usize {
    usize::from(other[11]) % FILE_SHARDS
}

impl FileShards {
    /// The shard numbered `i`, locked.
    pub(crate) fn lock(&self, i: usize) -> ShardGuard<'_> {
        let held = Held::take(i);
        self.locked.fetch_add(1, Ordering::Relaxed);
        ShardGuard { guard: self.shards[i % FILE_SHARDS].lock(), _held: held }
    }

    pub(crate) fn of_file(&self, file: FileKey) -> ShardGuard<'_> {
        self.lock(shard_of_file(file))
    }

    pub(crate) fn of_other(&self, other: &Other) -> ShardGuard<'_> {
        self.lock(shard_of_other(other))
    }

    /// Whether `owner` holds a byte-range lock on any file, one shard at
    /// a time.
    pub(crate) fn holds_any_lock(&self, owner: &LockOwner) -> bool {
        (0..FILE_SHARDS).any(|i| self.lock(i).locks.holds_any(owner))
    }

    /// Releases every byte-range lock whose owner `pred` selects (a
    /// client going, an NLM host restarting), one shard at a time.
    pub(crate) fn release_locks_where(&self, pred: impl Fn(&LockOwner) -> bool) {
        for i in 0..FILE_SHARDS {
            self.lock(i).locks.release_where(&pred);
        }
    }

    /// Removes every blocked lock request whose owner `pred` selects (an
    /// NLM host restarting), one shard at a time.
    pub(crate) fn drop_waiters_where(&self, pred: impl Fn(&LockOwner) -> bool) {
        for i in 0..FILE_SHARDS {
            self.lock(i).locks.drop_waiters_where(&pred);
        }
    }

    /// Drops the NLM shares `pred` names, on every file.
    pub(crate) fn nlm_unshare_where(&self, pred: impl Fn(&super::nlm_shares::NlmShare) -> bool) {
        for i in 0..FILE_SHARDS {
            self.lock(i).nlm_unshare_where(None, &pred);
        }
    }

    /// How many times a shard's lock was taken.
    pub(crate) fn locked(&self) -> u64 {
        self.locked.load(Ordering::Relaxed)
    }
}

/// A locked shard.
pub(crate) struct ShardGuard<'a> {
    guard: MutexGuard<'a, FileShard>,
    _held: Held,
}

impl std::ops::Deref for ShardGuard<'_> {
    type Target = FileShard;
    fn deref(&self) -> &FileShard {
        &self.guard
    }
}

impl std::ops::DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut FileShard {
        &mut self.guard
    }
}

impl<'a> ShardGuard<'a> {
    /// The entry of `other`, with the shard held while it is used.
    pub(crate) fn entry(self, other: &Other) -> Option<EntryGuard<'a>> {
        let ShardGuard { guard, _held } = self;
        MutexGuard::try_map(guard, |s| s.ids.get_mut(other)).ok().map(|guard| EntryGuard { guard, _held })
    }
}

/// One stateid's entry, its shard held.
pub(crate) struct EntryGuard<'a> {
    guard: MappedMutexGuard<'a, Entry>,
    _held: Held,
}

impl std::ops::Deref for EntryGuard<'_> {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        &self.guard
    }
}

impl std::ops::DerefMut for EntryGuard<'_> {
    fn deref_mut(&mut self) -> &mut Entry {
        &mut self.guard
    }
}

/// The check that a thread holds one shard at most: a thread-local mark,
/// set while a shard is held. Taking a second shard is a bug that would
/// deadlock (the same shard) or could (two in opposite orders): it panics
/// at once instead, in tests and in service alike; the mark costs a
/// thread-local access beside the lock's own atomic operations.
struct Held;

thread_local! {
    static HELD: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Whether this thread holds a file shard.
pub(crate) fn shard_held() -> bool {
    HELD.with(|h| h.get().is_some())
}

impl Held {
    fn take(shard: usize) -> Held {
        if let Some(other) = HELD.with(|h| h.replace(Some(shard))) {
            panic!("file shard {shard} taken while shard {other} is held");
        }
        Held
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.with(|h| h.set(None));
    }
}

/// The open and delegation stateids of one file, its shard held.
pub(crate) struct FileEntries<'a> {
    pub(crate) shard: ShardGuard<'a>,
    pub(crate) file: FileKey,
}

impl FileEntries<'_> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Other, &Entry)> {
        self.shard.on_file(self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_files_spread_over_every_shard() {
        let mut seen = [0usize; FILE_SHARDS];
        for id in 1000..1000 + 64 * FILE_SHARDS as u64 {
            seen[shard_of_file((1, id, 1))] += 1;
        }
        assert!(seen.iter().all(|n| *n > 0), "{seen:?}");
        assert!(seen.iter().all(|n| *n < 4 * 64), "{seen:?}");
    }

    #[test]
    #[should_panic(expected = "taken while shard")]
    fn a_second_shard_is_refused() {
        let shards = FileShards::default();
        let _a = shards.lock(1);
        let _b = shards.lock(2);
    }

    #[test]
    fn a_shard_is_free_again_once_its_entry_goes() {
        let shards = FileShards::default();
        assert!(shards.lock(3).entry(&[0; 12]).is_none());
        drop(shards.lock(3));
        assert_eq!(shards.locked(), 2);
    }
}

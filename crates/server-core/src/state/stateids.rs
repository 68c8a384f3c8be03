//! Stateids and the state they name: opens, locks, delegations.
//!
//! A stateid's `other` is the server's boot time (4 bytes) followed by a
//! 64-bit counter that never repeats within one server instance, so a
//! stateid from before a restart is recognised as stale and a forged or
//! freed one as bad. Every stateid maps to one [`Entry`] holding its
//! current `seqid` (bumped on each change of the state it names), its
//! client, its file and what it is.
//!
//! Owners (open-owners and lock-owners) are kept per client. In NFSv4.0
//! each owner carries the seqid of its last state-changing request and
//! that request's reply, for replays (RFC 7530 9.1.7); NFSv4.1 ignores
//! owner seqids (the session's slots give exactly-once semantics).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use super::lockmgr::LockOwner;
use super::shards::{EntryGuard, FileEntries, FileShard, FileShards};
use super::FileKey;
use crate::fh::Fh;

/// The server-chosen part of a stateid.
pub(crate) type Other = [u8; 12];

/// What a stateid is presented for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IoKind {
    Read,
    /// WRITE, or SETATTR of the size.
    Write,
}

/// The special stateids READ, WRITE and SETATTR accept (RFC 8881 8.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// All zeros: no state.
    Anonymous,
    /// All ones: READ may bypass share reservations.
    Bypass,
}

/// `Ok(Some(_))` for the anonymous and bypass stateids, `Ok(None)` for an
/// ordinary stateid, NFS4ERR_BAD_STATEID for the other reserved values
/// (including the "current stateid" value once it could not be resolved,
/// and the invalid stateid).
pub(crate) fn special(s: &stateid4) -> Result<Option<Special>, nfsstat4> {
    if s.other == [0; 12] {
        return if s.seqid == 0 { Ok(Some(Special::Anonymous)) } else { Err(nfsstat4::NFS4ERR_BAD_STATEID) };
    }
    if s.other == [0xff; 12] {
        return if s.seqid == u32::MAX { Ok(Some(Special::Bypass)) } else { Err(nfsstat4::NFS4ERR_BAD_STATEID) };
    }
    Ok(None)
}

/// The stateid CLOSE returns in 4.1 (RFC 8881 18.2.4): the invalid one.
pub(crate) fn invalid_stateid() -> stateid4 {
    stateid4 { seqid: u32::MAX, other: [0; 12] }
}

/// The next seqid of a stateid (0 is never used: it means "current" in 4.1).
pub(crate) fn next_seqid(s: u32) -> u32 {
    if s == u32::MAX {
        1
    } else {
        s + 1
    }
}

/// The error for running out of a per-client resource: NFSv4.0 has
/// NFS4ERR_RESOURCE; NFSv4.1 removed it and lists SERVERFAULT instead.
pub(crate) fn resource_error(minor: u32) -> nfsstat4 {
    if minor == 0 {
        nfsstat4::NFS4ERR_RESOURCE
    } else {
        nfsstat4::NFS4ERR_SERVERFAULT
    }
}

/// An open-owner or lock-owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct OwnerKey {
    pub client: u64,
    pub owner: Bytes,
}

/// A reply kept for NFSv4.0 replays, by the operation it answered.
#[derive(Debug, Clone)]
pub(crate) enum Replay {
    Open(Result<OPEN4resok, nfsstat4>, Option<Fh>),
    Close(Result<stateid4, nfsstat4>),
    Confirm(Result<stateid4, nfsstat4>),
    Downgrade(Result<stateid4, nfsstat4>),
    Lock(LOCK4res),
    Locku(Result<stateid4, nfsstat4>),
}

/// What the seqid of an NFSv4.0 request says.
#[derive(Debug)]
pub(crate) enum SeqCheck {
    /// The next request: process it.
    Go,
    /// A retransmission of the last request: answer this again.
    Replay(Replay),
}

/// Errors after which an NFSv4.0 owner's seqid does not advance
/// (RFC 7530 9.1.7).
pub(crate) fn seqid_advances(s: nfsstat4) -> bool {
    use nfsstat4::*;
    !matches!(
        s,
        NFS4ERR_STALE_CLIENTID
            | NFS4ERR_STALE_STATEID
            | NFS4ERR_BAD_STATEID
            | NFS4ERR_BAD_SEQID
            | NFS4ERR_BADXDR
            | NFS4ERR_RESOURCE
            | NFS4ERR_NOFILEHANDLE
            | NFS4ERR_MOVED
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnerSort {
    Open,
    Lock,
}

#[derive(Debug, Default)]
pub(crate) struct Owner {
    /// NFSv4.0: the seqid of the last request that advanced it.
    pub seqid: Option<u32>,
    pub last: Option<Replay>,
    /// NFSv4.0 open-owners: confirmed by OPEN_CONFIRM (or by a
    /// successful first OPEN for owners that need no confirmation).
    pub confirmed: bool,
    /// Stateids naming this owner.
    pub stateids: usize,
    /// NFSv4.0: the open stateid this owner last closed, kept so that a
    /// retransmitted CLOSE finds the owner to replay from.
    pub closed: Option<Other>,
}

#[derive(Debug, Clone)]
pub(crate) struct OpenState {
    pub owner: Bytes,
    pub access: u32,
    pub deny: u32,
    /// Bit `1 << v` for every share_access value `v` used by the OPENs
    /// behind this stateid (what OPEN_DOWNGRADE may return to).
    pub access_seen: u8,
    pub deny_seen: u8,
    /// NFSv4.0: usable only once the owner is confirmed.
    pub confirmed: bool,
    /// Lock stateids derived from this open.
    pub locks: Vec<Other>,
    /// The owner number of this open's share reservation in a shared
    /// store ([`vfs::SharedStore::share_reserve`]); 0 when it holds none there.
    pub store_key: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct LockState {
    pub owner: Bytes,
    pub open: Other,
}

#[derive(Debug, Clone)]
pub(crate) struct DelegState {
    pub write: bool,
    pub fh: nfs_fh4,
    /// When CB_RECALL was first sent.
    pub recalled: Option<Duration>,
    /// The holder answered the recall that it does not hold this
    /// delegation (yet) or to ask again: the recall overtook the reply
    /// granting it (RFC 8881 section 2.10.6.3). Sent again at the next
    /// look, within the same deadline.
    pub recall_again: bool,
    /// Revoked: answers DELEG_REVOKED until FREE_STATEID.
    pub revoked: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Open(OpenState),
    Lock(LockState),
    Deleg(DelegState),
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub seqid: u32,
    pub client: u64,
    pub file: FileKey,
    /// The client's lease, so that I/O under the stateid renews it
    /// without the tables (NFSv4.0 has no SEQUENCE to do it).
    pub lease: std::sync::Arc<super::lease::Lease>,
    pub kind: Kind,
}

impl Entry {
    pub fn stateid(&self, other: Other) -> stateid4 {
        stateid4 { seqid: self.seqid, other }
    }
    pub fn open(&self) -> Option<&OpenState> {
        match &self.kind {
            Kind::Open(o) => Some(o),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Stateids {
    next: u64,
    /// The entries of the stateids and the file index, by file
    /// ([`super::shards`]).
    pub(crate) shards: std::sync::Arc<FileShards>,
    pub(crate) open_owners: HashMap<OwnerKey, Owner>,
    pub(crate) lock_owners: HashMap<OwnerKey, Owner>,
    /// The open stateid of (open-owner, file).
    pub(crate) opens_by: HashMap<(OwnerKey, FileKey), Other>,
    /// The lock stateid of (lock-owner, file).
    pub(crate) locks_by: HashMap<(OwnerKey, FileKey), Other>,
    /// How many files the shards' `files` hold, readable without the tables' lock:
    /// a removal need not ask about a file's opens while there are none.
    pub(crate) files_held: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Every stateid of each client.
    pub(crate) by_client: HashMap<u64, HashSet<Other>>,
    /// How many of each client's stateids are delegations.
    delegs_by_client: HashMap<u64, usize>,
    /// NFSv4.0 closed open stateids → their owner (replays of CLOSE).
    pub(crate) closed: HashMap<Other, OwnerKey>,
    /// Stateids of purged clients (lease expiry, a new incarnation), so
    /// that their use answers NFS4ERR_EXPIRED (RFC 7530 9.6.3) rather than
    /// BAD_STATEID; oldest forgotten first once `expired_cap` are kept.
    expired: HashSet<Other>,
    expired_order: VecDeque<Other>,
    pub(crate) expired_cap: usize,
    /// The files under write delegations (revoked ones included),
    /// readable without the tables' lock (see
    /// [`super::State4::write_delegated`]).
    pub(crate) write_delegated: std::sync::Arc<super::WriteDelegated>,
    /// Share reservations held in a shared store by opens that went
    /// (file, store key), to release there after the request; with
    /// `shares_pending` set whenever it gains entries.
    pub(crate) released_shares: Vec<(FileKey, u64)>,
    pub(crate) shares_pending: std::sync::Arc<std::sync::atomic::AtomicBool>,
    next_store_key: u64,
    /// Files removed while open, kept by the backend until the last open
    /// or delegation stateid of the file goes (see [`super::unlinked`]).
    pub(crate) kept_unlinked: HashMap<FileKey, vfs::Kept>,
}

pub(crate) fn v4_lock_owner(client: u64, owner: &Bytes) -> LockOwner {
    LockOwner::V4 { client, owner: owner.clone() }
}

impl Stateids {
    /// A new `other`, never handed out before by this server instance.
    /// A number for a new open's share reservation in a shared store,
    /// unlike those of this server's other opens and lock-owners (which
    /// the store knows by a hash too) and of its earlier instances.
    pub(crate) fn new_store_key(&mut self, boot: u32) -> u64 {
        use std::hash::{Hash, Hasher};
        self.next_store_key += 1;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (b"share reservation", boot, self.next_store_key).hash(&mut h);
        h.finish().max(1)
    }

    /// Claims the release of store key `key` from `released_shares`, for
    /// a caller that releases it itself at once (CLOSE: an open that
    /// another client makes right after must not be refused by it).
    pub(crate) fn take_released_share(&mut self, key: u64) -> bool {
        let before = self.released_shares.len();
        self.released_shares.retain(|(_, k)| *k != key);
        self.released_shares.len() != before
    }

    /// Files `other` (an open or a delegation) to `file` in its shard.
    fn file_push(&self, shard: &mut FileShard, file: FileKey, other: Other) {
        let v = shard.files.entry(file).or_default();
        if v.is_empty() {
            self.files_held.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        v.push(other);
    }

    /// A new `other` in shard `shard`: the instance's stamp, then a
    /// counter that never repeats, then the shard's number.
    pub(crate) fn new_other(&mut self, boot: u32, shard: usize) -> Other {
        self.next += 1;
        let mut o = [0u8; 12];
        o[..4].copy_from_slice(&boot.to_be_bytes());
        o[4..].copy_from_slice(&((self.next << 8) | (shard as u64 & 0xff)).to_be_bytes());
        o
    }

    /// The entry of `other`, its shard held while it is used.
    pub(crate) fn get(&self, other: &Other) -> Option<EntryGuard<'_>> {
        self.shards.of_other(other).entry(other)
    }

    /// The entry of `other` to change (under the tables' lock, which the
    /// `&mut` stands for).
    pub(crate) fn get_mut(&mut self, other: &Other) -> Option<EntryGuard<'_>> {
        self.shards.of_other(other).entry(other)
    }

    /// Every stateid whose entry satisfies `pred`, one shard at a time.
    pub(crate) fn all_matching(&self, pred: impl Fn(&Entry) -> bool) -> Vec<Other> {
        (0..super::shards::FILE_SHARDS)
            .flat_map(|i| {
                let shard = self.shards.lock(i);
                shard.ids.iter().filter(|(_, e)| pred(e)).map(|(o, _)| *o).collect::<Vec<_>>()
            })
            .collect()
    }

    /// Whether any stateid of `client` satisfies `pred`.
    pub(crate) fn any_of_client(&self, client: u64, pred: impl Fn(&Entry) -> bool) -> bool {
        self.by_client.get(&client).is_some_and(|set| set.iter().any(|o| self.get(o).is_some_and(|e| pred(&e))))
    }

    /// Runs `f` on the delegation state of `other`, if it is a delegation.
    pub(crate) fn update_deleg<R>(&mut self, other: &Other, f: impl FnOnce(&mut DelegState) -> R) -> Option<R> {
        match &mut self.get_mut(other)?.kind {
            Kind::Deleg(d) => Some(f(d)),
            _ => None,
        }
    }

    /// Runs `f` on the open state of `other`, if it is an open.
    pub(crate) fn update_open<R>(&mut self, other: &Other, f: impl FnOnce(&mut OpenState) -> R) -> Option<R> {
        match &mut self.get_mut(other)?.kind {
            Kind::Open(o) => Some(f(o)),
            _ => None,
        }
    }

    /// Whether any open or delegation is held on `file`.
    pub(crate) fn file_held(&self, file: FileKey) -> bool {
        self.shards.of_file(file).files.contains_key(&file)
    }

    /// Adds a stateid for `entry`, or the resource error when its client
    /// already holds `max` stateids.
    pub fn insert(&mut self, boot: u32, max: usize, minor: u32, entry: Entry) -> Result<Other, nfsstat4> {
        if self.by_client.get(&entry.client).is_some_and(|s| s.len() >= max) {
            return Err(resource_error(minor));
        }
        let shards = self.shards.clone();
        let mut shard = shards.of_file(entry.file);
        let other = self.new_other(boot, super::shards::shard_of_file(entry.file));
        self.by_client.entry(entry.client).or_default().insert(other);
        match &entry.kind {
            Kind::Open(o) => {
                self.file_push(&mut shard, entry.file, other);
                let key = OwnerKey { client: entry.client, owner: o.owner.clone() };
                self.open_owners.entry(key.clone()).or_default().stateids += 1;
                self.opens_by.insert((key, entry.file), other);
            }
            Kind::Lock(l) => {
                let key = OwnerKey { client: entry.client, owner: l.owner.clone() };
                self.lock_owners.entry(key.clone()).or_default().stateids += 1;
                self.locks_by.insert((key, entry.file), other);
                if let Some(Kind::Open(o)) = shard.ids.get_mut(&l.open).map(|e| &mut e.kind) {
                    o.locks.push(other);
                }
            }
            Kind::Deleg(d) => {
                self.file_push(&mut shard, entry.file, other);
                *self.delegs_by_client.entry(entry.client).or_default() += 1;
                self.write_delegated.note_held(true);
                if d.write {
                    self.write_delegated.add(entry.file);
                }
            }
        }
        shard.ids.insert(other, entry);
        Ok(other)
    }

    /// Removes one stateid and its indexes (not the locks it holds in the
    /// lock manager: callers release those first). An open takes its lock
    /// stateids with it.
    pub fn remove(&mut self, other: &Other) -> Option<Entry> {
        let shards = self.shards.clone();
        let mut shard = shards.of_other(other);
        let e = shard.ids.remove(other)?;
        if let Kind::Deleg(d) = &e.kind {
            if let Some(n) = self.delegs_by_client.get_mut(&e.client) {
                *n -= 1;
                if *n == 0 {
                    self.delegs_by_client.remove(&e.client);
                }
            }
            self.write_delegated.note_held(false);
            if d.write {
                self.write_delegated.remove(e.file);
            }
        }
        if let Some(set) = self.by_client.get_mut(&e.client) {
            set.remove(other);
            if set.is_empty() {
                self.by_client.remove(&e.client);
            }
        }
        let kept = &mut self.kept_unlinked;
        let held = &self.files_held;
        let mut unfile = |files: &mut HashMap<FileKey, Vec<Other>>| {
            if let Some(v) = files.get_mut(&e.file) {
                v.retain(|o| o != other);
                if v.is_empty() {
                    files.remove(&e.file);
                    held.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    kept.remove(&e.file);
                }
            }
        };
        match &e.kind {
            Kind::Open(o) => {
                unfile(&mut shard.files);
                drop(shard);
                if o.store_key != 0 {
                    self.released_shares.push((e.file, o.store_key));
                    self.shares_pending.store(true, std::sync::atomic::Ordering::Release);
                }
                let key = OwnerKey { client: e.client, owner: o.owner.clone() };
                self.opens_by.remove(&(key.clone(), e.file));
                self.release_owner_ref(OwnerSort::Open, &key);
                for l in o.locks.clone() {
                    self.remove(&l);
                }
            }
            Kind::Lock(l) => {
                if let Some(Kind::Open(o)) = shard.ids.get_mut(&l.open).map(|e| &mut e.kind) {
                    o.locks.retain(|x| x != other);
                }
                drop(shard);
                let key = OwnerKey { client: e.client, owner: l.owner.clone() };
                self.locks_by.remove(&(key.clone(), e.file));
                self.release_owner_ref(OwnerSort::Lock, &key);
            }
            Kind::Deleg(_) => unfile(&mut shard.files),
        }
        Some(e)
    }

    /// The delegations `client` holds (revoked ones included, until freed).
    pub fn delegations_of(&self, client: u64) -> usize {
        self.delegs_by_client.get(&client).copied().unwrap_or(0)
    }

    fn owners(&mut self, sort: OwnerSort) -> &mut HashMap<OwnerKey, Owner> {
        match sort {
            OwnerSort::Open => &mut self.open_owners,
            OwnerSort::Lock => &mut self.lock_owners,
        }
    }

    /// One stateid less names `key`; an owner with none left that keeps
    /// nothing for replays goes.
    fn release_owner_ref(&mut self, sort: OwnerSort, key: &OwnerKey) {
        let owners = self.owners(sort);
        if let Some(o) = owners.get_mut(key) {
            o.stateids = o.stateids.saturating_sub(1);
            if o.stateids == 0 && o.last.is_none() {
                owners.remove(key);
            }
        }
    }

    /// Owners `client` has (open and lock).
    pub fn owner_count(&self, client: u64) -> usize {
        self.open_owners.keys().filter(|k| k.client == client).count()
            + self.lock_owners.keys().filter(|k| k.client == client).count()
    }

    /// Makes sure owner `key` exists, within `max` owners per client. Idle
    /// NFSv4.0 owners (kept only for replays) give way to new ones.
    pub fn ensure_owner(&mut self, sort: OwnerSort, key: &OwnerKey, max: usize, minor: u32) -> Result<(), nfsstat4> {
        if self.owners(sort).contains_key(key) {
            return Ok(());
        }
        if self.owner_count(key.client) >= max {
            let idle = |m: &HashMap<OwnerKey, Owner>| {
                m.iter().find(|(k, o)| k.client == key.client && o.stateids == 0).map(|(k, _)| k.clone())
            };
            if let Some(k) = idle(&self.open_owners) {
                self.drop_owner(OwnerSort::Open, &k);
            } else if let Some(k) = idle(&self.lock_owners) {
                self.drop_owner(OwnerSort::Lock, &k);
            } else {
                return Err(resource_error(minor));
            }
        }
        self.owners(sort).insert(key.clone(), Owner::default());
        Ok(())
    }

    fn drop_owner(&mut self, sort: OwnerSort, key: &OwnerKey) {
        if let Some(o) = self.owners(sort).remove(key) {
            if let Some(c) = o.closed {
                self.closed.remove(&c);
            }
        }
    }

    /// NFSv4.0 seqid check of owner `key` (RFC 7530 9.1.7): the next
    /// seqid goes on, the last one replays, anything else is BAD_SEQID.
    /// An owner without history accepts any seqid.
    pub fn seqid_check(&self, sort: OwnerSort, key: &OwnerKey, seqid: u32) -> Result<SeqCheck, nfsstat4> {
        let owners = match sort {
            OwnerSort::Open => &self.open_owners,
            OwnerSort::Lock => &self.lock_owners,
        };
        let Some(o) = owners.get(key) else { return Ok(SeqCheck::Go) };
        match o.seqid {
            None => Ok(SeqCheck::Go),
            Some(last) if seqid == last.wrapping_add(1) => Ok(SeqCheck::Go),
            Some(last) if seqid == last => match &o.last {
                Some(r) => Ok(SeqCheck::Replay(r.clone())),
                None => Err(nfsstat4::NFS4ERR_BAD_SEQID),
            },
            Some(_) => Err(nfsstat4::NFS4ERR_BAD_SEQID),
        }
    }

    /// Records an NFSv4.0 request's seqid and reply on owner `key` (when
    /// the reply's status advances the seqid).
    pub fn seqid_record(&mut self, sort: OwnerSort, key: &OwnerKey, seqid: u32, status: nfsstat4, reply: Replay) {
        if !seqid_advances(status) {
            return;
        }
        if let Some(o) = self.owners(sort).get_mut(key) {
            o.seqid = Some(seqid);
            o.last = Some(reply);
        }
    }

    /// Finds the entry of an ordinary stateid (RFC 8881 8.2.4): stale
    /// (4.0) or bad (4.1) from another server instance, bad when unknown
    /// or another client's, EXPIRED when its client's state was purged,
    /// DELEG_REVOKED (4.1) for revoked delegations, and the seqid rules
    /// ([`find_entry`]).
    pub fn find(&self, boot: u32, minor: u32, client: Option<u64>, s: &stateid4) -> Result<EntryGuard<'_>, nfsstat4> {
        let shard = self.shards.of_other(&s.other);
        match find_entry(&shard, boot, minor, client, s) {
            Ok(_) => shard.entry(&s.other).ok_or(nfsstat4::NFS4ERR_BAD_STATEID),
            Err(Some(e)) => Err(e),
            Err(None) => {
                let expired = self.expired.contains(&s.other);
                Err(if expired { nfsstat4::NFS4ERR_EXPIRED } else { nfsstat4::NFS4ERR_BAD_STATEID })
            }
        }
    }

    /// The status TEST_STATEID reports for `s` of `client`.
    pub fn test(&self, boot: u32, client: u64, s: &stateid4) -> nfsstat4 {
        if s.other == [0; 12] || s.other == [0xff; 12] {
            return nfsstat4::NFS4ERR_BAD_STATEID;
        }
        match self.find(boot, 1, Some(client), s) {
            Ok(_) => nfsstat4::NFS4_OK,
            Err(e) => e,
        }
    }

    /// Bumps the seqid of `other` and returns the new stateid.
    pub fn bump(&mut self, other: &Other) -> stateid4 {
        // Callers bump stateids they just looked up under the same lock;
        // should one be gone, the caller gets a stateid nobody holds
        // (BAD_STATEID on use) rather than a crash.
        let Some(mut e) = self.get_mut(other) else {
            tracing::error!("seqid bump of a stateid that is no longer held");
            return stateid4 { seqid: 0, other: *other };
        };
        e.seqid = next_seqid(e.seqid);
        e.stateid(*other)
    }

    /// The open and delegation stateids on `file`, its shard held while
    /// they are looked at (`.iter()`).
    pub fn on_file(&self, file: FileKey) -> FileEntries<'_> {
        FileEntries { shard: self.shards.of_file(file), file }
    }

    /// Drops everything `client` holds (expiry, DESTROY_CLIENTID, a new
    /// incarnation of the client), its byte-range locks with it.
    pub fn purge_client(&mut self, client: u64) {
        self.shards.release_locks_where(|o| o.client() == Some(client));
        if let Some(set) = self.by_client.remove(&client) {
            for o in set {
                self.remove(&o);
                self.remember_expired(o);
            }
        }
        self.open_owners.retain(|k, _| k.client != client);
        self.lock_owners.retain(|k, _| k.client != client);
        self.closed.retain(|_, k| k.client != client);
    }

    fn remember_expired(&mut self, other: Other) {
        if self.expired_cap == 0 || !self.expired.insert(other) {
            return;
        }
        self.expired_order.push_back(other);
        while self.expired_order.len() > self.expired_cap {
            if let Some(old) = self.expired_order.pop_front() {
                self.expired.remove(&old);
            }
        }
    }

    /// Whether `client` still holds opens, locks or delegations.
    pub fn has_state(&self, client: u64) -> bool {
        self.by_client.get(&client).is_some_and(|s| !s.is_empty())
    }

    /// Frees a stateid (FREE_STATEID, RFC 8881 18.38): a lock stateid
    /// without locks, or a revoked delegation. Opens, held locks and live
    /// delegations are LOCKS_HELD.
    pub fn free(&mut self, other: &Other) -> Result<(), nfsstat4> {
        {
            let shard = self.shards.of_other(other);
            let e = shard.ids.get(other).ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
            match &e.kind {
                Kind::Open(_) => return Err(nfsstat4::NFS4ERR_LOCKS_HELD),
                Kind::Lock(l) => {
                    if shard.locks.holds_on(e.file, &v4_lock_owner(e.client, &l.owner)) {
                        return Err(nfsstat4::NFS4ERR_LOCKS_HELD);
                    }
                }
                Kind::Deleg(d) => {
                    if !d.revoked {
                        return Err(nfsstat4::NFS4ERR_LOCKS_HELD);
                    }
                }
            }
        }
        self.remove(other);
        Ok(())
    }
}

mod io;
pub(super) use io::{check_io, find_entry, io_allowed_by_shard};

#[cfg(test)]
mod tests;

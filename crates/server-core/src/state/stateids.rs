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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use super::lockmgr::{LockError, LockKind, LockOwner};
use super::shards::{EntryGuard, FileEntries, FileShard, FileShards};
use super::FileKey;
use crate::fh::Fh;
use by_client::{ClientIds, ClientTable};

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
    /// The directory the file was opened by name in, for a write
    /// delegation: another client's delegation of that directory cannot
    /// be told of the file's size and times while the writer keeps them.
    pub parent: Option<FileKey>,
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

/// The stateids a server has handed out, and their owners. Kept outside
/// the tables' lock: each client's part under its own lock
/// ([`by_client`]), each file's stateids, locks and indexes in its shard
/// ([`super::shards`]), the rest in counters and leaf locks. Every method
/// takes `&self` and the locks it needs, in the order client, then shard.
#[derive(Debug, Default)]
pub(crate) struct Stateids {
    next: AtomicU64,
    /// The entries of the stateids and the file index, by file
    /// ([`super::shards`]).
    pub(crate) shards: Arc<FileShards>,
    /// Each client's owners and stateids, under the client's own lock.
    pub(super) clients: ClientTable,
    /// How many files the shards' `files` hold, readable without a lock:
    /// a removal need not ask about a file's opens while there are none.
    pub(crate) files_held: Arc<AtomicUsize>,
    /// Stateids of purged clients (lease expiry, a new incarnation), so
    /// that their use answers NFS4ERR_EXPIRED (RFC 7530 9.6.3) rather than
    /// BAD_STATEID; oldest forgotten first once `expired_cap` are kept.
    expired: parking_lot::Mutex<(HashSet<Other>, VecDeque<Other>)>,
    pub(crate) expired_cap: usize,
    /// The files under write delegations (revoked ones included),
    /// readable without the tables' lock (see
    /// [`super::State4::write_delegated`]).
    pub(crate) write_delegated: Arc<super::WriteDelegated>,
    /// Share reservations held in a shared store by opens that went
    /// (file, store key), to release there after the request; with
    /// `shares_pending` set whenever it gains entries.
    released_shares: parking_lot::Mutex<Vec<(FileKey, u64)>>,
    pub(crate) shares_pending: Arc<AtomicBool>,
    next_store_key: AtomicU64,
}

pub(crate) fn v4_lock_owner(client: u64, owner: &Bytes) -> LockOwner {
    LockOwner::V4 { client, owner: owner.clone() }
}

impl Stateids {
    /// Stateids kept in `shards`, remembering up to `expired_cap` of
    /// purged clients, setting `shares_pending` when a share reservation
    /// in a shared store is to be released.
    pub(crate) fn new(shards: Arc<FileShards>, expired_cap: usize, shares_pending: Arc<AtomicBool>) -> Stateids {
        Stateids { shards, expired_cap, shares_pending, ..Default::default() }
    }

    /// A number for a new open's share reservation in a shared store,
    /// unlike those of this server's other opens and lock-owners (which
    /// the store knows by a hash too) and of its earlier instances.
    pub(crate) fn new_store_key(&self, boot: u32) -> u64 {
        use std::hash::{Hash, Hasher};
        let n = self.next_store_key.fetch_add(1, Ordering::Relaxed) + 1;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (b"share reservation", boot, n).hash(&mut h);
        h.finish().max(1)
    }

    /// Claims the release of store key `key` from the released shares,
    /// for a caller that releases it itself at once (CLOSE: an open that
    /// another client makes right after must not be refused by it).
    pub(crate) fn take_released_share(&self, key: u64) -> bool {
        let mut released = self.released_shares.lock();
        let before = released.len();
        released.retain(|(_, k)| *k != key);
        released.len() != before
    }

    /// Every share reservation released since the last call.
    pub(crate) fn take_released_shares(&self) -> Vec<(FileKey, u64)> {
        std::mem::take(&mut *self.released_shares.lock())
    }

    #[cfg(test)]
    pub(crate) fn released_shares(&self) -> Vec<(FileKey, u64)> {
        self.released_shares.lock().clone()
    }

    /// Files `other` (an open or a delegation) to `file` in its shard.
    fn file_push(&self, shard: &mut FileShard, file: FileKey, other: Other) {
        let v = shard.files.entry(file).or_default();
        if v.is_empty() {
            self.files_held.fetch_add(1, Ordering::Relaxed);
        }
        v.push(other);
    }

    /// A new `other` in shard `shard`: the instance's stamp, then a
    /// counter that never repeats, then the shard's number.
    pub(crate) fn new_other(&self, boot: u32, shard: usize) -> Other {
        let next = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut o = [0u8; 12];
        o[..4].copy_from_slice(&boot.to_be_bytes());
        o[4..].copy_from_slice(&((next << 8) | (shard as u64 & 0xff)).to_be_bytes());
        o
    }

    /// The entry of `other`, its shard held while it is used.
    pub(crate) fn get(&self, other: &Other) -> Option<EntryGuard<'_>> {
        self.shards.of_other(other).entry(other)
    }

    /// The entry of `other` to change, its shard held while it is used.
    pub(crate) fn get_mut(&self, other: &Other) -> Option<EntryGuard<'_>> {
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

    /// The stateids of `client`.
    pub(crate) fn of_client(&self, client: u64) -> Vec<Other> {
        self.clients.lock(client).map(|c| c.ids.iter().copied().collect()).unwrap_or_default()
    }

    /// Whether any stateid of `client` satisfies `pred`.
    pub(crate) fn any_of_client(&self, client: u64, pred: impl Fn(&Entry) -> bool) -> bool {
        self.of_client(client).iter().any(|o| self.get(o).is_some_and(|e| pred(&e)))
    }

    /// Runs `f` on the delegation state of `other`, if it is a delegation.
    pub(crate) fn update_deleg<R>(&self, other: &Other, f: impl FnOnce(&mut DelegState) -> R) -> Option<R> {
        match &mut self.get_mut(other)?.kind {
            Kind::Deleg(d) => Some(f(d)),
            _ => None,
        }
    }

    /// Runs `f` on the open state of `other`, if it is an open.
    pub(crate) fn update_open<R>(&self, other: &Other, f: impl FnOnce(&mut OpenState) -> R) -> Option<R> {
        match &mut self.get_mut(other)?.kind {
            Kind::Open(o) => Some(f(o)),
            _ => None,
        }
    }

    /// Whether any open or delegation is held on `file`.
    pub(crate) fn file_held(&self, file: FileKey) -> bool {
        self.shards.of_file(file).files.contains_key(&file)
    }

    /// Keeps `kept` (a removed file's hold) with `file`'s stateids while
    /// it has opens or delegations; false (and `kept` dropped) if it has
    /// none left.
    pub(crate) fn keep_unlinked(&self, file: FileKey, kept: vfs::Kept) -> bool {
        let mut shard = self.shards.of_file(file);
        if !shard.files.contains_key(&file) {
            return false;
        }
        shard.kept_unlinked.insert(file, kept);
        true
    }

    /// Adds a stateid for `entry`, or the resource error when its client
    /// already holds `max` stateids.
    pub fn insert(&self, boot: u32, max: usize, minor: u32, entry: Entry) -> Result<Other, nfsstat4> {
        let mut c = self.clients.lock_or_new(entry.client);
        self.insert_in(&mut c, boot, max, minor, entry)
    }

    /// [`Stateids::insert`] with the client's part held. A lock stateid
    /// whose open has gone meanwhile is BAD_STATEID.
    pub(super) fn insert_in(
        &self,
        c: &mut ClientIds,
        boot: u32,
        max: usize,
        minor: u32,
        entry: Entry,
    ) -> Result<Other, nfsstat4> {
        let mut shard = self.shards.of_file(entry.file);
        self.insert_held(c, &mut shard, boot, max, minor, entry)
    }

    /// [`Stateids::insert_in`] with the entry's file's shard held too.
    pub(super) fn insert_held(
        &self,
        c: &mut ClientIds,
        shard: &mut FileShard,
        boot: u32,
        max: usize,
        minor: u32,
        entry: Entry,
    ) -> Result<Other, nfsstat4> {
        if c.ids.len() >= max {
            return Err(resource_error(minor));
        }
        let other = self.new_other(boot, super::shards::shard_of_file(entry.file));
        match &entry.kind {
            Kind::Open(o) => {
                self.file_push(shard, entry.file, other);
                let key = OwnerKey { client: entry.client, owner: o.owner.clone() };
                c.open_owners.entry(key.clone()).or_default().stateids += 1;
                c.opens_by.insert((key, entry.file), other);
            }
            Kind::Lock(l) => {
                let Some(Kind::Open(o)) = shard.ids.get_mut(&l.open).map(|e| &mut e.kind) else {
                    return Err(nfsstat4::NFS4ERR_BAD_STATEID);
                };
                o.locks.push(other);
                let key = OwnerKey { client: entry.client, owner: l.owner.clone() };
                c.lock_owners.entry(key.clone()).or_default().stateids += 1;
                c.locks_by.insert((key, entry.file), other);
            }
            Kind::Deleg(d) => {
                self.file_push(shard, entry.file, other);
                c.delegs += 1;
                self.write_delegated.note_held(true);
                if d.write {
                    self.write_delegated.add(entry.file);
                }
            }
        }
        c.ids.insert(other);
        shard.ids.insert(other, entry);
        Ok(other)
    }

    /// Removes one stateid and its indexes. A lock stateid takes its
    /// owner's byte-range locks on the file with it, an open its lock
    /// stateids.
    pub fn remove(&self, other: &Other) -> Option<Entry> {
        let client = self.get(other)?.client;
        let mut c = self.clients.lock(client)?;
        self.remove_in(&mut c, other)
    }

    /// [`Stateids::remove`] with the stateid's client's part held.
    pub(super) fn remove_in(&self, c: &mut ClientIds, other: &Other) -> Option<Entry> {
        let mut shard = self.shards.of_other(other);
        let e = shard.ids.remove(other)?;
        if let Kind::Deleg(d) = &e.kind {
            c.delegs = c.delegs.saturating_sub(1);
            self.write_delegated.note_held(false);
            if d.write {
                self.write_delegated.remove(e.file);
            }
        }
        c.ids.remove(other);
        let unfile = |shard: &mut FileShard| {
            if let Some(v) = shard.files.get_mut(&e.file) {
                v.retain(|o| o != other);
                if v.is_empty() {
                    shard.files.remove(&e.file);
                    self.files_held.fetch_sub(1, Ordering::Relaxed);
                    shard.kept_unlinked.remove(&e.file);
                }
            }
        };
        match &e.kind {
            Kind::Open(o) => {
                unfile(&mut shard);
                drop(shard);
                if o.store_key != 0 {
                    self.released_shares.lock().push((e.file, o.store_key));
                    self.shares_pending.store(true, Ordering::Release);
                }
                let key = OwnerKey { client: e.client, owner: o.owner.clone() };
                c.opens_by.remove(&(key.clone(), e.file));
                self.release_owner_ref(c, OwnerSort::Open, &key);
                for l in &o.locks {
                    self.remove_in(c, l);
                }
            }
            Kind::Lock(l) => {
                if let Some(Kind::Open(o)) = shard.ids.get_mut(&l.open).map(|e| &mut e.kind) {
                    o.locks.retain(|x| x != other);
                }
                // In the same hold of the shard, so that no range can be
                // added under the stateid once it is gone (LOCK checks it
                // there too): a lock without its stateid would stand in
                // everyone's way until the client expired.
                shard.locks.unlock_file(e.file, &v4_lock_owner(e.client, &l.owner));
                drop(shard);
                let key = OwnerKey { client: e.client, owner: l.owner.clone() };
                c.locks_by.remove(&(key.clone(), e.file));
                self.release_owner_ref(c, OwnerSort::Lock, &key);
            }
            Kind::Deleg(_) => unfile(&mut shard),
        }
        Some(e)
    }

    /// The delegations `client` holds (revoked ones included, until freed).
    pub fn delegations_of(&self, client: u64) -> usize {
        self.clients.lock(client).map_or(0, |c| c.delegs)
    }

    /// One stateid less names `key`; an owner with none left that keeps
    /// nothing for replays goes.
    fn release_owner_ref(&self, c: &mut ClientIds, sort: OwnerSort, key: &OwnerKey) {
        let owners = c.owners(sort);
        if let Some(o) = owners.get_mut(key) {
            o.stateids = o.stateids.saturating_sub(1);
            if o.stateids == 0 && o.last.is_none() {
                self.drop_owner_in(c, sort, key);
            }
        }
    }

    /// Owners `client` has (open and lock).
    #[cfg(test)]
    pub fn owner_count(&self, client: u64) -> usize {
        self.clients.lock(client).map_or(0, |c| c.open_owners.len() + c.lock_owners.len())
    }

    /// Whether open-owner `key` is confirmed (NFSv4.0).
    pub fn owner_confirmed(&self, key: &OwnerKey) -> bool {
        self.clients.lock(key.client).is_some_and(|c| c.open_owners.get(key).is_some_and(|o| o.confirmed))
    }

    /// The open stateid of open-owner `key` on `file`.
    pub fn open_of(&self, key: &OwnerKey, file: FileKey) -> Option<Other> {
        self.clients.lock(key.client)?.opens_by.get(&(key.clone(), file)).copied()
    }

    /// The lock stateids of lock-owner `key`.
    pub fn locks_of_owner(&self, key: &OwnerKey) -> Vec<Other> {
        let Some(c) = self.clients.lock(key.client) else { return vec![] };
        c.locks_by.iter().filter(|((k, _), _)| k == key).map(|(_, o)| *o).collect()
    }

    /// Makes sure owner `key` exists, within `max` owners per client. Idle
    /// NFSv4.0 owners (kept only for replays) give way to new ones.
    pub fn ensure_owner(&self, sort: OwnerSort, key: &OwnerKey, max: usize, minor: u32) -> Result<(), nfsstat4> {
        self.ensure_owner_in(&mut self.clients.lock_or_new(key.client), sort, key, max, minor)
    }

    /// [`Stateids::ensure_owner`] with the client's part held.
    pub(super) fn ensure_owner_in(
        &self,
        c: &mut ClientIds,
        sort: OwnerSort,
        key: &OwnerKey,
        max: usize,
        minor: u32,
    ) -> Result<(), nfsstat4> {
        if c.owners(sort).contains_key(key) {
            return Ok(());
        }
        if c.open_owners.len() + c.lock_owners.len() >= max {
            let idle = |m: &HashMap<OwnerKey, Owner>| m.iter().find(|(_, o)| o.stateids == 0).map(|(k, _)| k.clone());
            if let Some(k) = idle(&c.open_owners) {
                self.drop_owner_in(c, OwnerSort::Open, &k);
            } else if let Some(k) = idle(&c.lock_owners) {
                self.drop_owner_in(c, OwnerSort::Lock, &k);
            } else {
                return Err(resource_error(minor));
            }
        }
        c.owners(sort).insert(key.clone(), Owner::default());
        Ok(())
    }

    /// Forgets owner `key` (and the closed stateid it kept for replays).
    pub fn drop_owner(&self, sort: OwnerSort, key: &OwnerKey) {
        if let Some(mut c) = self.clients.lock(key.client) {
            self.drop_owner_in(&mut c, sort, key);
        }
    }

    /// Forgets a lock-owner left with no stateid and no kept reply.
    pub fn forget_idle_owner(&self, sort: OwnerSort, key: &OwnerKey) {
        if let Some(mut c) = self.clients.lock(key.client) {
            if c.owners(sort).get(key).is_some_and(|o| o.stateids == 0 && o.last.is_none()) {
                self.drop_owner_in(&mut c, sort, key);
            }
        }
    }

    fn drop_owner_in(&self, c: &mut ClientIds, sort: OwnerSort, key: &OwnerKey) {
        if let Some(o) = c.owners(sort).remove(key) {
            if let Some(closed) = o.closed {
                self.shards.of_other(&closed).closed.remove(&closed);
            }
        }
    }

    /// The owner of NFSv4.0 open stateid `other`, just closed.
    pub fn closed_owner(&self, other: &Other) -> Option<OwnerKey> {
        self.shards.of_other(other).closed.get(other).cloned()
    }

    /// NFSv4.0 seqid check of owner `key` (RFC 7530 9.1.7): the next
    /// seqid goes on, the last one replays, anything else is BAD_SEQID.
    /// An owner without history accepts any seqid.
    pub fn seqid_check(&self, sort: OwnerSort, key: &OwnerKey, seqid: u32) -> Result<SeqCheck, nfsstat4> {
        let Some(mut c) = self.clients.lock(key.client) else { return Ok(SeqCheck::Go) };
        let Some(o) = c.owners(sort).get(key) else { return Ok(SeqCheck::Go) };
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
    pub fn seqid_record(&self, sort: OwnerSort, key: &OwnerKey, seqid: u32, status: nfsstat4, reply: Replay) {
        if !seqid_advances(status) {
            return;
        }
        let Some(mut c) = self.clients.lock(key.client) else { return };
        if let Some(o) = c.owners(sort).get_mut(key) {
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
            Err(None) => Err(self.unknown(&s.other)),
        }
    }

    /// The error for a stateid no shard holds: EXPIRED if its client's
    /// state was purged (and it is still remembered), else BAD_STATEID.
    pub(crate) fn unknown(&self, other: &Other) -> nfsstat4 {
        if self.expired.lock().0.contains(other) {
            nfsstat4::NFS4ERR_EXPIRED
        } else {
            nfsstat4::NFS4ERR_BAD_STATEID
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
    pub fn bump(&self, other: &Other) -> stateid4 {
        // Callers bump stateids they just looked up; should one be gone
        // (its client's CLOSE or expiry came between), the caller gets a
        // stateid nobody holds (BAD_STATEID on use) rather than a crash.
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
    pub fn purge_client(&self, client: u64) {
        self.shards.release_locks_where(|o| o.client() == Some(client));
        let Some(mut c) = self.clients.take(client) else { return };
        let ids: Vec<Other> = c.ids.iter().copied().collect();
        for o in ids {
            self.remove_in(&mut c, &o);
            self.remember_expired(o);
        }
        let closed: Vec<Other> = c.open_owners.values().filter_map(|o| o.closed).collect();
        for o in closed {
            self.shards.of_other(&o).closed.remove(&o);
        }
    }

    fn remember_expired(&self, other: Other) {
        let mut guard = self.expired.lock();
        let (expired, order) = &mut *guard;
        if self.expired_cap == 0 || !expired.insert(other) {
            return;
        }
        order.push_back(other);
        while order.len() > self.expired_cap {
            if let Some(old) = order.pop_front() {
                expired.remove(&old);
            }
        }
    }

    /// Whether `client` still holds opens, locks or delegations.
    pub fn has_state(&self, client: u64) -> bool {
        self.clients.lock(client).is_some_and(|c| !c.ids.is_empty())
    }

    /// Takes `kind` on `start..=end` of `file` for the owner of lock
    /// stateid `lock`, in one hold of the file's shard: BAD_STATEID if
    /// the stateid has gone (its open was closed meanwhile).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn lock_range(
        &self,
        lock: &Other,
        file: FileKey,
        owner: &LockOwner,
        kind: LockKind,
        start: u64,
        end: u64,
        max: usize,
    ) -> Result<Result<(), LockError>, nfsstat4> {
        let mut shard = self.shards.of_file(file);
        if !shard.ids.contains_key(lock) {
            return Err(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        Ok(shard.locks.lock(file, owner, kind, start, end, max))
    }

    /// Frees a stateid (FREE_STATEID, RFC 8881 18.38): a lock stateid
    /// without locks, or a revoked delegation. Opens, held locks and live
    /// delegations are LOCKS_HELD.
    pub fn free(&self, other: &Other) -> Result<(), nfsstat4> {
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

    /// How many times a client's part was locked.
    pub(crate) fn clients_locked(&self) -> u64 {
        self.clients.locked()
    }
}

pub(super) mod by_client;
mod io;
pub(super) use io::{check_io, find_entry, io_allowed_by_shard};

#[cfg(test)]
mod tests;

//! Open-owners, opens and share reservations (RFC 8881 9.7, 18.16,
//! 18.2, 18.18).
//!
//! One open stateid exists per (open-owner, file); further OPENs by the
//! same owner upgrade it (the union of the access and deny modes, the
//! seqid plus one), OPEN_DOWNGRADE narrows it to modes some of those OPENs used,
//! and CLOSE drops it with the byte-range locks taken under it.

use bytes::Bytes;
use proto::nfs4::*;

use super::shards::FileShard;
use super::stateids::by_client::ClientIds;
use super::stateids::{resource_error, Entry, Kind, OpenState, Other, OwnerKey, OwnerSort, Stateids};
use super::FileKey;

/// Checks share_access (without the 4.1 WANT bits) and share_deny
/// (RFC 8881 18.16.3): NFS4ERR_INVAL for values outside 1..=3 and 0..=3.
pub(crate) fn check_share(minor: u32, share_access: u32, share_deny: u32) -> Result<(u32, u32), nfsstat4> {
    let access = if minor >= 1 { share_access & !OPEN4_SHARE_ACCESS_WANT_DELEG_MASK } else { share_access };
    // Wishes a server may leave unfulfilled: signals and pushes of
    // delegations (4.1), delegated timestamps (RFC 9754, 4.2), which nfsx
    // does not grant.
    let extra = match minor {
        0 => 0,
        1 => {
            OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL | OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED
        }
        _ => {
            OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL
                | OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED
                | OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS
        }
    };
    let access = access & !extra;
    if !(1..=3).contains(&access) || share_deny > 3 {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    Ok((access, share_deny))
}

/// The modes of an owner's open of a file after an OPEN with
/// `access`/`deny`, given `held`, the modes of its open there already (if
/// any). The owner's own open counts too (RFC 7530 9.9, RFC 8881
/// 18.16.3): an upgrade may not access what that open denies nor deny
/// what it accesses (NFS4ERR_SHARE_DENIED).
pub(crate) fn upgraded_modes(held: Option<(u32, u32)>, access: u32, deny: u32) -> Result<(u32, u32), nfsstat4> {
    match held {
        Some((a, d)) if access & d != 0 || deny & a != 0 => Err(nfsstat4::NFS4ERR_SHARE_DENIED),
        Some((a, d)) => Ok((a | access, d | deny)),
        None => Ok((access, deny)),
    }
}

/// Clients whose opens of `file` (other than `except`) conflict with
/// `access`/`deny`: another open denies what we access, or accesses what
/// we deny.
pub(crate) fn share_conflicts(
    ids: &Stateids,
    file: FileKey,
    except: Option<&Other>,
    access: u32,
    deny: u32,
) -> Vec<u64> {
    let mut v: Vec<u64> = ids
        .on_file(file)
        .iter()
        .filter(|(o, _)| Some(*o) != except)
        .filter_map(|(_, e)| {
            let o = e.open()?;
            (o.deny & access != 0 || o.access & deny != 0).then_some(e.client)
        })
        .collect();
    v.dedup();
    v
}

/// Whether an NLM share reservation on `file` stands in the way of an
/// open with `access`/`deny` (NLM hosts are no NFSv4 clients: their
/// shares have no courtesy to expire).
pub(crate) fn nlm_share_denies(ids: &Stateids, file: FileKey, access: u32, deny: u32) -> bool {
    ids.on_file(file).shard.nlm_share_conflicts(file, None, access, deny)
}

/// The share modes an OPEN records ([`Stateids::open_held`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenModes {
    /// Checked ([`check_share`]); conflicts already ruled out.
    pub access: u32,
    pub deny: u32,
    /// NFSv4.0 owners that still need OPEN_CONFIRM get an unconfirmed open.
    pub confirmed: bool,
    /// A new open's share reservation in a shared store (0: none).
    pub store_key: u64,
}

/// What an OPEN did to the open state.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Opened {
    pub stateid: stateid4,
    /// A new open (not an upgrade of the owner's open of the file).
    pub new: bool,
}

impl Stateids {
    /// Records an OPEN by `owner` of `file` with checked `access`/`deny`
    /// (share conflicts already ruled out): upgrades the owner's open of
    /// the file or creates one. `confirmed`: NFSv4.0 owners that still
    /// need OPEN_CONFIRM get an unconfirmed open. `store_key`: a new
    /// open's share reservation in a shared store (0: none).
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        boot: u32,
        max_stateids: usize,
        minor: u32,
        owner: &OwnerKey,
        file: FileKey,
        access: u32,
        deny: u32,
        confirmed: bool,
        store_key: u64,
        lease: std::sync::Arc<super::lease::Lease>,
    ) -> Result<Opened, nfsstat4> {
        let mut c = self.clients.lock_or_new(owner.client);
        let mut shard = self.shards.of_file(file);
        let modes = OpenModes { access, deny, confirmed, store_key };
        self.open_held(&mut c, &mut shard, boot, max_stateids, minor, owner, file, modes, lease)
    }

    /// [`Stateids::open`] with the owner's client's part and the file's
    /// shard held.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open_held(
        &self,
        c: &mut ClientIds,
        shard: &mut FileShard,
        boot: u32,
        max_stateids: usize,
        minor: u32,
        owner: &OwnerKey,
        file: FileKey,
        modes: OpenModes,
        lease: std::sync::Arc<super::lease::Lease>,
    ) -> Result<Opened, nfsstat4> {
        let OpenModes { access, deny, confirmed, store_key } = modes;
        if let Some(other) = c.opens_by.get(&(owner.clone(), file)).copied() {
            if let Some(e) = shard.ids.get_mut(&other) {
                if let Kind::Open(o) = &mut e.kind {
                    o.access |= access;
                    o.deny |= deny;
                    if o.store_key == 0 {
                        o.store_key = store_key;
                    }
                    o.access_seen |= 1 << access;
                    o.deny_seen |= 1 << deny;
                    e.seqid = super::stateids::next_seqid(e.seqid);
                    return Ok(Opened { stateid: e.stateid(other), new: false });
                }
            }
        }
        let entry = Entry {
            seqid: 1,
            client: owner.client,
            file,
            lease,
            kind: Kind::Open(OpenState {
                owner: owner.owner.clone(),
                access,
                deny,
                access_seen: 1 << access,
                deny_seen: 1 << deny,
                confirmed,
                locks: vec![],
                store_key,
            }),
        };
        let other = self.insert_held(c, shard, boot, max_stateids, minor, entry)?;
        Ok(Opened { stateid: stateid4 { seqid: 1, other }, new: true })
    }

    /// OPEN_DOWNGRADE of open `other` to `access`/`deny` (already range
    /// checked): each must be a union of modes the OPENs behind the
    /// stateid used (RFC 8881 18.18.3), else NFS4ERR_INVAL.
    pub fn downgrade(&self, other: &Other, access: u32, deny: u32) -> Result<stateid4, nfsstat4> {
        let union_of = |seen: u8, want: u32| {
            (0..4u32).filter(|v| seen & (1 << v) != 0 && v & !want == 0).fold(0, |a, v| a | v) == want
        };
        self.update_open(other, |o| {
            if !union_of(o.access_seen, access) || !union_of(o.deny_seen, deny) {
                return Err(nfsstat4::NFS4ERR_INVAL);
            }
            o.access = access;
            o.deny = deny;
            o.access_seen &= (0..4u32).filter(|v| v & !access == 0).fold(0u8, |a, v| a | (1 << v));
            o.deny_seen &= (0..4u32).filter(|v| v & !deny == 0).fold(0u8, |a, v| a | (1 << v));
            o.access_seen |= 1 << access;
            o.deny_seen |= 1 << deny;
            Ok(())
        })
        .ok_or(nfsstat4::NFS4ERR_BAD_STATEID)??;
        Ok(self.bump(other))
    }

    /// CLOSE of open `other`: its lock stateids and their byte-range locks
    /// are released with it
    /// (RFC 8881 18.2.3 lets the server free them). Returns the stateid
    /// as it was last (seqid + 1) for NFSv4.0 replies.
    pub fn close(&self, other: &Other, keep_for_replay: bool) -> Result<stateid4, nfsstat4> {
        let (client, owner) = {
            let e = self.get(other).ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
            let Kind::Open(o) = &e.kind else { return Err(nfsstat4::NFS4ERR_BAD_STATEID) };
            (e.client, o.owner.clone())
        };
        let stateid = self.bump(other);
        let key = OwnerKey { client, owner: owner.clone() };
        // Its client's expiry came first: nothing is left to close.
        let Some(mut c) = self.clients.lock(client) else { return Ok(stateid) };
        // The open's lock stateids go with it, and their locks with them.
        self.remove_in(&mut c, other);
        if keep_for_replay {
            if let Some(ow) = c.open_owners.get_mut(&key) {
                if let Some(prev) = ow.closed.replace(*other) {
                    self.shards.of_other(&prev).closed.remove(&prev);
                }
                self.shards.of_other(other).closed.insert(*other, key);
            }
        }
        Ok(stateid)
    }

    /// OPEN_CONFIRM (NFSv4.0): confirms the owner of open `other` and its
    /// opens.
    pub fn confirm(&self, other: &Other) -> Result<stateid4, nfsstat4> {
        let key = {
            let e = self.get(other).ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
            let Kind::Open(o) = &e.kind else { return Err(nfsstat4::NFS4ERR_BAD_STATEID) };
            if o.confirmed {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
            OwnerKey { client: e.client, owner: o.owner.clone() }
        };
        if let Some(mut c) = self.clients.lock(key.client) {
            if let Some(ow) = c.open_owners.get_mut(&key) {
                ow.confirmed = true;
            }
            let mine: Vec<Other> = c.opens_by.iter().filter(|((k, _), _)| *k == key).map(|(_, o)| *o).collect();
            for m in mine {
                self.update_open(&m, |o| o.confirmed = true);
            }
        }
        Ok(self.bump(other))
    }

    /// Forgets an unconfirmed NFSv4.0 open-owner and its opens (a new
    /// OPEN arrived for it with an unexpected seqid: RFC 7530 16.16.5).
    pub fn reset_unconfirmed(&self, key: &OwnerKey) -> bool {
        let mine: Vec<Other> = {
            let Some(c) = self.clients.lock(key.client) else { return false };
            let Some(o) = c.open_owners.get(key) else { return false };
            if o.confirmed {
                return false;
            }
            c.opens_by.iter().filter(|((k, _), _)| k == key).map(|(_, o)| *o).collect()
        };
        for m in mine {
            let _ = self.close(&m, false);
        }
        self.drop_owner(OwnerSort::Open, key);
        true
    }

    /// A new lock stateid for lock-owner `owner` under open `open`, or
    /// the existing one of that owner on the file.
    pub fn lock_stateid(
        &self,
        boot: u32,
        max_stateids: usize,
        minor: u32,
        owner: &Bytes,
        open: &Other,
    ) -> Result<Other, nfsstat4> {
        let (client, file, lease) = {
            let e = self.get(open).ok_or(nfsstat4::NFS4ERR_BAD_STATEID)?;
            if e.open().is_none() {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
            (e.client, e.file, e.lease.clone())
        };
        let key = OwnerKey { client, owner: owner.clone() };
        let mut c = self.clients.lock_or_new(client);
        if let Some(o) = c.locks_by.get(&(key, file)) {
            return Ok(*o);
        }
        let entry = Entry {
            seqid: 0,
            client,
            file,
            lease,
            kind: Kind::Lock(super::stateids::LockState { owner: owner.clone(), open: *open }),
        };
        self.insert_in(&mut c, boot, max_stateids, minor, entry).map_err(|e| match e {
            nfsstat4::NFS4ERR_BAD_STATEID => e,
            _ => resource_error(minor),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::lockmgr::LockKind;
    use crate::state::stateids::v4_lock_owner;

    const BOOT: u32 = 99;
    const F: FileKey = (1, 5, 1);

    fn key(client: u64, o: &'static str) -> OwnerKey {
        OwnerKey { client, owner: Bytes::from_static(o.as_bytes()) }
    }

    #[test]
    fn share_values() {
        assert_eq!(check_share(0, 3, 0), Ok((3, 0)));
        assert_eq!(check_share(0, 0, 0), Err(nfsstat4::NFS4ERR_INVAL));
        assert_eq!(check_share(0, 1, 4), Err(nfsstat4::NFS4ERR_INVAL));
        assert_eq!(check_share(0, 1 | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, 0), Err(nfsstat4::NFS4ERR_INVAL));
        assert_eq!(check_share(1, 1 | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, 0), Ok((1, 0)));
    }

    #[test]
    fn share_reservations() {
        let ids = Stateids::default();
        let a = ids
            .open(
                BOOT,
                100,
                1,
                &key(1, "a"),
                F,
                OPEN4_SHARE_ACCESS_READ,
                OPEN4_SHARE_DENY_WRITE,
                true,
                0,
                Default::default(),
            )
            .unwrap();
        assert!(a.new);
        // Writers are denied, readers are not.
        assert_eq!(share_conflicts(&ids, F, None, OPEN4_SHARE_ACCESS_WRITE, 0), vec![1]);
        assert!(share_conflicts(&ids, F, None, OPEN4_SHARE_ACCESS_READ, 0).is_empty());
        // Denying read conflicts with the existing reader.
        assert_eq!(share_conflicts(&ids, F, None, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_READ), vec![1]);
        // The owner's own open is left out of its upgrade check.
        assert!(share_conflicts(&ids, F, Some(&a.stateid.other), OPEN4_SHARE_ACCESS_BOTH, 0).is_empty());
        // Another file is unaffected.
        assert!(share_conflicts(&ids, (1, 6, 1), None, OPEN4_SHARE_ACCESS_WRITE, 3).is_empty());
    }

    /// An open's reservation in a shared store keeps its number through
    /// upgrades and is queued for release when the open goes, unless CLOSE
    /// claims it; opens with none there queue nothing.
    #[test]
    fn store_keys_are_released_with_their_opens() {
        let ids = Stateids::default();
        let (k1, k2) = (ids.new_store_key(BOOT), ids.new_store_key(BOOT));
        assert!(k1 != 0 && k2 != 0 && k1 != k2);
        let a =
            ids.open(BOOT, 100, 1, &key(1, "a"), F, OPEN4_SHARE_ACCESS_READ, 0, true, k1, Default::default()).unwrap();
        // An upgrade keeps the open's number.
        ids.open(BOOT, 100, 1, &key(1, "a"), F, OPEN4_SHARE_ACCESS_WRITE, 0, true, k2, Default::default()).unwrap();
        assert_eq!(ids.get(&a.stateid.other).unwrap().open().unwrap().store_key, k1);
        let b =
            ids.open(BOOT, 100, 1, &key(1, "b"), F, OPEN4_SHARE_ACCESS_READ, 0, true, k2, Default::default()).unwrap();
        ids.open(BOOT, 100, 1, &key(1, "c"), F, OPEN4_SHARE_ACCESS_READ, 0, true, 0, Default::default()).unwrap();
        ids.close(&a.stateid.other, false).unwrap();
        assert!(ids.take_released_share(k1));
        assert!(!ids.take_released_share(k1));
        ids.close(&b.stateid.other, false).unwrap();
        // The client goes: only the open with a store key is queued.
        ids.purge_client(1);
        assert_eq!(ids.released_shares(), vec![(F, k2)]);
        assert!(ids.shares_pending.load(std::sync::atomic::Ordering::Acquire));
    }

    #[test]
    fn upgrade_downgrade_close() {
        let ids = Stateids::default();
        let k = key(1, "a");
        let a = ids.open(BOOT, 100, 1, &k, F, OPEN4_SHARE_ACCESS_READ, 0, true, 0, Default::default()).unwrap();
        let b = ids
            .open(BOOT, 100, 1, &k, F, OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_READ, true, 0, Default::default())
            .unwrap();
        assert!(!b.new);
        assert_eq!(b.stateid.other, a.stateid.other);
        assert_eq!(b.stateid.seqid, 2);
        let o = ids.get(&a.stateid.other).unwrap().open().unwrap().clone();
        assert_eq!((o.access, o.deny), (OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_READ));
        // BOTH was never asked for alone but is the union of READ and WRITE.
        assert!(ids.downgrade(&a.stateid.other, OPEN4_SHARE_ACCESS_BOTH, 0).is_ok());
        let s = ids.downgrade(&a.stateid.other, OPEN4_SHARE_ACCESS_READ, 0).unwrap();
        assert_eq!(s.seqid, 4);
        // Now WRITE was dropped: going back "down" to it is INVAL.
        assert_eq!(ids.downgrade(&a.stateid.other, OPEN4_SHARE_ACCESS_WRITE, 0), Err(nfsstat4::NFS4ERR_INVAL));
        assert_eq!(
            ids.downgrade(&a.stateid.other, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE),
            Err(nfsstat4::NFS4ERR_INVAL)
        );
        // A lock under the open goes with CLOSE.
        let lo = Bytes::from_static(b"lo");
        let l = ids.lock_stateid(BOOT, 100, 1, &lo, &a.stateid.other).unwrap();
        assert_eq!(ids.lock_stateid(BOOT, 100, 1, &lo, &a.stateid.other).unwrap(), l);
        let owner = v4_lock_owner(1, &lo);
        assert_eq!(ids.lock_range(&l, F, &owner, LockKind::Write, 0, 9, 10), Ok(Ok(())));
        let c = ids.close(&a.stateid.other, false).unwrap();
        assert_eq!(c.seqid, 5);
        assert!(ids.shards.of_file(F).locks.locks_on(F).is_empty());
        assert!(ids.get(&l).is_none());
        // A LOCK that made its stateid before the CLOSE cannot leave a
        // range behind it.
        assert_eq!(ids.lock_range(&l, F, &owner, LockKind::Write, 0, 9, 10), Err(nfsstat4::NFS4ERR_BAD_STATEID));
        assert!(ids.shards.of_file(F).locks.locks_on(F).is_empty());
        assert!(!ids.has_state(1));
        assert_eq!(ids.owner_count(1), 0);
    }

    #[test]
    fn confirm_and_reset() {
        let ids = Stateids::default();
        let k = key(1, "a");
        ids.ensure_owner(super::super::stateids::OwnerSort::Open, &k, 10, 0).unwrap();
        let a = ids.open(BOOT, 100, 0, &k, F, OPEN4_SHARE_ACCESS_READ, 0, false, 0, Default::default()).unwrap();
        assert!(!ids.get(&a.stateid.other).unwrap().open().unwrap().confirmed);
        let s = ids.confirm(&a.stateid.other).unwrap();
        assert_eq!(s.seqid, 2);
        assert!(ids.get(&a.stateid.other).unwrap().open().unwrap().confirmed);
        assert_eq!(ids.confirm(&a.stateid.other), Err(nfsstat4::NFS4ERR_BAD_STATEID));
        assert!(!ids.reset_unconfirmed(&k));
        let k2 = key(1, "b");
        ids.ensure_owner(super::super::stateids::OwnerSort::Open, &k2, 10, 0).unwrap();
        ids.open(BOOT, 100, 0, &k2, (1, 9, 1), OPEN4_SHARE_ACCESS_READ, 0, false, 0, Default::default()).unwrap();
        assert!(ids.reset_unconfirmed(&k2));
        assert_eq!(ids.on_file((1, 9, 1)).iter().count(), 0);
    }
}

//! Opens (share reservations) as OPEN, OPEN_CONFIRM, OPEN_DOWNGRADE and
//! CLOSE change them (RFC 8881 sections 9.7, 18.2, 18.16, 18.18; RFC 7530
//! 9.1 for NFSv4.0's seqids). Each method takes the tables' lock once
//! (an NFSv4.1 CLOSE none, nor most NFSv4.1 OPENs: `without_tables.rs`);
//! OPEN, which creates or opens the file and may ask a shared store with
//! the state unlocked, comes in steps around that I/O.

use std::sync::Arc;

use proto::nfs4::*;

use crate::fh::Fh;
use crate::state::delegations;
use crate::state::lease::Lease;
use crate::state::opens::{check_share, nlm_share_denies, share_conflicts, upgraded_modes};
use crate::state::stateids::{Kind, Other, OwnerKey, OwnerSort, Replay, SeqCheck, Stateids};
use crate::state::{FileKey, State4, Tables};

/// What an operation that may carry an NFSv4.0 seqid made of a request.
pub(crate) enum Answer<T, X> {
    /// Refused before anything changed, or a retransmission answered from
    /// the owner's last reply (RFC 7530 9.1.8): the operation only
    /// returns this.
    Early(Result<T, nfsstat4>),
    /// Processed: its result, and what the operation still does outside
    /// the state (a shared store, the current stateid).
    Done(Result<T, nfsstat4>, X),
}

/// The open-owner of an open stateid, live or (4.0) just closed.
fn owner_of_open(ids: &Stateids, other: &Other) -> Option<OwnerKey> {
    match ids.get(other) {
        Some(e) => e.open().map(|o| OwnerKey { client: e.client, owner: o.owner.clone() }),
        None => ids.closed_owner(other),
    }
}

/// The NFSv4.0 open-owner of `sid`, its lease renewed and the seqid
/// checked (RFC 7530 9.1.7): `Err` with the answer to give at once
/// (refused, or `replay` of the kept reply when it is a retransmission).
fn owner_seqid<T>(
    st: &State4,
    t: &mut Tables,
    sid: &stateid4,
    seqid: seqid4,
    replay: impl FnOnce(Replay) -> Option<Result<T, nfsstat4>>,
) -> Result<OwnerKey, Result<T, nfsstat4>> {
    let Some(key) = owner_of_open(&t.stateids, &sid.other) else {
        return Err(Err(t.stateids.find(st.boot, 0, None, sid).err().unwrap_or(nfsstat4::NFS4ERR_BAD_STATEID)));
    };
    t.clients.renew(key.client, st.now()).map_err(Err)?;
    match t.stateids.seqid_check(OwnerSort::Open, &key, seqid).map_err(Err)? {
        SeqCheck::Replay(r) => Err(replay(r).unwrap_or(Err(nfsstat4::NFS4ERR_BAD_SEQID))),
        SeqCheck::Go => Ok(key),
    }
}

/// [`owner_seqid`] for NFSv4.0; NFSv4.1 has no owner seqids (`None`).
fn v40_owner_seqid<T>(
    st: &State4,
    t: &mut Tables,
    minor: u32,
    sid: &stateid4,
    seqid: seqid4,
    replay: impl FnOnce(Replay) -> Option<Result<T, nfsstat4>>,
) -> Result<Option<OwnerKey>, Result<T, nfsstat4>> {
    if minor != 0 {
        return Ok(None);
    }
    owner_seqid(st, t, sid, seqid, replay).map(Some)
}

/// Keeps an NFSv4.0 reply for the owner's retransmissions.
pub(super) fn record<T: Clone>(
    t: &mut Tables,
    sort: OwnerSort,
    key: &OwnerKey,
    seqid: seqid4,
    r: &Result<T, nfsstat4>,
    kept: impl FnOnce(Result<T, nfsstat4>) -> Replay,
) {
    let status = r.as_ref().err().copied().unwrap_or(nfsstat4::NFS4_OK);
    t.stateids.seqid_record(sort, key, seqid, status, kept(r.clone()));
}

/// Takes the courtesy clients among `clients` away (their lease ran out
/// and their state stands in the way of another client's request).
pub(super) fn expire_courtesy(st: &State4, t: &mut Tables, me: u64, clients: &[u64]) -> bool {
    let mut any = false;
    for &c in clients {
        if c != me && t.clients.lease_expired(c, st.now(), st.lease()) {
            t.expire_client(c);
            any = true;
        }
    }
    any
}

/// An NFSv4.0 OPEN's kept reply and the handle it made current.
type OpenReply = (Result<OPEN4resok, nfsstat4>, Option<Fh>);

/// An OPEN (RFC 8881 18.16) as the state records it, once the file is
/// found or created.
pub(crate) struct OpenRequest<'a> {
    pub minor: u32,
    pub client: u64,
    pub owner: &'a OwnerKey,
    pub file: FileKey,
    /// The share modes, checked ([`check_share`]).
    pub access: u32,
    pub deny: u32,
    /// `share_access` as sent, with the delegation the client wants.
    pub share_access: u32,
    /// The delegation a CLAIM_DELEGATE_CUR or CLAIM_DELEG_CUR_FH opens
    /// under.
    pub deleg_claim: Option<&'a stateid4>,
    /// CLAIM_PREVIOUS: a reclaim, granted no delegation.
    pub reclaim: bool,
    /// The file's handle, for a delegation's recall.
    pub fh: &'a nfs_fh4,
    /// The directory an OPEN by name found the file in.
    pub parent: crate::state::delegations::Parent,
    /// The client's lease, from the 4.1 session whose SEQUENCE renewed it
    /// and whose claim [`State4::open_claim_allowed`] let through without
    /// the tables: the OPEN may be recorded without them too.
    pub session_lease: Option<&'a Arc<Lease>>,
}

/// What OPEN asks of a store other servers share (`crate::shared_shares`,
/// `crate::shared_delegs`) with the state locked, so that the store and
/// the tables change together.
pub(crate) trait OpenStore {
    /// Share modes taken in the store for an open not yet recorded.
    type Reserved;
    /// The open's store key (0: none).
    fn store_key(r: &Self::Reserved) -> u64;
    /// Whether a new open's share modes are taken in the store with the
    /// state unlocked ([`OpenStep::Reserve`]).
    fn reserves_unlocked(&self) -> bool;
    /// Takes `access`/`deny` in the store; `held`: the store key and modes
    /// of the owner's open this one upgrades; `new_key` makes a new one's.
    fn reserve(
        &self,
        held: Option<(u64, u32, u32)>,
        new_key: &mut dyn FnMut() -> u64,
        access: u32,
        deny: u32,
    ) -> Result<Self::Reserved, nfsstat4>;
    /// Puts the store back as before `reserve`.
    fn undo(&self, r: &Self::Reserved);
    /// Whether a delegation (`write` or read) may be granted.
    fn delegate(&self, write: bool) -> bool;
    /// Whether other servers share the file system: share modes and
    /// delegations are then taken in the store too.
    fn shared(&self) -> bool;
}

/// An OPEN recorded.
pub(crate) struct OpenRecorded {
    pub stateid: stateid4,
    /// The owner is confirmed (else the client must OPEN_CONFIRM).
    pub confirmed: bool,
    pub delegation: open_delegation4,
}

/// How far [`State4::open_shares`] got.
pub(crate) enum OpenStep {
    Recorded(OpenRecorded),
    /// A new open's share modes are to be taken in the store with the
    /// state unlocked (it may be across the network), under `store_key`;
    /// then [`State4::open_reserved`] records it.
    Reserve {
        store_key: u64,
        access: u32,
        deny: u32,
    },
}

/// Records the OPEN whose share modes `reserved` holds in the store, and
/// grants a delegation if one may be; on failure the store is put back.
fn record_open<S: OpenStore>(
    st: &State4,
    t: &mut Tables,
    req: &OpenRequest,
    store: &S,
    reserved: S::Reserved,
) -> Result<OpenRecorded, nfsstat4> {
    let (minor, key) = (req.minor, req.owner);
    let confirmed = minor >= 1 || t.stateids.owner_confirmed(key);
    let recorded =
        t.stateids.ensure_owner(OwnerSort::Open, key, st.settings.max_owners_per_client, minor).and_then(|()| {
            let max = st.settings.max_stateids_per_client;
            let store_key = S::store_key(&reserved);
            let lease = t.clients.get(key.client).map(|c| c.lease.clone()).unwrap_or_default();
            t.stateids.open(st.boot, max, minor, key, req.file, req.access, req.deny, confirmed, store_key, lease)
        });
    let opened = match recorded {
        Ok(o) => o,
        Err(e) => {
            store.undo(&reserved);
            return Err(e);
        }
    };
    let delegation = if req.deleg_claim.is_some() || !confirmed || req.reclaim {
        open_delegation4::OPEN_DELEGATE_NONE
    } else {
        // On a shared store, another head may serve a conflicting open this
        // server never hears of: only the store's delegation makes it wait
        // for a recall.
        let (file, client, fh) = (req.file, req.client, req.fh);
        let share_access = req.share_access;
        delegations::grant(st, t, minor, file, client, fh, share_access, req.parent, |write| store.delegate(write))
    };
    Ok(OpenRecorded { stateid: opened.stateid, confirmed, delegation })
}

impl State4 {
    /// OPEN's NFSv4.0 seqid (RFC 7530 16.16.5): renews the client of open-
    /// owner `key` and checks `seqid` (an unconfirmed owner with a wrong
    /// one starts over), making sure the owner exists. `Some`: a
    /// retransmission, with the kept reply and the handle it made current.
    pub(crate) fn open_seqid(&self, key: &OwnerKey, seqid: seqid4) -> Result<Option<OpenReply>, nfsstat4> {
        let mut t = self.lock_tables();
        t.clients.renew(key.client, self.now())?;
        let check = match t.stateids.seqid_check(OwnerSort::Open, key, seqid) {
            Err(nfsstat4::NFS4ERR_BAD_SEQID) => {
                if !t.stateids.reset_unconfirmed(key) {
                    return Err(nfsstat4::NFS4ERR_BAD_SEQID);
                }
                SeqCheck::Go
            }
            c => c?,
        };
        match check {
            SeqCheck::Replay(Replay::Open(r, fh)) => Ok(Some((r, fh))),
            SeqCheck::Replay(_) => Err(nfsstat4::NFS4ERR_BAD_SEQID),
            SeqCheck::Go => {
                t.stateids.ensure_owner(OwnerSort::Open, key, self.settings.max_owners_per_client, 0)?;
                Ok(None)
            }
        }
    }

    /// Keeps an NFSv4.0 OPEN's reply (and the handle it made current) for
    /// the owner's retransmissions.
    pub(crate) fn record_open_reply(
        &self,
        key: &OwnerKey,
        seqid: seqid4,
        r: &Result<OPEN4resok, nfsstat4>,
        fh: Option<Fh>,
    ) {
        record(&mut self.lock_tables(), OwnerSort::Open, key, seqid, r, |r| Replay::Open(r, fh));
    }

    /// Whether `client` may OPEN with `claim` now, before the file is
    /// looked up: reclaims (CLAIM_PREVIOUS) only in the grace period and
    /// by clients that may reclaim, new opens only outside it and, in 4.1,
    /// after RECLAIM_COMPLETE (RFC 8881 18.51.3). Renews a 4.1 client.
    /// `session`: the 4.1 compound's, whose SEQUENCE renewed the client;
    /// a new open under it is let through without the tables when no
    /// grace period may be running and the client completed its reclaims,
    /// with the client's lease (`Some`) for [`OpenRequest::session_lease`].
    pub(crate) fn open_claim_allowed(
        &self,
        minor: u32,
        client: u64,
        session: Option<&sessionid4>,
        claim: &open_claim4,
    ) -> Result<Option<Arc<Lease>>, nfsstat4> {
        use open_claim4::*;
        if let (Some(sid), CLAIM_NULL(_) | CLAIM_FH) = (session, claim) {
            let lease = self.sessions.get(sid).map(|cell| cell.lock().lease.clone());
            if let Some(l) = lease.filter(|l| !self.may_be_in_grace() && l.reclaim_complete() && !l.is_gone()) {
                return Ok(Some(l));
            }
        }
        let mut t = self.lock_tables();
        let now = self.now();
        if minor >= 1 {
            t.clients.renew(client, now)?;
        }
        let in_grace = t.grace.in_grace(now);
        match claim {
            CLAIM_PREVIOUS(_) => {
                if !in_grace || !t.clients.may_reclaim(client) {
                    return Err(nfsstat4::NFS4ERR_NO_GRACE);
                }
            }
            CLAIM_DELEGATE_PREV(_) | CLAIM_DELEG_PREV_FH => return Err(nfsstat4::NFS4ERR_NOTSUPP),
            // An open under a delegation the client holds cannot conflict
            // with anything being reclaimed.
            CLAIM_DELEGATE_CUR(_) | CLAIM_DELEG_CUR_FH(_) => {}
            CLAIM_NULL(_) | CLAIM_FH => {
                // A 4.1 client must say RECLAIM_COMPLETE before its first
                // new open, even with nothing to reclaim.
                if in_grace || (minor >= 1 && !t.clients.reclaim_completed(client)) {
                    return Err(nfsstat4::NFS4ERR_GRACE);
                }
            }
        }
        Ok(None)
    }

    /// OPEN's share reservation (RFC 8881 9.7, 18.16.3; RFC 7530 9.9):
    /// recalls other clients' conflicting delegations (NFS4ERR_DELAY),
    /// checks the share modes against the other opens of the file and the
    /// owner's own (NFS4ERR_SHARE_DENIED), courtesy clients in the way
    /// expired, then takes them in a shared store and records the open,
    /// or says to take them there first with the state unlocked.
    pub(crate) fn open_shares<S: OpenStore>(&self, req: &OpenRequest, store: &S) -> Result<OpenStep, nfsstat4> {
        if let (Some(lease), None, false, false) = (req.session_lease, req.deleg_claim, req.reclaim, store.shared()) {
            if let Some(r) = self.open_in_shard(req, lease) {
                return r.map(OpenStep::Recorded);
            }
        }
        let (file, key, access, deny) = (req.file, req.owner, req.access, req.deny);
        let mut t = self.lock_tables();
        if let Some(ds) = req.deleg_claim {
            let e = t.stateids.find(self.boot, req.minor, Some(req.client), ds)?;
            if !matches!(e.kind, Kind::Deleg(_)) || e.file != file {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
        }
        let write = access & OPEN4_SHARE_ACCESS_WRITE != 0;
        delegations::recall_conflicting(self, &mut t, file, Some(req.client), write)?;
        let existing = t.stateids.open_of(key, file);
        let held = existing.and_then(|o| t.stateids.get(&o)?.open().map(|o| (o.store_key, o.access, o.deny)));
        let (all_access, all_deny) = upgraded_modes(held.map(|(_, access, deny)| (access, deny)), access, deny)?;
        let mut conflicts = share_conflicts(&t.stateids, file, existing.as_ref(), all_access, all_deny);
        if !conflicts.is_empty() && expire_courtesy(self, &mut t, req.client, &conflicts) {
            conflicts = share_conflicts(&t.stateids, file, existing.as_ref(), all_access, all_deny);
        }
        if !conflicts.is_empty() || nlm_share_denies(&t.stateids, file, all_access, all_deny) {
            return Err(nfsstat4::NFS4ERR_SHARE_DENIED);
        }
        if existing.is_none() && store.reserves_unlocked() {
            let store_key = t.stateids.new_store_key(self.boot);
            return Ok(OpenStep::Reserve { store_key, access: all_access, deny: all_deny });
        }
        let reserved = {
            let ids = &mut t.stateids;
            store.reserve(held, &mut || ids.new_store_key(self.boot), all_access, all_deny)?
        };
        record_open(self, &mut t, req, store, reserved).map(OpenStep::Recorded)
    }

    /// Records a new open whose share modes [`OpenStep::Reserve`] had taken
    /// in the store with the state unlocked, checking the table again:
    /// NFS4ERR_DELAY, the store put back, if the owner's other OPEN of the
    /// file came first (retried, this one upgrades it) or a conflicting
    /// open the store should have refused (the retry finds it here).
    pub(crate) fn open_reserved<S: OpenStore>(
        &self,
        req: &OpenRequest,
        store: &S,
        reserved: S::Reserved,
    ) -> Result<OpenRecorded, nfsstat4> {
        let mut t = self.lock_tables();
        if t.stateids.open_of(req.owner, req.file).is_some()
            || !share_conflicts(&t.stateids, req.file, None, req.access, req.deny).is_empty()
            || nlm_share_denies(&t.stateids, req.file, req.access, req.deny)
        {
            drop(t);
            store.undo(&reserved);
            return Err(nfsstat4::NFS4ERR_DELAY);
        }
        record_open(self, &mut t, req, store, reserved)
    }

    /// CLOSE (RFC 8881 18.2; RFC 7530 16.2) of open `sid` on `file`:
    /// drops the open and its byte-range locks. `Done` carries the store
    /// key of the share modes to release in a shared store before the
    /// reply (see `crate::shared_shares`), if any.
    pub(crate) fn close(
        &self,
        minor: u32,
        io_client: Option<u64>,
        sid: &stateid4,
        file: FileKey,
        seqid: seqid4,
    ) -> Answer<stateid4, Option<u64>> {
        if let Some(client) = io_client {
            if let Some((stateid, released_share)) = self.close_in_shard(client, sid, file) {
                return Answer::Done(Ok(stateid), released_share);
            }
        }
        let mut t = self.lock_tables();
        let replayed = |r| match r {
            Replay::Close(r) => Some(r),
            _ => None,
        };
        let owner = match v40_owner_seqid(self, &mut t, minor, sid, seqid, replayed) {
            Ok(owner) => owner,
            Err(r) => return Answer::Early(r),
        };
        let mut released_share = None;
        let r = (|| {
            let e = t.stateids.find(self.boot, minor, io_client, sid)?;
            if e.open().is_none() || e.file != file {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
            let client = e.client;
            // Released before the reply: an OPEN another client makes right
            // after must not meet what this one held. (Nothing is held while
            // the heads of a cluster keep no share modes in the store, and the
            // release then asks the store nothing.)
            let store_key = e.open().map_or(0, |o| o.store_key);
            drop(e);
            if minor >= 1 {
                t.clients.renew(client, self.now())?;
            }
            let s = t.stateids.close(&sid.other, minor == 0)?;
            if store_key != 0 && t.stateids.take_released_share(store_key) {
                released_share = Some(store_key);
            }
            Ok(if minor == 0 { s } else { crate::state::stateids::invalid_stateid() })
        })();
        if let Some(key) = owner {
            record(&mut t, OwnerSort::Open, &key, seqid, &r, Replay::Close);
        }
        Answer::Done(r, released_share)
    }

    /// OPEN_CONFIRM (RFC 7530 16.18): confirms the open-owner of `sid`, an
    /// open of `file`, and its opens.
    pub(crate) fn open_confirm(&self, sid: &stateid4, file: FileKey, seqid: seqid4) -> Answer<stateid4, ()> {
        let mut t = self.lock_tables();
        let key = match owner_seqid(self, &mut t, sid, seqid, |r| match r {
            Replay::Confirm(r) => Some(r),
            _ => None,
        }) {
            Ok(key) => key,
            Err(r) => return Answer::Early(r),
        };
        let r = (|| {
            let e = t.stateids.find(self.boot, 0, None, sid)?;
            if e.open().is_none() || e.file != file {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
            drop(e);
            t.stateids.confirm(&sid.other)
        })();
        record(&mut t, OwnerSort::Open, &key, seqid, &r, Replay::Confirm);
        Answer::Done(r, ())
    }

    /// OPEN_DOWNGRADE (RFC 8881 18.18; RFC 7530 16.19): narrows open `sid`
    /// of `file` to `share_access`/`share_deny`, modes its OPENs used
    /// (NFS4ERR_INVAL otherwise). `Done` carries, when narrowed, the
    /// open's store key and the modes a shared store is to hold now.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open_downgrade(
        &self,
        minor: u32,
        io_client: Option<u64>,
        sid: &stateid4,
        file: FileKey,
        seqid: seqid4,
        share_access: u32,
        share_deny: u32,
    ) -> Answer<stateid4, Option<(u64, u32, u32)>> {
        let mut t = self.lock_tables();
        let replayed = |r| match r {
            Replay::Downgrade(r) => Some(r),
            _ => None,
        };
        let owner = match v40_owner_seqid(self, &mut t, minor, sid, seqid, replayed) {
            Ok(owner) => owner,
            Err(r) => return Answer::Early(r),
        };
        let mut narrowed = None;
        let r = (|| {
            let e = t.stateids.find(self.boot, minor, io_client, sid)?;
            let Some(o) = e.open() else { return Err(nfsstat4::NFS4ERR_BAD_STATEID) };
            if e.file != file || !o.confirmed {
                return Err(nfsstat4::NFS4ERR_BAD_STATEID);
            }
            let o_key = o.store_key;
            let client = e.client;
            drop(e);
            t.clients.renew(client, self.now())?;
            let (access, deny) = check_share(minor, share_access, share_deny)?;
            let r = t.stateids.downgrade(&sid.other, access, deny)?;
            narrowed = Some((o_key, access, deny));
            Ok(r)
        })();
        if let Some(key) = owner {
            record(&mut t, OwnerSort::Open, &key, seqid, &r, Replay::Downgrade);
        }
        Answer::Done(r, narrowed)
    }
}

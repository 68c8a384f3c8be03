//! Client records: EXCHANGE_ID (4.1) and SETCLIENTID (4.0), leases,
//! courtesy clients.
//!
//! A record stays after its client expired (as a tombstone) so that the
//! client's next request learns NFS4ERR_EXPIRED rather than
//! NFS4ERR_STALE_CLIENTID; the tombstone goes when the owner comes back
//! with EXCHANGE_ID or SETCLIENTID, or when too many pile up.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::{netaddr4, nfsstat4, sessionid4, CREATE_SESSION4resok};

use super::lease::Lease;
use super::{State4, Tables};
use crate::rpc::Auth;

/// Who sent a request, as far as client records compare principals
/// (RFC 8881 section 2.4: for AUTH_SYS, the uid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Principal {
    None,
    Sys(u32),
    /// RPCSEC_GSS: the principal's name.
    Gss(std::sync::Arc<str>),
}

impl Principal {
    pub fn of(auth: &Auth) -> Principal {
        match auth {
            Auth::None => Principal::None,
            Auth::Sys { uid, .. } => Principal::Sys(*uid),
            Auth::Gss(c) => Principal::Gss(c.principal.clone()),
        }
    }
}

/// What NFSv4.0 SETCLIENTID recorded for an unconfirmed client.
#[derive(Debug, Clone)]
pub(crate) struct V40 {
    /// The verifier SETCLIENTID_CONFIRM must present (for a confirmed
    /// record: the last one confirmed, or a pending callback update).
    pub confirm: [u8; 8],
    pub callback: netaddr4,
}

#[derive(Debug)]
pub(crate) struct Client {
    pub id: u64,
    pub owner: Bytes,
    pub verifier: [u8; 8],
    pub principal: Principal,
    /// Minor version that created the record (0: SETCLIENTID).
    pub minor: u32,
    pub confirmed: bool,
    /// State was taken away; only the next request's error is left.
    pub expired: bool,
    /// The lease, sticky status flags and back-channel state, shared with
    /// the client's sessions so that SEQUENCE reads and renews them
    /// without the tables' lock.
    pub lease: Arc<Lease>,
    /// The CREATE_SESSION slot (RFC 8881 18.36.4): the last sequence id
    /// and its cached successful result (`None`: SEQ_MISORDERED).
    pub cs_seq: u32,
    pub cs_reply: Option<CREATE_SESSION4resok>,
    pub sessions: Vec<sessionid4>,
    pub v40: Option<V40>,
    /// Owner was in the stable store when the server started.
    pub reclaimable: bool,
    pub reclaim_complete: bool,
    /// The owner's record is in the stable store on this client's behalf.
    pub recorded: bool,
}

impl Client {
    fn live(&self) -> bool {
        !self.expired
    }
}

#[derive(Debug, Default)]
pub(crate) struct Clients {
    pub map: HashMap<u64, Client>,
    next: u32,
    /// Clients expired since the last `tidy`: their sessions and stable
    /// records still have to go.
    pending_expired: Vec<u64>,
    last_sweep: Option<Duration>,
}

/// How often the courtesy sweep runs at most.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(1);

impl Clients {
    /// Renews `client`'s lease (any operation by a client renews it) and
    /// says whether it may act: NFS4ERR_STALE_CLIENTID for ids this server
    /// instance never issued (including ones from before a restart) or
    /// that are unconfirmed, NFS4ERR_EXPIRED for clients whose state was
    /// already taken away.
    pub fn renew(&mut self, client: u64, now: Duration) -> Result<(), nfsstat4> {
        let c = self.map.get_mut(&client).ok_or(nfsstat4::NFS4ERR_STALE_CLIENTID)?;
        if c.expired {
            return Err(nfsstat4::NFS4ERR_EXPIRED);
        }
        if !c.confirmed {
            return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
        }
        c.lease.renew(now);
        Ok(())
    }

    /// Whether `client`'s lease ran out (it is a courtesy client whose
    /// state may be taken when it conflicts with another client).
    pub fn lease_expired(&self, client: u64, now: Duration, lease: Duration) -> bool {
        match self.map.get(&client) {
            Some(c) => c.expired || now.saturating_sub(c.lease.last_renew()) > lease,
            None => true,
        }
    }

    /// Marks `client` expired: its sessions go, its stable record goes, and
    /// its next request learns it (the caller purges its state).
    pub fn expire(&mut self, client: u64) {
        if let Some(c) = self.map.get_mut(&client) {
            if !c.expired {
                c.expired = true;
                c.lease.set_gone();
                c.reclaimable = false;
                c.cs_reply = None;
                self.pending_expired.push(client);
            }
        }
    }

    /// Whether `client` (4.1) sent RECLAIM_COMPLETE.
    pub fn reclaim_completed(&self, client: u64) -> bool {
        self.map.get(&client).is_some_and(|c| c.reclaim_complete)
    }

    /// Whether `client` may reclaim state now (it was known before the
    /// restart and has not sent RECLAIM_COMPLETE).
    pub fn may_reclaim(&self, client: u64) -> bool {
        self.map.get(&client).is_some_and(|c| c.live() && c.confirmed && c.reclaimable && !c.reclaim_complete)
    }

    /// Sets sticky `sr_status_flags` bits for `client` (e.g.
    /// SEQ4_STATUS_RECALLABLE_STATE_REVOKED after a delegation was revoked).
    pub fn set_status_flags(&mut self, client: u64, flags: u32) {
        if let Some(c) = self.map.get(&client) {
            c.lease.set_status_flags(flags);
        }
    }

    pub fn clear_status_flags(&mut self, client: u64, flags: u32) {
        if let Some(c) = self.map.get(&client) {
            c.lease.clear_status_flags(flags);
        }
    }

    pub fn get(&self, client: u64) -> Option<&Client> {
        self.map.get(&client)
    }

    pub fn get_mut(&mut self, client: u64) -> Option<&mut Client> {
        self.map.get_mut(&client)
    }

    /// A live (not expired) client known and confirmed.
    pub fn confirmed(&self, client: u64) -> Option<&Client> {
        self.map.get(&client).filter(|c| c.live() && c.confirmed)
    }

    /// Live records of `owner`: (confirmed, unconfirmed) ids.
    pub fn by_owner(&self, owner: &[u8], minor0: bool) -> (Option<u64>, Option<u64>) {
        let mut conf = None;
        let mut unconf = None;
        for c in self.map.values() {
            if c.live() && &c.owner[..] == owner && (c.minor == 0) == minor0 {
                if c.confirmed {
                    conf = Some(c.id);
                } else {
                    unconf = Some(c.id);
                }
            }
        }
        (conf, unconf)
    }

    /// Records of `owner` that are only tombstones.
    pub fn drop_tombstones_of(&mut self, owner: &[u8]) {
        self.map.retain(|_, c| !(c.expired && &c.owner[..] == owner));
    }

    /// Live records (what `max_clients` bounds).
    pub fn live_count(&self) -> usize {
        self.map.values().filter(|c| c.live()).count()
    }

    /// Adds an unconfirmed record with a new client id: the boot time in
    /// the high half, so ids from before a restart never match.
    pub fn insert(
        &mut self,
        boot: u32,
        owner: Bytes,
        verifier: [u8; 8],
        principal: Principal,
        minor: u32,
        now: Duration,
    ) -> u64 {
        let id = loop {
            self.next = self.next.wrapping_add(1);
            let id = (u64::from(boot) << 32) | u64::from(self.next);
            if self.next != 0 && !self.map.contains_key(&id) {
                break id;
            }
        };
        self.map.insert(
            id,
            Client {
                id,
                owner,
                verifier,
                principal,
                minor,
                confirmed: false,
                expired: false,
                lease: Arc::new(Lease::new(now)),
                cs_seq: 0,
                cs_reply: None,
                sessions: Vec::new(),
                v40: None,
                reclaimable: false,
                reclaim_complete: false,
                recorded: false,
            },
        );
        id
    }

    /// Removes a record outright (no tombstone): unconfirmed records that
    /// are replaced, old incarnations, DESTROY_CLIENTID.
    pub fn remove(&mut self, client: u64) -> Option<Client> {
        let c = self.map.remove(&client)?;
        c.lease.set_gone();
        Some(c)
    }
}

/// Housekeeping done lazily whenever a client operation takes the table
/// lock (no timers): clients past lease plus courtesy time are expired,
/// unconfirmed records older than a lease dropped, and expired clients'
/// sessions and stable records removed.
pub(super) fn tidy(st: &State4, t: &mut Tables) {
    let now = st.now();
    let due = t.clients.last_sweep.map_or(true, |l| now >= l + SWEEP_EVERY);
    if due {
        t.clients.last_sweep = Some(now);
        let lease = st.lease();
        let courtesy = Duration::from_secs(st.settings.courtesy_secs.into());
        let mut victims = Vec::new();
        let mut stale_unconfirmed = Vec::new();
        for c in t.clients.map.values() {
            if c.expired {
                continue;
            }
            let idle = now.saturating_sub(c.lease.last_renew());
            if !c.confirmed {
                if idle > lease {
                    stale_unconfirmed.push(c.id);
                }
            } else if idle > lease + courtesy {
                victims.push(c.id);
            }
        }
        for id in stale_unconfirmed {
            t.clients.remove(id);
        }
        for id in victims {
            tracing::info!(client = format_args!("{id:#x}"), "NFSv4 client expired after its courtesy time");
            t.expire_client(id);
        }
        // Bound the tombstones: the oldest go first.
        let max = st.settings.max_clients;
        let tomb = t.clients.map.values().filter(|c| c.expired).count();
        if tomb > max {
            let mut ts: Vec<(Duration, u64)> =
                t.clients.map.values().filter(|c| c.expired).map(|c| (c.lease.last_renew(), c.id)).collect();
            ts.sort();
            for (_, id) in ts.into_iter().take(tomb - max) {
                t.clients.map.remove(&id);
            }
        }
    }
    let pending = std::mem::take(&mut t.clients.pending_expired);
    for id in pending {
        forget_sessions(st, t, id);
        let owner = match t.clients.map.get_mut(&id) {
            Some(c) if c.recorded => {
                c.recorded = false;
                Some(c.owner.clone())
            }
            _ => None,
        };
        if let Some(owner) = owner {
            unrecord(st, t, &owner);
        }
    }
    let _ = t.grace.in_grace(now);
}

/// Drops every session of `client`, with their back channels.
pub(super) fn forget_sessions(st: &State4, t: &mut Tables, client: u64) {
    let ids = match t.clients.map.get_mut(&client) {
        Some(c) => std::mem::take(&mut c.sessions),
        None => st.sessions.of_client(client).iter().map(|s| s.lock().id).collect(),
    };
    for id in ids {
        st.forget_session(t, &id);
    }
}

/// Writes `owner` to the stable store (once).
pub(super) fn record(st: &State4, t: &mut Tables, client: u64) {
    let Some(c) = t.clients.map.get_mut(&client) else { return };
    if c.recorded {
        return;
    }
    c.recorded = true;
    st.store.insert(&c.owner);
}

/// Removes `owner` from the stable store unless a live client of that
/// owner still holds the record.
pub(super) fn unrecord(st: &State4, t: &Tables, owner: &[u8]) {
    if !t.clients.map.values().any(|c| c.recorded && &c.owner[..] == owner) {
        st.store.remove(owner);
    }
}

/// Removes a client entirely: its state, sessions and stable record.
pub(super) fn destroy(st: &State4, t: &mut Tables, client: u64) {
    // Gone before its state goes (see `Tables::expire_client`).
    if let Some(c) = t.clients.get(client) {
        c.lease.set_gone();
    }
    t.stateids.purge_client(client);
    t.layouts.return_all(client, None);
    forget_sessions(st, t, client);
    if let Some(c) = t.clients.remove(client) {
        if c.recorded {
            unrecord(st, t, &c.owner);
        }
    }
}

/// Makes room for one more client record when `max_clients` is reached:
/// expired clients' tombstones first, then the client whose lease ran out
/// longest ago. False when every client holds a valid lease.
pub(super) fn make_room(st: &State4, t: &mut Tables) -> bool {
    if t.clients.live_count() < st.settings.max_clients {
        return true;
    }
    let now = st.now();
    let lease = st.lease();
    let oldest = t
        .clients
        .map
        .values()
        .filter(|c| !c.expired && now.saturating_sub(c.lease.last_renew()) > lease)
        .min_by_key(|c| c.lease.last_renew())
        .map(|c| (c.id, c.confirmed));
    match oldest {
        Some((id, confirmed)) => {
            if confirmed {
                t.expire_client(id);
                tidy(st, t);
            } else {
                t.clients.remove(id);
            }
            true
        }
        None => false,
    }
}

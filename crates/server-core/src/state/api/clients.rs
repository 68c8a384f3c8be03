//! Client records and sessions as the client operations use them:
//! EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID,
//! BIND_CONN_TO_SESSION, BACKCHANNEL_CTL and RECLAIM_COMPLETE (RFC 8881),
//! SETCLIENTID, SETCLIENTID_CONFIRM and RENEW (RFC 7530). Each takes the
//! tables' lock once, as the operation always did, and most tidy the
//! client table first ([`clients::tidy`]): client operations are where
//! expired clients are swept without a timer.

use bytes::Bytes;
use parking_lot::MutexGuard;
use proto::nfs4::*;

use crate::state::clients::{self, Principal, V40};
use crate::state::sessions::{ConnBinding, Session};
use crate::state::{callback, cb_sec, State4, Tables};

/// What EXCHANGE_ID tells the client of its record (RFC 8881 18.35.4).
pub(crate) struct ExchangedId {
    pub clientid: clientid4,
    /// `eir_sequenceid`: what the next CREATE_SESSION must send.
    pub sequenceid: sequenceid4,
    pub confirmed: bool,
}

impl State4 {
    /// The tables, locked, with expired clients swept.
    fn tables_tidied(&self) -> MutexGuard<'_, Tables> {
        let mut t = self.lock_tables();
        clients::tidy(self, &mut t);
        t
    }

    /// EXCHANGE_ID (RFC 8881 section 18.35): finds or makes the record of
    /// client owner `owner` following the cases of 18.35.4; `update` is
    /// EXCHGID4_FLAG_UPD_CONFIRMED_REC_A (cases 6-9).
    pub(crate) fn exchange_id(
        &self,
        owner: Bytes,
        verifier: verifier4,
        principal: Principal,
        minor: u32,
        update: bool,
    ) -> Result<ExchangedId, nfsstat4> {
        let now = self.now();
        let mut guard = self.tables_tidied();
        let t = &mut *guard;
        let (conf, unconf) = t.clients.by_owner(&owner, false);
        let known = |id: u64, c: &mut clients::Client| {
            c.lease.renew(now);
            Ok(ExchangedId { clientid: id, sequenceid: c.cs_seq.wrapping_add(1), confirmed: true })
        };
        if update {
            // Cases 6-9.
            let Some(id) = conf else { return Err(nfsstat4::NFS4ERR_NOENT) };
            let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
            if c.verifier != verifier {
                return Err(nfsstat4::NFS4ERR_NOT_SAME);
            }
            if c.principal != principal {
                return Err(nfsstat4::NFS4ERR_PERM);
            }
            return known(id, c);
        }
        if let Some(id) = conf {
            let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
            if c.principal == principal {
                if c.verifier == verifier {
                    // Case 2: a retry, or trunking discovery.
                    return known(id, c);
                }
                // Case 5: client restart; the old record goes once the new
                // one is confirmed by CREATE_SESSION.
            } else {
                // Case 3: collision with another principal.
                let lease_ok = !t.clients.lease_expired(id, now, self.lease());
                if lease_ok && (t.stateids.has_state(id) || t.clients.get(id).is_some_and(|c| !c.sessions.is_empty())) {
                    return Err(nfsstat4::NFS4ERR_CLID_INUSE);
                }
                clients::destroy(self, t, id);
            }
        }
        // Cases 1, 4 and 5: a new unconfirmed record replaces any unconfirmed one.
        if let Some(old) = unconf {
            t.clients.remove(old);
        }
        t.clients.drop_tombstones_of(&owner);
        if !clients::make_room(self, t) {
            return Err(nfsstat4::NFS4ERR_DELAY);
        }
        let id = t.clients.insert(self.boot, owner, verifier, principal, minor, now);
        // CREATE_SESSION must come with eir_sequenceid: the slot starts one
        // below it with a contrived SEQ_MISORDERED reply.
        Ok(ExchangedId { clientid: id, sequenceid: 1, confirmed: false })
    }

    /// CREATE_SESSION (RFC 8881 section 18.36): confirms client
    /// `args.csa_clientid` if need be and gives it a new session with
    /// connection `conn` bound to its fore channel. `channels` are the
    /// negotiated fore and back channel attributes, or why they cannot be
    /// had: that error comes only after the client and sequence checks.
    pub(crate) fn create_session(
        &self,
        args: &CREATE_SESSION4args,
        principal: Principal,
        conn: u64,
        channels: Result<(channel_attrs4, channel_attrs4), nfsstat4>,
        offers: Result<Vec<cb_sec::CbOffer>, nfsstat4>,
    ) -> Result<CREATE_SESSION4resok, nfsstat4> {
        let now = self.now();
        let mut guard = self.tables_tidied();
        let t = &mut *guard;
        let id = args.csa_clientid;
        let c = match t.clients.get(id) {
            Some(c) if !c.expired => c,
            _ => return Err(nfsstat4::NFS4ERR_STALE_CLIENTID),
        };
        // Sequence id processing first: a retry gets the cached reply.
        if args.csa_sequence == c.cs_seq {
            return c.cs_reply.clone().ok_or(nfsstat4::NFS4ERR_SEQ_MISORDERED);
        }
        if args.csa_sequence != c.cs_seq.wrapping_add(1) {
            return Err(nfsstat4::NFS4ERR_SEQ_MISORDERED);
        }
        if c.principal != principal {
            return Err(nfsstat4::NFS4ERR_CLID_INUSE);
        }
        if c.minor == 0 {
            // A 4.0 client id cannot have sessions.
            return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
        }
        if c.sessions.len() >= self.settings.max_sessions_per_client {
            return Err(nfsstat4::NFS4ERR_NOSPC);
        }
        let (fore, back) = channels?;
        let offers = offers?;
        if !c.confirmed {
            let owner = c.owner.clone();
            self.confirm_incarnation(t, id, &owner, false)?;
        }

        let sid = self.sessions.new_id(self.boot, id);
        let lease = t.clients.get(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?.lease.clone();
        let slots = self.settings.initial_target_slots;
        let mut session = Session::new(sid, id, lease, fore.clone(), back.clone(), slots, now);
        session.cb_program = args.csa_cb_program;
        session.cb_sec = offers;
        let want_back = args.csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0;
        session.conns.push(ConnBinding { conn, fore: true, back: false });
        let cell = self.sessions.insert(session);
        let mut flags = 0;
        if want_back && callback::bind(self, t, &sid, conn) {
            flags |= CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
            cell.lock().conns[0].back = true;
        }
        cell.lock().flags = flags;
        let res = CREATE_SESSION4resok {
            csr_sessionid: sid,
            csr_sequence: args.csa_sequence,
            csr_flags: flags,
            csr_fore_chan_attrs: fore,
            csr_back_chan_attrs: back,
        };
        let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
        c.sessions.push(sid);
        c.cs_seq = args.csa_sequence;
        c.cs_reply = Some(res.clone());
        c.lease.renew(now);
        Ok(res)
    }

    /// Client id confirmation (CREATE_SESSION, SETCLIENTID_CONFIRM): the
    /// new incarnation `id` of `owner` replaces a confirmed old one, whose
    /// state goes and whose stable record passes to the new one.
    fn confirm_incarnation(&self, t: &mut Tables, id: u64, owner: &Bytes, minor0: bool) -> Result<(), nfsstat4> {
        let (old, _) = t.clients.by_owner(owner, minor0);
        let mut recorded = false;
        if let Some(old) = old.filter(|o| *o != id) {
            if let Some(o) = t.clients.get_mut(old) {
                recorded = o.recorded;
                // Keep the stable record: it passes to the new incarnation.
                o.recorded = false;
            }
            clients::destroy(self, t, old);
        }
        let known = t.grace.is_known(owner);
        let c = t.clients.get_mut(id).ok_or(nfsstat4::NFS4ERR_SERVERFAULT)?;
        c.confirmed = true;
        c.reclaimable = known;
        c.recorded = recorded;
        clients::record(self, t, id);
        Ok(())
    }

    /// DESTROY_SESSION (RFC 8881 section 18.37) of session `sid`;
    /// `own_slot` is the slot of the compound asking, if it runs in that
    /// session, which alone may still be busy.
    pub(crate) fn destroy_session(&self, sid: &sessionid4, own_slot: Option<usize>) -> Result<(), nfsstat4> {
        let mut guard = self.tables_tidied();
        let t = &mut *guard;
        let cell = self.sessions.get(sid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
        let client = {
            let s = cell.lock();
            // Another compound still running in the session must finish first.
            if s.slots.iter().enumerate().any(|(i, x)| x.busy && Some(i) != own_slot) {
                return Err(nfsstat4::NFS4ERR_DELAY);
            }
            s.client
        };
        self.forget_session(t, sid);
        if let Some(c) = t.clients.get_mut(client) {
            c.sessions.retain(|x| x != sid);
            c.lease.renew(self.now());
        }
        Ok(())
    }

    /// DESTROY_CLIENTID (RFC 8881 section 18.50): refused while the client
    /// has sessions or state under a live lease; a client that had yet to
    /// finish reclaiming no longer holds grace open.
    pub(crate) fn destroy_clientid(&self, id: clientid4) -> Result<(), nfsstat4> {
        let mut guard = self.tables_tidied();
        let t = &mut *guard;
        let Some(c) = t.clients.get(id) else { return Err(nfsstat4::NFS4ERR_STALE_CLIENTID) };
        if c.minor == 0 {
            return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
        }
        if !c.expired && (!c.sessions.is_empty() || t.stateids.has_state(id)) {
            return Err(nfsstat4::NFS4ERR_CLIENTID_BUSY);
        }
        let owner = c.owner.clone();
        let known = c.reclaimable && !c.reclaim_complete;
        clients::destroy(self, t, id);
        if known {
            t.grace.forget(&owner);
        }
        Ok(())
    }

    /// BIND_CONN_TO_SESSION (RFC 8881 section 18.34): binds connection
    /// `conn` to session `sid` in direction `dir`; the directions bound.
    /// The back channel is left out when the session has no callback
    /// security we can use (INVAL if only it was asked for).
    pub(crate) fn bind_conn_to_session(
        &self,
        sid: &sessionid4,
        conn: u64,
        dir: channel_dir_from_client4,
    ) -> Result<channel_dir_from_server4, nfsstat4> {
        use channel_dir_from_client4 as C;
        let mut guard = self.tables_tidied();
        let t = &mut *guard;
        let cell = self.sessions.get(sid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
        let client = cell.lock().client;
        if t.clients.confirmed(client).is_none() {
            self.forget_session(t, sid);
            return Err(nfsstat4::NFS4ERR_BADSESSION);
        }
        let (fore, mut back) = match dir {
            C::CDFC4_FORE => (true, false),
            C::CDFC4_BACK => (false, true),
            C::CDFC4_FORE_OR_BOTH | C::CDFC4_BACK_OR_BOTH => (true, true),
        };
        if back && !callback::bind(self, t, sid, conn) {
            if dir == C::CDFC4_BACK {
                return Err(nfsstat4::NFS4ERR_INVAL);
            }
            back = false;
        }
        let mut s = cell.lock();
        s.conns.retain(|b| b.conn != conn);
        s.conns.push(ConnBinding { conn, fore, back });
        drop(s);
        let _ = t.clients.renew(client, self.now());
        Ok(match (fore, back) {
            (true, true) => channel_dir_from_server4::CDFS4_BOTH,
            (false, true) => channel_dir_from_server4::CDFS4_BACK,
            _ => channel_dir_from_server4::CDFS4_FORE,
        })
    }

    /// BACKCHANNEL_CTL (RFC 8881 section 18.33): session `sid`'s new
    /// callback program and security, taken into use at once on a bound
    /// back channel.
    pub(crate) fn backchannel_ctl(
        &self,
        sid: &sessionid4,
        cb_program: u32,
        offers: Vec<cb_sec::CbOffer>,
    ) -> Result<(), nfsstat4> {
        let mut t = self.lock_tables();
        let cell = self.sessions.get(sid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
        let mut s = cell.lock();
        s.cb_program = cb_program;
        let old = std::mem::take(&mut s.cb_sec);
        s.cb_sec = cb_sec::merged(offers, old);
        let bound = s.backchannel.as_ref().map(|b| b.conn);
        drop(s);
        if let Some(conn) = bound {
            callback::bind(self, &mut t, sid, conn);
        }
        Ok(())
    }

    /// SETCLIENTID (RFC 7530 section 16.33) for client owner `owner`:
    /// the client id and its confirm verifier. `Err(Some(addr))`: the
    /// owner is in use by another principal (CLID_INUSE, with its callback
    /// address); `Err(None)`: out of client records.
    pub(crate) fn setclientid(
        &self,
        owner: Bytes,
        verifier: verifier4,
        principal: Principal,
        callback: clientaddr4,
    ) -> Result<SETCLIENTID4resok, Option<clientaddr4>> {
        let now = self.now();
        let mut guard = self.tables_tidied();
        let t = &mut *guard;
        let (conf, unconf) = t.clients.by_owner(&owner, true);
        let confirm = |id: u64| -> [u8; 8] {
            let n = now.as_nanos() as u64;
            (n ^ id.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15).to_be_bytes()
        };
        if let Some(id) = conf {
            let c = t.clients.get(id).ok_or(None)?;
            if c.principal != principal {
                // Only a record with state under a live lease is in use (RFC
                // 7530 9.1.2): otherwise the new principal takes the id over.
                let busy = !t.clients.lease_expired(id, now, self.lease()) && t.stateids.has_state(id);
                if busy {
                    let addr = c
                        .v40
                        .as_ref()
                        .map(|v| v.callback.clone())
                        .unwrap_or(netaddr4 { na_r_netid: Default::default(), na_r_addr: Default::default() });
                    return Err(Some(addr));
                }
                clients::destroy(self, t, id);
            } else if c.verifier == verifier {
                // Callback update: the same client id, a new confirm verifier
                // (any unconfirmed record goes).
                if let Some(u) = unconf {
                    t.clients.remove(u);
                }
                let k = confirm(id);
                let c = t.clients.get_mut(id).ok_or(None)?;
                c.v40 = Some(V40 { confirm: k, callback });
                c.lease.renew(now);
                return Ok(SETCLIENTID4resok { clientid: id, setclientid_confirm: k });
            }
            // Otherwise a client reboot: a new record, confirmed later.
        }
        if let Some(u) = unconf {
            t.clients.remove(u);
        }
        t.clients.drop_tombstones_of(&owner);
        if !clients::make_room(self, t) {
            return Err(None);
        }
        let id = t.clients.insert(self.boot, owner, verifier, principal, 0, now);
        let k = confirm(id);
        t.clients.get_mut(id).ok_or(None)?.v40 = Some(V40 { confirm: k, callback });
        Ok(SETCLIENTID4resok { clientid: id, setclientid_confirm: k })
    }

    /// SETCLIENTID_CONFIRM (RFC 7530 section 16.34): confirms 4.0 client
    /// `id` with verifier `confirm`; a new incarnation replaces the old
    /// one (client reboot), whose state goes.
    pub(crate) fn setclientid_confirm(
        &self,
        id: clientid4,
        confirm: verifier4,
        principal: Principal,
    ) -> Result<(), nfsstat4> {
        let now = self.now();
        let mut guard = self.tables_tidied();
        let t = &mut *guard;
        let c = match t.clients.get(id) {
            Some(c) if !c.expired && c.minor == 0 => c,
            Some(c) if c.expired => return Err(nfsstat4::NFS4ERR_EXPIRED),
            _ => return Err(nfsstat4::NFS4ERR_STALE_CLIENTID),
        };
        if c.v40.as_ref().is_none_or(|v| v.confirm != confirm) {
            return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
        }
        if c.principal != principal {
            return Err(nfsstat4::NFS4ERR_CLID_INUSE);
        }
        if c.confirmed {
            // A callback update or a retry.
            let _ = t.clients.renew(id, now);
            return Ok(());
        }
        let owner = c.owner.clone();
        self.confirm_incarnation(t, id, &owner, true)?;
        let _ = t.clients.renew(id, now);
        Ok(())
    }

    /// RENEW (RFC 7530 section 16.29) of 4.0 client `id`'s lease.
    pub(crate) fn renew(&self, id: clientid4) -> Result<(), nfsstat4> {
        self.tables_tidied().clients.renew(id, self.now())
    }

    /// RECLAIM_COMPLETE (RFC 8881 section 18.51) for all file systems:
    /// `client` finished reclaiming; grace ends early once every known
    /// client has.
    pub(crate) fn reclaim_complete(&self, client: clientid4) -> Result<(), nfsstat4> {
        let mut guard = self.lock_tables();
        let t = &mut *guard;
        let Some(c) = t.clients.get_mut(client) else { return Err(nfsstat4::NFS4ERR_STALE_CLIENTID) };
        if c.reclaim_complete {
            return Err(nfsstat4::NFS4ERR_COMPLETE_ALREADY);
        }
        c.reclaim_complete = true;
        c.lease.set_reclaim_complete();
        let owner = c.owner.clone();
        t.grace.complete(&owner);
        let _ = t.grace.in_grace(self.now());
        Ok(())
    }
}

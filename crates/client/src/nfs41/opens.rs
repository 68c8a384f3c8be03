//! Opens and delegations (RFC 8881 sections 9 and 10): one open-owner per
//! client, one open stateid per file however many times it is open here
//! (the server upgrades the share on each OPEN), CLOSE when the last user
//! goes, and which stateid a READ or WRITE carries.

use bytes::Bytes;
use client_core::fattr::Fattr;
use client_core::v41::delegations::DelegationKind;
use proto::nfs4::*;

use super::Nfs41;
use crate::error::{Error, Result};

/// The share access of an open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAccess {
    Read,
    Write,
    Both,
}

impl OpenAccess {
    pub fn new(read: bool, write: bool) -> OpenAccess {
        match (read, write) {
            (_, false) => OpenAccess::Read,
            (false, true) => OpenAccess::Write,
            (true, true) => OpenAccess::Both,
        }
    }

    fn writes(self) -> bool {
        !matches!(self, OpenAccess::Read)
    }

    fn bits(self) -> u32 {
        match self {
            OpenAccess::Read => OPEN4_SHARE_ACCESS_READ,
            OpenAccess::Write => OPEN4_SHARE_ACCESS_WRITE,
            OpenAccess::Both => OPEN4_SHARE_ACCESS_BOTH,
        }
    }
}

/// A file this client has open on the server.
#[derive(Debug, Clone)]
pub(crate) struct OpenState {
    pub stateid: stateid4,
    /// OPEN4_SHARE_ACCESS_* bits held.
    pub access: u32,
    /// Opens of the file through the file API not yet closed.
    pub users: usize,
    /// Of those, opens for writing: when the last of them closes while
    /// readers remain, the open is downgraded to reading (OPEN_DOWNGRADE),
    /// so the server need not count this client as a writer.
    pub writers: usize,
    /// Of those, opens made by a create for a file-API open that has not
    /// claimed them yet ([`Nfs41::take_spare`]).
    pub spare: usize,
    /// Opened under a delegation without asking the server (`stateid` is
    /// the delegation's): made real before the delegation goes back.
    pub local: bool,
    /// The server's last OPEN reply for the file promised to keep it,
    /// should its last name be removed, until it is closed
    /// (OPEN4_RESULT_PRESERVE_UNLINKED, RFC 8881 section 18.16.4).
    pub preserve_unlinked: bool,
}

/// The special stateid of all zeros (RFC 8881 section 8.2.3): I/O with no
/// open, checked against other clients' share reservations only.
const ANONYMOUS: stateid4 = stateid4 { seqid: 0, other: [0; 12] };

impl Nfs41 {
    fn open_owner(&self) -> open_owner4 {
        open_owner4 { clientid: self.session.lock().clientid, owner: Bytes::from_static(b"nfsx-open-owner") }
    }

    /// OPEN of `name` in `dir`, creating it with `create` when given, with
    /// the file's handle and attributes and the directory's attributes
    /// after it from the same compound.
    pub async fn open_name(
        &self,
        dir: &Bytes,
        name: &str,
        access: OpenAccess,
        create: Option<createhow4>,
    ) -> Result<(Bytes, Fattr, Fattr)> {
        let openhow = match create {
            Some(how) => openflag4::OPEN4_CREATE(how),
            None => openflag4::default(opentype4::OPEN4_NOCREATE),
        };
        let claim = open_claim4::CLAIM_NULL(Bytes::copy_from_slice(name.as_bytes()));
        let ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: dir.clone() }),
            self.open_op(access, openhow, claim),
            nfs_argop4::OP_GETFH,
            self.getattr_op(),
            nfs_argop4::OP_PUTFH(PUTFH4args { object: dir.clone() }),
            self.getattr_op(),
        ];
        let res = self.compound(ops).await?;
        let fh = res.getfh(2)?;
        self.opened(&fh, res.op(1)?, access)?;
        Ok((fh, res.attrs(3)?, res.attrs(5)?))
    }

    /// OPEN of a file by its handle (CLAIM_FH), for callers that hold the
    /// handle already (the mount).
    pub async fn open_fh(&self, fh: &Bytes, access: OpenAccess) -> Result<Fattr> {
        let ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            self.open_op(access, openflag4::default(opentype4::OPEN4_NOCREATE), open_claim4::CLAIM_FH),
            self.getattr_op(),
        ];
        let res = self.compound(ops).await?;
        let attrs = res.attrs(2)?;
        self.opened(fh, res.op(1)?, access)?;
        Ok(attrs)
    }

    fn open_op(&self, access: OpenAccess, openhow: openflag4, claim: open_claim4) -> nfs_argop4 {
        nfs_argop4::OP_OPEN(OPEN4args {
            seqid: 0,
            share_access: access.bits()
                | if self.want_delegations {
                    OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE
                } else {
                    OPEN4_SHARE_ACCESS_WANT_NO_DELEG
                },
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: self.open_owner(),
            openhow,
            claim,
        })
    }

    /// Records an OPEN's stateid (a later OPEN of the same file returns
    /// the same state with a higher seqid) and any delegation it granted.
    fn opened(&self, fh: &Bytes, res: &nfs_resop4, access: OpenAccess) -> Result<()> {
        let nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok)) = res else {
            return Err(Error::Invalid("OPEN result missing from the reply".into()));
        };
        self.lost.lock().remove(fh);
        {
            let mut opens = self.opens.lock();
            let e = opens.entry(fh.clone()).or_insert(OpenState {
                stateid: ok.stateid.clone(),
                access: 0,
                users: 0,
                writers: 0,
                spare: 0,
                local: false,
                preserve_unlinked: false,
            });
            e.preserve_unlinked = ok.rflags & OPEN4_RESULT_PRESERVE_UNLINKED != 0;
            let newer = ok.stateid.seqid.wrapping_sub(e.stateid.seqid) < (1 << 31);
            if e.local || e.stateid.other != ok.stateid.other || newer {
                e.stateid = ok.stateid.clone();
                e.local = false;
            }
            e.access |= access.bits();
            e.users += 1;
            e.writers += usize::from(access.writes());
        }
        let granted = match &ok.delegation {
            open_delegation4::OPEN_DELEGATE_READ(d) => Some((d.stateid.clone(), DelegationKind::Read)),
            open_delegation4::OPEN_DELEGATE_WRITE(d) => Some((d.stateid.clone(), DelegationKind::Write)),
            _ => None,
        };
        if let Some((stateid, kind)) = granted {
            self.counters.lock().delegations_granted += 1;
            let old = self.delegations.lock().granted(fh.clone(), stateid, kind);
            if let Some(old) = old {
                // A second grant for the file: give back the one it replaced.
                if let Some(me) = self.arc() {
                    let fh = fh.clone();
                    tokio::spawn(async move { me.delegreturn(&fh, old.stateid).await });
                }
            }
        }
        Ok(())
    }

    /// An open made without a call, under a delegation that covers
    /// `access` (RFC 8881 section 10.4: the client may handle opens
    /// locally while it holds one). False when none does.
    pub fn open_local(&self, fh: &Bytes, access: OpenAccess) -> bool {
        let deleg = {
            let d = self.delegations.lock();
            match d.usable(fh) {
                Some(d) if access == OpenAccess::Read || d.kind == DelegationKind::Write => d.stateid.clone(),
                _ => return false,
            }
        };
        {
            let mut opens = self.opens.lock();
            match opens.get_mut(fh) {
                // Open here already (on the server with the access needed,
                // or locally): one more user.
                Some(o) if o.local || o.access & access.bits() == access.bits() => {
                    o.users += 1;
                    o.writers += usize::from(access.writes());
                    o.access |= access.bits();
                }
                Some(_) => return false,
                None => {
                    let writers = usize::from(access.writes());
                    let o = OpenState {
                        stateid: deleg,
                        access: access.bits(),
                        users: 1,
                        writers,
                        spare: 0,
                        local: true,
                        preserve_unlinked: false,
                    };
                    opens.insert(fh.clone(), o);
                }
            }
        }
        self.counters.lock().local_opens += 1;
        true
    }

    /// Before a delegation goes back, the opens made under it become
    /// opens on the server (OPEN with CLAIM_DELEG_CUR_FH); local opens
    /// nobody uses any more just go.
    pub(crate) async fn make_local_opens_real(&self, fh: &Bytes, deleg: &stateid4) {
        let access = {
            let mut opens = self.opens.lock();
            match opens.get(fh) {
                Some(o) if o.local && o.users > 0 => o.access,
                Some(o) if o.local => {
                    opens.remove(fh);
                    return;
                }
                _ => return,
            }
        };
        let ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            nfs_argop4::OP_OPEN(OPEN4args {
                seqid: 0,
                share_access: access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
                share_deny: OPEN4_SHARE_DENY_NONE,
                owner: self.open_owner(),
                openhow: openflag4::default(opentype4::OPEN4_NOCREATE),
                claim: open_claim4::CLAIM_DELEG_CUR_FH(deleg.clone()),
            }),
        ];
        match self.compound(ops).await {
            Ok(res) => {
                if let Some(nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok))) = res.get(1) {
                    if let Some(o) = self.opens.lock().get_mut(fh) {
                        o.stateid = ok.stateid.clone();
                        o.local = false;
                    }
                }
            }
            Err(e) => tracing::warn!("could not open a file on the server before returning its delegation: {e}"),
        }
    }

    /// The open a create just made is kept for the open that follows it.
    pub(crate) fn keep_spare(&self, fh: &Bytes) {
        if let Some(o) = self.opens.lock().get_mut(fh) {
            o.spare += 1;
        }
    }

    /// OPEN_DOWNGRADE to reading: the writers are gone, readers remain
    /// (RFC 8881 section 18.18).
    async fn downgrade(&self, fh: &Bytes, stateid: stateid4) -> Result<()> {
        let ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            nfs_argop4::OP_OPEN_DOWNGRADE(OPEN_DOWNGRADE4args {
                open_stateid: stateid,
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_READ,
                share_deny: OPEN4_SHARE_DENY_NONE,
            }),
        ];
        let res = self.compound(ops).await?;
        if let Some(nfs_resop4::OP_OPEN_DOWNGRADE(OPEN_DOWNGRADE4res::NFS4_OK(ok))) = res.get(1) {
            if let Some(e) = self.opens.lock().get_mut(fh) {
                // A writer that opened meanwhile upgraded it again (its
                // OPEN's reply carries the newer seqid).
                let newer = ok.open_stateid.seqid.wrapping_sub(e.stateid.seqid) < (1 << 31);
                if newer && e.stateid.other == ok.open_stateid.other {
                    e.stateid = ok.open_stateid.clone();
                    if e.writers == 0 {
                        e.access = OPEN4_SHARE_ACCESS_READ;
                    }
                }
            }
        }
        Ok(())
    }

    /// Claims an open a create made, if one is waiting (no call needed).
    pub fn take_spare(&self, fh: &Bytes) -> bool {
        match self.opens.lock().get_mut(fh) {
            Some(o) if o.spare > 0 => {
                o.spare -= 1;
                true
            }
            _ => false,
        }
    }

    /// One user of `fh` is done (`wrote`: one that opened it for
    /// writing); the last one CLOSEs it, the last writer before readers
    /// downgrades it.
    pub async fn close(&self, fh: &Bytes, wrote: bool) -> Result<()> {
        let delegated = self.has_delegation(fh);
        let mut downgrade = None;
        let stateid = {
            let mut opens = self.opens.lock();
            let Some(e) = opens.get_mut(fh) else { return Ok(()) };
            e.users = e.users.saturating_sub(1);
            if wrote {
                e.writers = e.writers.saturating_sub(1);
            }
            let write_left = e.users > 0 && e.writers == 0 && e.access & OPEN4_SHARE_ACCESS_WRITE != 0;
            if write_left && e.local {
                e.access = OPEN4_SHARE_ACCESS_READ;
            } else if write_left && !delegated {
                downgrade = Some(e.stateid.clone());
            }
            // Under a delegation an open the server knows is kept, idle,
            // for the next open and its locks (a lock stands on an open);
            // it is closed when the delegation goes back.
            if e.users > 0 || (delegated && !e.local) {
                None
            } else {
                match opens.remove(fh) {
                    // Made under a delegation: the server never heard of it.
                    Some(e) if e.local => None,
                    e => e.map(|e| e.stateid),
                }
            }
        };
        if let Some(open) = downgrade {
            return self.downgrade(fh, open).await;
        }
        let Some(stateid) = stateid else { return Ok(()) };
        self.return_layout(fh).await;
        // The file's lock stateids go in the same compound (its locks
        // were released before the close, as close(2) releases them).
        let mut ops = vec![nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() })];
        let locks = self.take_lock_stateids(fh);
        let freeing = !locks.is_empty();
        ops.extend(locks.into_iter().map(|s| nfs_argop4::OP_FREE_STATEID(FREE_STATEID4args { fsa_stateid: s })));
        ops.push(nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: stateid.clone() }));
        let mut r = self.compound(ops).await;
        if freeing && matches!(r, Err(Error::Nfs4 { op: "FREE_STATEID", .. })) {
            // A lock stateid the server would not free must not keep
            // the open.
            let ops = vec![
                nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
                nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: stateid }),
            ];
            r = self.compound(ops).await;
        }
        match r {
            // Opened again meanwhile: the server holds the newer open,
            // whose stateid a newer OPEN reply recorded.
            Err(Error::Nfs4 { status: nfsstat4::NFS4ERR_OLD_STATEID, .. }) => Ok(()),
            other => other.map(drop),
        }
    }

    /// The stateid a READ (`write` false) or WRITE of `fh` carries: the
    /// delegation's while one that allows it is held, else the open's
    /// with seqid 0, which the server takes as "whatever this open's
    /// stateid is now" (RFC 8881 section 8.2.2): an OPEN of the same file
    /// by another thread bumps the seqid, and READs built before it would
    /// otherwise fail with OLD_STATEID; else the anonymous stateid.
    pub fn io_stateid(&self, fh: &Bytes, write: bool) -> stateid4 {
        {
            let d = self.delegations.lock();
            if let Some(d) = d.usable(fh) {
                if !write || d.kind == DelegationKind::Write {
                    return d.stateid.clone();
                }
            }
        }
        self.opens.lock().get(fh).map_or(ANONYMOUS, |o| stateid4 { seqid: 0, other: o.stateid.other })
    }

    /// Replaces stateids a recovery made stale in a request built before it.
    pub(crate) fn remap_stateids(&self, ops: &mut [nfs_argop4]) {
        let remapped = self.remapped.lock();
        if remapped.is_empty() {
            return;
        }
        // A stateid that said "the current one" (seqid 0) still does.
        let fix = |s: &mut stateid4| {
            if let Some(new) = remapped.get(&s.other) {
                let seqid = if s.seqid == 0 { 0 } else { new.seqid };
                *s = stateid4 { seqid, other: new.other };
            }
        };
        for op in ops {
            match op {
                nfs_argop4::OP_READ(a) => fix(&mut a.stateid),
                nfs_argop4::OP_WRITE(a) => fix(&mut a.stateid),
                nfs_argop4::OP_SETATTR(a) => fix(&mut a.stateid),
                nfs_argop4::OP_CLOSE(a) => fix(&mut a.open_stateid),
                _ => {}
            }
        }
    }

    /// Whether the server holds an open of `fh` for this client and
    /// promised to keep the file, once its last name is removed, until
    /// that open is closed.
    pub fn preserves_unlinked(&self, fh: &Bytes) -> bool {
        self.opens.lock().get(fh).is_some_and(|o| o.preserve_unlinked && !o.local)
    }

    /// Whether the server promised to tell this client before anyone
    /// else changes `fh` (a delegation is held): its cached attributes and
    /// data need no check on open.
    pub fn has_delegation(&self, fh: &Bytes) -> bool {
        self.delegations.lock().usable(fh).is_some()
    }

    /// Gives a delegation back after writing back what it covered.
    pub(crate) async fn return_delegation(&self, fh: &Bytes) {
        if let Some(hook) = self.flush_hook.get() {
            hook(fh.clone()).await;
        }
        let held = self.delegations.lock().usable_or_recalled(fh);
        if let Some(stateid) = held {
            // No more local locks from here on (see `lock_locally`).
            self.delegations.lock().recall(&stateid);
            self.make_local_opens_real(fh, &stateid).await;
            self.make_local_locks_real(fh).await;
        }
        let taken = self.delegations.lock().take(fh);
        if let Some(d) = taken {
            self.delegreturn(fh, d.stateid).await;
        }
        // An open kept idle under the delegation goes with it.
        let idle = self.opens.lock().get(fh).is_some_and(|o| o.users == 0 && !o.local);
        if idle {
            if let Some(o) = self.opens.lock().get_mut(fh) {
                o.users = 1;
            }
            if let Err(e) = self.close(fh, false).await {
                tracing::debug!("CLOSE of an idle open after returning its delegation: {e}");
            }
        }
    }

    async fn delegreturn(&self, fh: &Bytes, stateid: stateid4) {
        let ops = vec![
            nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
            nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: stateid }),
        ];
        if let Err(e) = self.compound(ops).await {
            // Already revoked or returned: nothing is left to give back.
            tracing::debug!("DELEGRETURN: {e}");
        }
    }

    pub(crate) async fn return_all_delegations(&self) {
        let held = self.delegations.lock().keys();
        let Some(me) = self.me.upgrade() else {
            for fh in held {
                self.return_delegation(&fh).await;
            }
            return;
        };
        // As many at once as the session has slots: one after another, a
        // mount that made 50,000 files spent seconds on its unmount.
        let width = self.slots.lock().size().max(1) as usize;
        let mut running = tokio::task::JoinSet::new();
        for fh in held {
            if running.len() >= width {
                running.join_next().await;
            }
            let me = me.clone();
            running.spawn(async move { me.return_delegation(&fh).await });
        }
        while running.join_next().await.is_some() {}
    }

    /// After the server restarted: every open again, with CLAIM_PREVIOUS
    /// during the server's grace period (RFC 8881 section 8.4.2.1).
    pub(crate) async fn reclaim_opens(&self) {
        let held: Vec<(Bytes, u32)> = self.opens.lock().iter().map(|(fh, o)| (fh.clone(), o.access)).collect();
        for (fh, access) in held {
            let ops = vec![
                nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() }),
                nfs_argop4::OP_OPEN(OPEN4args {
                    seqid: 0,
                    share_access: access,
                    share_deny: OPEN4_SHARE_DENY_NONE,
                    owner: self.open_owner(),
                    openhow: openflag4::default(opentype4::OPEN4_NOCREATE),
                    claim: open_claim4::CLAIM_PREVIOUS(open_delegation_type4::OPEN_DELEGATE_NONE),
                }),
            ];
            match self.compound(ops).await {
                Ok(res) => {
                    if let Some(nfs_resop4::OP_OPEN(OPEN4res::NFS4_OK(ok))) = res.get(1) {
                        if let Some(o) = self.opens.lock().get_mut(&fh) {
                            self.remapped.lock().insert(o.stateid.other, ok.stateid.clone());
                            o.stateid = ok.stateid.clone();
                        }
                        self.counters.lock().reclaims += 1;
                    }
                }
                Err(e) => {
                    // The open is lost: its I/O fails until the file is
                    // opened again (see `Nfs41::lost`). Requests built
                    // before keep the old stateid, which the server refuses.
                    tracing::warn!("could not reclaim an open after the server restarted or the lease ran out: {e}");
                    self.opens.lock().remove(&fh);
                    self.lost.lock().insert(fh.clone());
                }
            }
        }
    }
}

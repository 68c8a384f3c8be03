//! Read and write delegations: grant policy, recall, revocation.
//!
//! A delegation is granted on OPEN when no other client has the file
//! open or delegated and the client has a working back channel: a READ
//! delegation to readers, a WRITE delegation to writers (policy
//! `read-write`). A request of another client that conflicts (an OPEN,
//! I/O, or a REMOVE/RENAME/SETATTR through [`recall_conflicting`]) sends
//! CB_RECALL once (again if the holder answered that it did not hold the
//! delegation yet: the recall overtook the OPEN reply granting it) and
//! gets NFS4ERR_DELAY until the holder returns the delegation; one not
//! returned within a lease of the recall is revoked on the next
//! conflicting request, and its stateid then answers
//! NFS4ERR_DELEG_REVOKED until FREE_STATEID.

use proto::nfs4::*;

use std::sync::Arc;

use super::lease::Lease;
use super::settings::DelegationPolicy;
use super::stateids::{DelegState, Entry, Kind, Other};
use super::{callback, FileKey, State4, Tables};
use crate::park::{HolderAnswer, WaitId};

/// Whether a delegation of another client conflicts with access
/// `for_write` (any delegation) or reading (write delegations only).
fn conflicts(d: &DelegState, for_write: bool) -> bool {
    !d.revoked && (for_write || d.write)
}

/// Whether `e` is a delegation that conflicts with access `for_write` by
/// another client than its holder.
pub(super) fn conflicting(e: &Entry, for_write: bool) -> bool {
    matches!(&e.kind, Kind::Deleg(d) if conflicts(d, for_write))
}

/// Recalls the delegations on `file` that conflict with a request of
/// `requesting_client` (`None`: unknown, e.g. NFSv4.0 anonymous I/O or
/// NFSv3) that reads, or changes (`for_write`) the file: data writes,
/// opens for writing, REMOVE, RENAME, SETATTR. Ok when nothing (any
/// more) stands in the way; NFS4ERR_DELAY while a recall is outstanding.
/// Delegations of expired clients are taken with their client's state;
/// delegations not returned within a lease of their recall are revoked.
pub(super) fn recall_conflicting(
    st: &State4,
    t: &mut Tables,
    file: FileKey,
    requesting_client: Option<u64>,
    for_write: bool,
) -> Result<(), nfsstat4> {
    let now = st.now();
    let lease = st.lease();
    let found: Vec<(Other, Entry)> = t
        .stateids
        .on_file(file)
        .iter()
        .filter(|(_, e)| Some(e.client) != requesting_client)
        .filter(|(_, e)| matches!(&e.kind, Kind::Deleg(d) if conflicts(d, for_write)))
        .map(|(o, e)| (*o, e.clone()))
        .collect();
    let mut wait = false;
    for (other, e) in found {
        let Kind::Deleg(d) = &e.kind else { continue };
        if t.clients.lease_expired(e.client, now, lease) {
            t.expire_client(e.client);
            continue;
        }
        match d.recalled {
            Some(at) if now.saturating_sub(at) >= lease => {
                tracing::info!(client = e.client, "delegation not returned within the lease; revoked");
                revoke(t, &other);
            }
            Some(_) if !d.recall_again => wait = true,
            // First recall, or the holder did not know the delegation yet.
            _ => {
                let sid = e.stateid(other);
                let sent = callback::recall(st, t, e.client, &sid, &d.fh);
                if !sent {
                    tracing::debug!(client = e.client, "delegation recall could not be sent");
                }
                t.stateids.update_deleg(&other, |d| {
                    d.recalled.get_or_insert(now);
                    d.recall_again = false;
                });
                // A directory's delegation tells nothing more once recalled.
                t.dir_delegs.recalled(&other, now, super::dir_delegs::RecallCause::Conflict);
                wait = true;
            }
        }
    }
    if wait {
        Err(nfsstat4::NFS4ERR_DELAY)
    } else {
        Ok(())
    }
}

/// What a GETATTR of another client gives for the size and change of a
/// file under a write delegation (RFC 8881 section 10.4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HolderSays {
    /// The server's own attributes: nobody else holds a write delegation
    /// (or its return is under way), or the holder could not tell.
    ServerAttrs,
    /// The holder's size and change.
    Attrs { size: u64, change: u64 },
    /// CB_GETATTR is sent: park the compound until `WaitId` is answered.
    Wait(WaitId),
}

/// The size and change of `file` as the holder of a write delegation on
/// it sees them, for a GETATTR of another client: asked with CB_GETATTR,
/// for which the GETATTR waits (parked, up to `cb_getattr_wait_ms`) and
/// then comes back with `answer`. A holder that does not answer in time
/// gets its delegation recalled and the caller NFS4ERR_DELAY, as for a
/// conflicting OPEN.
pub(crate) fn holder_attrs(
    st: &State4,
    file: FileKey,
    requesting_client: Option<u64>,
    answer: Option<HolderAnswer>,
) -> Result<HolderSays, nfsstat4> {
    let mut t = st.lock_tables();
    match answer {
        Some(HolderAnswer::Attrs { size, change }) => return Ok(HolderSays::Attrs { size, change }),
        Some(HolderAnswer::CannotTell) => return Ok(HolderSays::ServerAttrs),
        Some(HolderAnswer::NoAnswer) => {
            return recall_conflicting(st, &mut t, file, requesting_client, true).map(|()| HolderSays::ServerAttrs)
        }
        None => {}
    }
    let holder = t.stateids.on_file(file).iter().filter(|(_, e)| Some(e.client) != requesting_client).find_map(
        |(_, e)| match &e.kind {
            Kind::Deleg(d) if d.write && !d.revoked && d.recalled.is_none() => Some((e.client, d.fh.clone())),
            _ => None,
        },
    );
    let Some((client, fh)) = holder else { return Ok(HolderSays::ServerAttrs) };
    let wait = t.callbacks.new_wait();
    if !callback::getattr(st, &mut t, client, &fh, wait) {
        t.callbacks.forget_wait(wait);
        return recall_conflicting(st, &mut t, file, requesting_client, true).map(|()| HolderSays::ServerAttrs);
    }
    Ok(HolderSays::Wait(wait))
}

/// Marks a delegation revoked: it no longer conflicts, and its stateid
/// stays (DELEG_REVOKED) until the client frees it.
/// The holder learns of it through SEQUENCE's status flags.
pub(super) fn revoke(t: &mut Tables, other: &Other) {
    let holder = t.stateids.get_mut(other).and_then(|mut e| match &mut e.kind {
        Kind::Deleg(d) => {
            d.revoked = true;
            Some(e.client)
        }
        _ => None,
    });
    if let Some(holder) = holder {
        t.clients.set_status_flags(holder, SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
    }
}

/// Revokes every delegation on `file` (the shared store wants it back and
/// its holders did not return it in time).
pub(super) fn revoke_all_on(t: &mut Tables, file: FileKey) {
    let found: Vec<Other> =
        t.stateids.on_file(file).iter().filter(|(_, e)| matches!(e.kind, Kind::Deleg(_))).map(|(o, _)| *o).collect();
    for other in found {
        revoke(t, &other);
    }
}

/// The delegation an OPEN asks for, once the policy allows one of its
/// kind: what the file's state, the client's and the store then decide
/// ([`grant`], and `without_tables.rs` for an NFSv4.1 OPEN in the file's
/// shard).
pub(super) struct Ask {
    /// The 4.1 WANT bits (0: none said).
    want: u32,
    /// A write delegation (the OPEN writes).
    pub write: bool,
}

impl Ask {
    /// What an OPEN with `share_access` may get under the server's
    /// policy: `Err` with the reply's "none" when nothing whatever the
    /// file's state (policy `none`, a writer under `read`, the client
    /// wants none or only a read delegation for a writer).
    pub(super) fn new(st: &State4, minor: u32, share_access: u32) -> Result<Ask, open_delegation4> {
        let want = if minor >= 1 { share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK } else { 0 };
        let write = share_access & OPEN4_SHARE_ACCESS_WRITE != 0;
        let ask = Ask { want, write };
        let not_wanted = || ask.none(open_none_delegation4::default(why_no_delegation4::WND4_NOT_WANTED));
        if want == OPEN4_SHARE_ACCESS_WANT_NO_DELEG {
            return Err(not_wanted());
        }
        let policy = st.settings.delegations;
        if policy == DelegationPolicy::None || (write && policy != DelegationPolicy::ReadWrite) {
            return Err(ask.none(open_none_delegation4::WND4_RESOURCE(false)));
        }
        if want == OPEN4_SHARE_ACCESS_WANT_READ_DELEG && write {
            return Err(not_wanted());
        }
        Ok(ask)
    }

    /// No delegation, for reason `why`: a 4.1 client that said what it
    /// wants is told why it got nothing (RFC 8881 18.16.3); everyone else
    /// gets plain NONE.
    pub(super) fn none(&self, why: open_none_delegation4) -> open_delegation4 {
        if self.want == 0 {
            open_delegation4::OPEN_DELEGATE_NONE
        } else {
            open_delegation4::OPEN_DELEGATE_NONE_EXT(why)
        }
    }

    /// Whether the file's `entries` stand in the way of `client`'s
    /// delegation. Read delegations coexist with other clients' read opens
    /// and read delegations (nobody can write while they are held); a
    /// write delegation tolerates no other client's open or delegation.
    /// A client holds one delegation per file.
    pub(super) fn blocked<'a>(&self, client: u64, mut entries: impl Iterator<Item = (&'a Other, &'a Entry)>) -> bool {
        let write = self.write;
        entries.any(|(_, e)| match &e.kind {
            Kind::Open(o) => e.client != client && (write || o.access & OPEN4_SHARE_ACCESS_WRITE != 0),
            Kind::Deleg(d) => e.client == client || (!d.revoked && (write || d.write)),
            Kind::Lock(_) => false,
        })
    }

    /// The stateid entry of the delegation granted.
    pub(super) fn entry(
        &self,
        client: u64,
        file: FileKey,
        fh: &nfs_fh4,
        lease: Arc<Lease>,
        parent: Option<FileKey>,
    ) -> Entry {
        let parent = parent.filter(|_| self.write);
        let d = DelegState {
            write: self.write,
            fh: fh.clone(),
            recalled: None,
            recall_again: false,
            revoked: false,
            parent,
        };
        Entry { seqid: 1, client, file, lease, kind: Kind::Deleg(d) }
    }

    /// The reply for delegation `stateid`, granted.
    pub(super) fn granted(&self, stateid: stateid4) -> open_delegation4 {
        // The client still checks access itself (ACCESS): the ACE grants
        // nothing beyond what the mode bits say.
        let permissions = nfsace4 {
            r#type: ACE4_ACCESS_ALLOWED_ACE_TYPE,
            flag: 0,
            access_mask: 0,
            who: bytes::Bytes::from_static(b"EVERYONE@"),
        };
        if self.write {
            open_delegation4::OPEN_DELEGATE_WRITE(open_write_delegation4 {
                stateid,
                recall: false,
                space_limit: nfs_space_limit4::NFS_LIMIT_SIZE(u64::MAX),
                permissions,
            })
        } else {
            open_delegation4::OPEN_DELEGATE_READ(open_read_delegation4 { stateid, recall: false, permissions })
        }
    }
}

/// Where an OPEN by name found its file: the directory, and whether
/// another client holds a delegation of it (a write delegation would
/// keep the file's size and times from that client's notifications).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Parent {
    pub dir: Option<FileKey>,
    pub dir_delegated: bool,
}

/// The delegation an OPEN of `file` by `client` with `share_access` gets
/// (after the open was recorded): READ or WRITE per the policy, or none
/// when another client has the file open or delegated, or holds a
/// delegation of its directory (`parent`, write delegations only), the
/// client has no back channel, already holds one on the file, asked for
/// none, or `store` (asked last, with whether it is a write delegation: a
/// file system other servers share takes the store's delegation there)
/// says no.
#[allow(clippy::too_many_arguments)]
pub(super) fn grant(
    st: &State4,
    t: &mut Tables,
    minor: u32,
    file: FileKey,
    client: u64,
    fh: &nfs_fh4,
    share_access: u32,
    parent: Parent,
    store: impl FnOnce(bool) -> bool,
) -> open_delegation4 {
    let ask = match Ask::new(st, minor, share_access) {
        Ok(ask) => ask,
        Err(none) => return none,
    };
    if ask.write && parent.dir_delegated {
        return ask.none(open_none_delegation4::WND4_CONTENTION(false));
    }
    if ask.blocked(client, t.stateids.on_file(file).iter()) {
        return ask.none(open_none_delegation4::WND4_CONTENTION(false));
    }
    if !callback::has_backchannel(st, client)
        || t.stateids.delegations_of(client) >= st.settings.max_delegations_per_client
    {
        return ask.none(open_none_delegation4::WND4_RESOURCE(false));
    }
    if !store(ask.write) {
        return ask.none(open_none_delegation4::WND4_CONTENTION(false));
    }
    let lease = t.clients.get(client).map(|c| c.lease.clone()).unwrap_or_default();
    match t.stateids.insert(
        st.boot,
        st.settings.max_stateids_per_client,
        minor,
        ask.entry(client, file, fh, lease, parent.dir),
    ) {
        Ok(other) => ask.granted(stateid4 { seqid: 1, other }),
        Err(_) => ask.none(open_none_delegation4::WND4_RESOURCE(false)),
    }
}

/// DELEGRETURN: the delegation `s` of `client` on `file` goes.
pub(super) fn delegreturn(
    st: &State4,
    t: &mut Tables,
    minor: u32,
    client: Option<u64>,
    s: &stateid4,
    file: FileKey,
) -> Result<(), nfsstat4> {
    let e = t.stateids.find(st.boot, minor, client, s)?;
    if !matches!(e.kind, Kind::Deleg(_)) || e.file != file {
        return Err(nfsstat4::NFS4ERR_BAD_STATEID);
    }
    let holder = e.client;
    drop(e);
    t.clients.renew(holder, st.now())?;
    t.stateids.remove(&s.other);
    Ok(())
}

// Grant, recall, revocation and FREE_STATEID are tested end to end with
// real clients in tests/nfs4_state.rs and crates/cli/tests/nfs4.rs.

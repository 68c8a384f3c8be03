//! Directory delegations (RFC 8881 section 10.9): asking for one
//! (GET_DIR_DELEGATION, section 18.39) when a directory is listed again
//! soon, applying the server's CB_NOTIFYs (section 20.4) to what is
//! cached of it, and giving it back (recall, unmount). The sans-IO cache
//! and the choice of when to ask are client-core's (`v41::dirdeleg`,
//! `v41::dirdelegs`); the file API above answers from it
//! (`crate::dirs`), and learns of each change through [`DirHooks`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client_core::fattr::Fattr;
use client_core::v41::attrs::{self, bitmap};
use client_core::v41::dirdeleg::{Child, Ids, Lookup, Touched};
use client_core::v41::dirdelegs::{AskPolicy, Notified};
use proto::dir_notify::{self, NotifyError};
use proto::nfs4::*;

use super::ops::{gid_by_name, putfh, uid_by_name};
use super::{FlushHook, Nfs41};
use crate::results::ListEntry;
use crate::settings::V41Settings;

/// What a notification changed in a directory (its handle).
pub type NotifyHook = Arc<dyn Fn(&Bytes, &[Touched]) + Send + Sync>;

/// What the file API does when a directory delegation changes what it
/// may trust.
#[derive(Clone)]
pub struct DirHooks {
    /// A notification changed the directory (its handle): the caches
    /// above drop or update what it names.
    pub notified: NotifyHook,
    /// The delegation is being recalled: read the directory once more
    /// (into the ordinary caches, which then age as usual) before it goes.
    pub revalidate: FlushHook,
}

/// Every kind of notification: names added, removed and renamed within
/// the directory, entries' and the directory's attributes, and the
/// cookie verifier (so that a listing knows to start over).
const NOTIFY_ALL: &[u32] = &[
    notify_type4::NOTIFY4_CHANGE_CHILD_ATTRS as u32,
    notify_type4::NOTIFY4_CHANGE_DIR_ATTRS as u32,
    notify_type4::NOTIFY4_REMOVE_ENTRY as u32,
    notify_type4::NOTIFY4_ADD_ENTRY as u32,
    notify_type4::NOTIFY4_RENAME_ENTRY as u32,
    notify_type4::NOTIFY4_CHANGE_COOKIE_VERIFIER as u32,
];

/// Without these the names cannot be trusted: a delegation granted
/// without them is given back at once.
const NOTIFY_NEEDED: &[u32] = &[
    notify_type4::NOTIFY4_CHANGE_CHILD_ATTRS as u32,
    notify_type4::NOTIFY4_REMOVE_ENTRY as u32,
    notify_type4::NOTIFY4_ADD_ENTRY as u32,
    notify_type4::NOTIFY4_RENAME_ENTRY as u32,
];

/// The cookie verifier of a listing answered from a delegated
/// directory's cache; its cookies are places in that listing (after the
/// 1 and 2 NFSv4 leaves to `.` and `..`), not the server's.
pub const CACHED_VERF: [u8; 8] = *b"nfsxdlg\0";
/// The cookie of a cached listing's first entry.
pub const CACHED_FIRST_COOKIE: u64 = 3;

pub(crate) fn ask_policy(s: &V41Settings) -> AskPolicy {
    AskPolicy {
        window: s.dir_delegation_window_secs.saturating_mul(1_000_000_000),
        declined_hold: s.dir_delegation_declined_secs.saturating_mul(1_000_000_000),
        max_held: s.max_dir_delegations,
    }
}

fn ids() -> Ids<'static> {
    Ids { uid: &uid_by_name, gid: &gid_by_name }
}

fn delay(ms: u64) -> nfstime4 {
    nfstime4 { seconds: (ms / 1000) as i64, nseconds: ((ms % 1000) * 1_000_000) as u32 }
}

/// A listing page's entries as the cache keeps them.
pub(crate) fn children(entries: &[ListEntry]) -> impl Iterator<Item = (Bytes, Child)> + '_ {
    entries.iter().filter(|e| &e.name[..] != b"." && &e.name[..] != b"..").map(|e| {
        let child =
            Child { handle: e.name_handle.as_ref().map(|fh| fh.data.clone()), attrs: e.name_attributes.clone() };
        (e.name.clone(), child)
    })
}

impl Nfs41 {
    /// Installs what the file API does on notifications and recalls.
    pub fn set_dir_hooks(&self, hooks: DirHooks) {
        let _ = self.dir_hooks.set(hooks);
    }

    fn dir_delegations_on(&self) -> bool {
        self.want_dir_delegations && !self.dir_delegations_refused.load(Ordering::Relaxed)
    }

    /// `dir` is being listed: at the second listing within the window, a
    /// delegation is asked for first.
    pub(crate) async fn dir_listing(&self, dir: &Bytes) {
        if !self.dir_delegations_on() {
            return;
        }
        let now = self.clock.elapsed().as_nanos() as u64;
        if self.dir_delegs.lock().listed(dir, now) {
            self.get_dir_delegation(dir).await;
        }
    }

    /// GET_DIR_DELEGATION of `dir`, the result recorded.
    async fn get_dir_delegation(&self, dir: &Bytes) {
        let asked = GET_DIR_DELEGATION4args {
            gdda_signal_deleg_avail: false,
            gdda_notification_types: bitmap(NOTIFY_ALL),
            gdda_child_attr_delay: delay(self.dir_notify_delay_ms),
            gdda_dir_attr_delay: delay(self.dir_notify_delay_ms),
            // The handle too, so that a new name needs no LOOKUP.
            gdda_child_attributes: bitmap(&child_attrs()),
            gdda_dir_attributes: bitmap(attrs::STAT),
        };
        let ops = vec![putfh(dir), nfs_argop4::OP_GET_DIR_DELEGATION(asked)];
        let now = || self.clock.elapsed().as_nanos() as u64;
        let ok = match self.compound(ops).await {
            Ok(res) => match res.get(1) {
                Some(nfs_resop4::OP_GET_DIR_DELEGATION(GET_DIR_DELEGATION4res::NFS4_OK(
                    GET_DIR_DELEGATION4res_non_fatal::GDD4_OK(ok),
                ))) => ok.clone(),
                _ => {
                    self.dir_delegs.lock().declined(dir, now());
                    return;
                }
            },
            Err(e) => {
                if let crate::Error::Nfs4 { status: nfsstat4::NFS4ERR_NOTSUPP | nfsstat4::NFS4ERR_OP_ILLEGAL, .. } = e {
                    // Not a server that has them: not asked again.
                    self.dir_delegations_refused.store(true, Ordering::Relaxed);
                }
                tracing::debug!("GET_DIR_DELEGATION: {e}");
                self.dir_delegs.lock().declined(dir, now());
                return;
            }
        };
        let granted = |mask: &[u32], n: &[u32]| n.iter().all(|&b| proto::bitmap4::has(mask, b));
        let usable = granted(&ok.gddr_notification, NOTIFY_NEEDED)
            && granted(&ok.gddr_child_attributes, &[FATTR4_TYPE, FATTR4_SIZE, FATTR4_MODE, FATTR4_TIME_MODIFY]);
        if !usable {
            // Notifications too few to keep names and attributes true.
            tracing::debug!("directory delegation granted without the notifications needed: returned");
            self.dir_delegs.lock().declined(dir, now());
            self.dir_delegreturn(dir, ok.gddr_stateid).await;
            return;
        }
        let dir_attrs = granted(&ok.gddr_notification, &[notify_type4::NOTIFY4_CHANGE_DIR_ATTRS as u32])
            && granted(&ok.gddr_dir_attributes, &[FATTR4_SIZE, FATTR4_TIME_MODIFY, FATTR4_TIME_METADATA]);
        self.dir_delegs.lock().granted(dir, ok.gddr_stateid, dir_attrs);
        self.counters.lock().dir_delegations_granted += 1;
    }

    /// Whether a usable delegation is held on `dir`.
    pub fn has_dir_delegation(&self, dir: &Bytes) -> bool {
        self.dir_delegs.lock().usable(dir).is_some()
    }

    /// Directory delegations held now.
    pub fn dir_delegations_held(&self) -> usize {
        self.dir_delegs.lock().len()
    }

    /// The whole listing of a delegated `dir` from its cache:
    /// (name, handle, attributes) in name order.
    pub(crate) fn cached_listing(&self, dir: &Bytes) -> Option<Vec<(Bytes, Bytes, Fattr)>> {
        let d = self.dir_delegs.lock();
        let l = d.usable(dir)?.cache.listing()?;
        Some(l.into_iter().map(|(n, h, a)| (n.clone(), h.clone(), a.clone())).collect())
    }

    /// Taken before a listing of a delegated `dir` is read from the
    /// server, for [`Nfs41::dir_filled`].
    pub(crate) fn dir_fill_mark(&self, dir: &Bytes) -> Option<u64> {
        self.dir_delegs.lock().usable(dir).map(|d| d.cache.fill_mark())
    }

    /// The whole listing of `dir`, read since `mark`.
    pub(crate) fn dir_filled(&self, dir: &Bytes, mark: u64, entries: &[ListEntry], dir_attrs: Option<Fattr>) {
        if let Some(d) = self.dir_delegs.lock().usable_mut(dir) {
            d.cache.fill(mark, children(entries), dir_attrs);
        }
    }

    /// `name` in a delegated `dir`: Some(Some(handle)) when the cache has
    /// it, Some(None) when the whole listing lacks it, None when the
    /// server must be asked.
    pub(crate) fn cached_lookup(&self, dir: &Bytes, name: &[u8]) -> Option<Option<Bytes>> {
        let d = self.dir_delegs.lock();
        match d.usable(dir)?.cache.lookup(name) {
            Lookup::Found(h, _) => Some(Some(h.clone())),
            Lookup::Absent => Some(None),
            Lookup::Unknown => None,
        }
    }

    /// Whether the server tells this client of changes to `fh`'s
    /// attributes: a child of a delegated directory, or one whose own
    /// attributes are notified.
    pub(crate) fn attrs_notified(&self, fh: &Bytes) -> bool {
        let d = self.dir_delegs.lock();
        d.usable(fh).is_some_and(|d| d.dir_attrs_notified) || d.child_attrs(fh).is_some()
    }

    /// This client changed `dir`: its cache is read again at the next
    /// listing (the notification of the change comes too, but later).
    pub(crate) fn dir_changed_here(&self, dir: &Bytes) {
        self.dir_delegs.lock().changed(dir);
    }

    /// Whether a delegation on `dir` was asked for and not answered yet.
    pub(crate) fn dir_delegation_pending(&self, dir: &Bytes) -> bool {
        self.dir_delegs.lock().is_asking(dir)
    }

    /// A saved call, counted.
    pub(crate) fn dir_call_saved(&self) {
        self.counters.lock().dir_calls_saved += 1;
    }

    /// CB_NOTIFY. NFS4ERR_BAD_STATEID for a delegation this client does
    /// not hold on that directory (returned already, or never granted:
    /// the stateid names nothing here, RFC 8881 section 20.4.3's list).
    /// Changes that do not decode drop the directory's cache and return
    /// the delegation: NFS4ERR_BADXDR when a value does not decode as its
    /// bit says (the arguments do not decode, RFC 8881 section 15.1.1), and
    /// NFS4ERR_INVAL for a bit that is no directory notification (they
    /// decode, but name nothing this operation takes). Changes that
    /// decode but do not fit the cache drop it alone, NFS4_OK: the cache
    /// was wrong, not the server.
    pub(crate) fn cb_notify(&self, args: &CB_NOTIFY4args) -> nfsstat4 {
        if self.dir_delegs.lock().get_mut(&args.cna_fh).is_none_or(|d| d.stateid.other != args.cna_stateid.other) {
            return nfsstat4::NFS4ERR_BAD_STATEID;
        }
        let dir = &args.cna_fh;
        let changes = match dir_notify::decode(&args.cna_changes) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "CB_NOTIFY with changes that do not decode: dropping the directory's cache");
                if !self.dir_delegs.lock().drop_cache(&args.cna_stateid, dir) {
                    return nfsstat4::NFS4ERR_BAD_STATEID;
                }
                self.dir_touched(dir, &[Touched::All]);
                if let Some(me) = self.arc() {
                    let dir = dir.clone();
                    tokio::spawn(async move { me.return_dir_delegation(&dir, false).await });
                }
                return match e {
                    NotifyError::UnknownType(_) => nfsstat4::NFS4ERR_INVAL,
                    NotifyError::Undecodable(_) | NotifyError::Trailing(_) => nfsstat4::NFS4ERR_BADXDR,
                };
            }
        };
        let outcome = self.dir_delegs.lock().notify(&args.cna_stateid, dir, &changes, ids());
        match outcome {
            Notified::NotHeld => return nfsstat4::NFS4ERR_BAD_STATEID,
            Notified::Applied(touched) => self.dir_touched(dir, &touched),
            Notified::Dropped(why) => {
                tracing::info!(%why, "a notification does not fit the directory's cache: dropped");
                self.dir_touched(dir, &[Touched::All]);
            }
        }
        self.counters.lock().dir_notifications += 1;
        nfsstat4::NFS4_OK
    }

    fn dir_touched(&self, dir: &Bytes, touched: &[Touched]) {
        if let Some(h) = self.dir_hooks.get() {
            (h.notified)(dir, touched);
        }
    }

    /// CB_RECALL of a directory delegation: Some(OK) with its return under
    /// way, None when no directory delegation has that stateid.
    pub(crate) fn recall_dir(&self, stateid: &stateid4) -> Option<nfsstat4> {
        let dir = self.dir_delegs.lock().recall(stateid)?;
        self.counters.lock().recalls += 1;
        if let Some(me) = self.arc() {
            tokio::spawn(async move { me.return_dir_delegation(&dir, true).await });
        }
        Some(nfsstat4::NFS4_OK)
    }

    /// Gives the delegation on `dir` back; after reading the directory
    /// once more when `revalidate` (a recall), so the ordinary caches
    /// keep what it let the client trust, checked.
    pub(crate) async fn return_dir_delegation(&self, dir: &Bytes, revalidate: bool) {
        if revalidate {
            if let Some(h) = self.dir_hooks.get() {
                // Bounded: the server waits for the return.
                let _ = tokio::time::timeout(REVALIDATE_LIMIT, (h.revalidate)(dir.clone())).await;
            }
        }
        let taken = self.dir_delegs.lock().take(dir);
        if let Some(d) = taken {
            self.dir_touched(dir, &[Touched::All]);
            self.dir_delegreturn(dir, d.stateid).await;
        }
    }

    async fn dir_delegreturn(&self, dir: &Bytes, stateid: stateid4) {
        let ops = vec![putfh(dir), nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: stateid })];
        if let Err(e) = self.compound(ops).await {
            tracing::debug!("DELEGRETURN of a directory delegation: {e}");
        }
    }

    /// Every directory delegation back (unmount).
    pub(crate) async fn return_all_dir_delegations(&self) {
        let held = self.dir_delegs.lock().drain();
        for (dir, d) in held {
            self.dir_touched(&dir, &[Touched::All]);
            self.dir_delegreturn(&dir, d.stateid).await;
        }
    }

    /// The server revoked state of this client, or cannot reach it: no
    /// notification may come any more, so nothing cached under a
    /// directory delegation is trusted from now on.
    /// Each goes back to the server, or is freed there if it was revoked
    /// (which lets the server lower SEQ4_STATUS_RECALLABLE_STATE_REVOKED).
    pub(crate) fn dir_delegations_lost(&self) {
        let held = self.dir_delegs.lock().drain();
        if held.is_empty() {
            return;
        }
        tracing::warn!(directories = held.len(), "directory delegations lost: their caches are dropped");
        for (dir, _) in &held {
            self.dir_touched(dir, &[Touched::All]);
        }
        let Some(me) = self.arc() else { return };
        tokio::spawn(async move {
            for (dir, d) in held {
                let ops = vec![
                    putfh(&dir),
                    nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: d.stateid.clone() }),
                ];
                if let Err(crate::Error::Nfs4 { status: nfsstat4::NFS4ERR_DELEG_REVOKED, .. }) = me.compound(ops).await
                {
                    let free = nfs_argop4::OP_FREE_STATEID(FREE_STATEID4args { fsa_stateid: d.stateid });
                    if let Err(e) = me.compound(vec![free]).await {
                        tracing::debug!("FREE_STATEID of a revoked directory delegation: {e}");
                    }
                }
            }
        });
    }
}

/// How long a recall waits for the directory to be read again before the
/// delegation goes back anyway.
const REVALIDATE_LIMIT: Duration = Duration::from_secs(10);

/// What notifications carry of each entry: a stat and the handle.
fn child_attrs() -> Vec<u32> {
    let mut v = vec![FATTR4_FILEHANDLE];
    v.extend_from_slice(attrs::STAT);
    v
}

//! Directory delegations as GET_DIR_DELEGATION, DELEGRETURN and the
//! core's change events use them ([`crate::state::dir_delegs`]). The
//! backend's watches are started and stopped by the caller, outside the
//! tables' lock: these methods say which to stop.

use std::sync::Arc;

use proto::nfs4::*;
use vfs::WatchId;

use crate::state::dir_delegs::{Batch, Before, Change, DirDelegCounts, RecallCause, Seen, Wants};
use crate::state::stateids::{DelegState, Entry, Kind, Other};
use crate::state::{callback, delegations, FileKey, State4, Tables};

/// Why GET_DIR_DELEGATION gives no delegation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decline {
    /// The client holds one on the directory already (GDD4_UNAVAIL,
    /// section 18.39.3).
    AlreadyHeld,
    /// Turned off, no back channel, or a backend that does not report its
    /// changes.
    Unavailable,
    /// A limit reached (`max_dir_delegations`, `_per_client`): a client
    /// that asked is told when one is free.
    Limit,
}

/// A watch no delegation uses any more, for the caller to stop.
pub(crate) type Unwatch = (u32, WatchId);

impl State4 {
    /// Whether `client` could be granted a delegation on `dir` (before the
    /// caller starts watching it).
    pub(crate) fn dir_delegation_allowed(&self, client: u64, dir: FileKey) -> Result<(), Decline> {
        if !self.settings.dir_delegations || !callback::has_backchannel(self, client) {
            return Err(Decline::Unavailable);
        }
        self.dir_delegation_allowed_in(&self.lock_tables(), client, dir)
    }

    /// Grants `client` a delegation on `dir` (handle `fh`, watched by
    /// `watch`), to be told of what `wants` says. On refusal, the watch to
    /// stop if nobody else uses it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn grant_dir_delegation(
        &self,
        minor: u32,
        client: u64,
        dir: FileKey,
        fh: &nfs_fh4,
        watch: WatchId,
        wants: Wants,
    ) -> Result<stateid4, (Decline, Option<Unwatch>)> {
        let mut t = self.lock_tables();
        let unused = |t: &Tables| (!t.dir_delegs.watched((dir.0, watch))).then_some((dir.0, watch));
        if let Err(d) = self.dir_delegation_allowed_in(&t, client, dir) {
            return Err((d, unused(&t)));
        }
        let lease = t.clients.get(client).map(|c| c.lease.clone()).unwrap_or_else(Arc::default);
        let d = DelegState {
            write: false,
            fh: fh.clone(),
            recalled: None,
            recall_again: false,
            revoked: false,
            parent: None,
        };
        let entry = Entry { seqid: 1, client, file: dir, lease, kind: Kind::Deleg(d) };
        match t.stateids.insert(self.boot, self.settings.max_stateids_per_client, minor, entry) {
            Ok(other) => {
                let stateid = stateid4 { seqid: 1, other };
                t.dir_delegs.insert(other, client, stateid.clone(), dir, fh.clone(), watch, wants);
                self.recall_write_delegations_in(&mut t, dir, client);
                Ok(stateid)
            }
            Err(_) => Err((Decline::Unavailable, unused(&t))),
        }
    }

    /// Recalls other clients' write delegations of files in `dir`: their
    /// holders keep the files' size and times, which the delegation of the
    /// directory could not be told of until they are returned (and the
    /// data written back makes its events).
    fn recall_write_delegations_in(&self, t: &mut Tables, dir: FileKey, client: u64) {
        if !self.any_write_delegated() {
            return;
        }
        let files: Vec<FileKey> = t
            .stateids
            .all_matching(|e| {
                e.client != client
                    && matches!(&e.kind, Kind::Deleg(d) if d.write && !d.revoked && d.parent == Some(dir))
            })
            .into_iter()
            .filter_map(|o| t.stateids.get(&o).map(|e| e.file))
            .collect();
        for file in files {
            // The write delegation's recall; nothing waits for it here.
            let _ = delegations::recall_conflicting(self, t, file, Some(client), true);
        }
    }

    fn dir_delegation_allowed_in(&self, t: &Tables, client: u64, dir: FileKey) -> Result<(), Decline> {
        let s = &self.settings;
        if t.dir_delegs.holds(client, dir) {
            return Err(Decline::AlreadyHeld);
        }
        if t.dir_delegs.len() >= s.max_dir_delegations
            || t.dir_delegs.of_client(client) >= s.max_dir_delegations_per_client
        {
            return Err(Decline::Limit);
        }
        Ok(())
    }

    /// `client`, declined for a limit, asked to be told when a delegation
    /// is free (CB_RECALLABLE_OBJ_AVAIL, RFC 8881 section 20.7).
    pub(crate) fn want_dir_delegation(&self, client: u64) {
        let max = self.settings.max_clients;
        self.lock_tables().dir_delegs.want(client, max);
    }

    /// Before a request of `caller` (`None`: not an NFSv4.1 client) makes
    /// `change` to directory `dir`: other clients' delegations that did
    /// not ask to hear of it are recalled, and the request waits
    /// (NFS4ERR_DELAY) until they are returned or revoked (RFC 8881
    /// section 10.9.2); the holder's own change recalls nothing.
    pub(crate) fn before_dir_change(&self, dir: FileKey, change: Change, caller: Option<u64>) -> Result<(), nfsstat4> {
        if !self.any_dir_delegation() {
            return Ok(());
        }
        let now = self.now();
        let mut t = self.lock_tables();
        let mut wait = false;
        let mut unwatch = Vec::new();
        for (other, verdict) in t.dir_delegs.before(dir, change, caller, now) {
            match verdict {
                Before::Proceed => {}
                Before::Wait => wait = true,
                Before::Recall => {
                    recall(self, &mut t, &other, RecallCause::NotAsked, &mut unwatch);
                    // Revoked at once when the recall could not be sent.
                    wait |= t.dir_delegs.get(&other).is_some();
                }
            }
        }
        // The caller has no backend to stop watches with: the next tick
        // does.
        t.dir_delegs.unwatch_later(unwatch);
        if wait {
            Err(nfsstat4::NFS4ERR_DELAY)
        } else {
            Ok(())
        }
    }

    /// Whether a client other than `client` holds a delegation of
    /// directory `dir` (no lock while none is held anywhere).
    pub(crate) fn dir_delegated_to_other(&self, dir: FileKey, client: u64) -> bool {
        self.any_dir_delegation() && self.lock_tables().dir_delegs.held_by_other(dir, client)
    }

    /// DELEGRETURN gave back delegation `other`: if it was a directory's,
    /// its notifications end.
    pub(crate) fn dir_delegation_returned(&self, other: &Other) -> Option<Unwatch> {
        let mut t = self.lock_tables();
        t.dir_delegs.get(other)?;
        t.dir_delegs.remove(other)
    }

    /// What export `export`'s directories saw: queued for their holders,
    /// or recalls. The CB_NOTIFYs now due, and watches to stop.
    pub(crate) fn dir_seen(&self, export: u32, seen: Vec<(Option<WatchId>, Seen)>) -> (Vec<Batch>, Vec<Unwatch>) {
        let now = self.now();
        let queue_max = self.settings.dir_notify_queue;
        let mut t = self.lock_tables();
        let mut unwatch = Vec::new();
        for (watch, s) in &seen {
            let pushed = t.dir_delegs.push(export, *watch, s, now, queue_max);
            for (other, cause) in pushed.recall {
                recall(self, &mut t, &other, cause, &mut unwatch);
            }
            if let (Some(w), Seen::Lost) = (watch, s) {
                // The directory itself is gone: its handle is stale, and
                // DELEGRETURN needs it as the current handle, so its
                // holders cannot give the delegations back. They end here;
                // the recall told the holders.
                for other in t.dir_delegs.on_watch(export, *w) {
                    t.stateids.remove(&other);
                    unwatch.extend(t.dir_delegs.remove(&other));
                }
            }
        }
        let due = t.dir_delegs.due(now);
        (due, unwatch)
    }

    /// What time alone brings: delegations gone from the stateid table
    /// (returned by other paths, revoked, their client gone) forgotten;
    /// those whose CB_NOTIFY went unanswered recalled, those recalled and
    /// not returned within a lease revoked; attribute changes whose delay
    /// passed due.
    pub(crate) fn dir_notify_tick(&self) -> (Vec<Batch>, Vec<Unwatch>) {
        let now = self.now();
        let answer = std::time::Duration::from_secs(self.settings.dir_notify_answer_secs.into());
        let mut t = self.lock_tables();
        let mut unwatch = t.dir_delegs.take_unwatch_later();
        let sweep = t.dir_delegs.sweep_due(now);
        for other in if sweep { t.dir_delegs.others() } else { Vec::new() } {
            let live = t.stateids.get(&other).is_some_and(|e| matches!(&e.kind, Kind::Deleg(d) if !d.revoked));
            if !live {
                unwatch.extend(t.dir_delegs.remove(&other));
            }
        }
        let (unanswered, unreturned) =
            if sweep { t.dir_delegs.overdue(now, answer, self.lease()) } else { (Vec::new(), Vec::new()) };
        for other in unanswered {
            tracing::info!("CB_NOTIFY not answered in {answer:?}: directory delegation recalled");
            recall(self, &mut t, &other, RecallCause::NotAnswered, &mut unwatch);
        }
        for other in unreturned {
            tracing::info!("directory delegation not returned within the lease; revoked");
            delegations::revoke(&mut t, &other);
            unwatch.extend(t.dir_delegs.remove(&other));
        }
        let s = &self.settings;
        for (client, keep) in t.dir_delegs.now_available(s.max_dir_delegations, s.max_dir_delegations_per_client) {
            let mut craa_type_mask = Vec::new();
            proto::bitmap4::add(&mut craa_type_mask, RCA4_TYPE_MASK_DIR_DLG);
            let args = CB_RECALLABLE_OBJ_AVAIL4args { craa_objects_to_keep: keep, craa_type_mask };
            callback::objects_available(self, &mut t, client, args);
        }
        let due = t.dir_delegs.due(now);
        (due, unwatch)
    }

    /// The CB_NOTIFYs due now (after an answer let a delegation's next
    /// one go).
    pub(crate) fn dir_notify_due(&self) -> Vec<Batch> {
        let now = self.now();
        self.lock_tables().dir_delegs.due(now)
    }

    /// How many CB_NOTIFYs, and how many bytes, one CB_COMPOUND to
    /// `client` may carry.
    pub(crate) fn dir_notify_room(&self, client: u64) -> (usize, usize) {
        callback::compound_room(self, client)
    }

    /// Sends `client` the CB_NOTIFYs of `notes` (each a delegation's, with
    /// how many changes it tells; none: nothing to send for it) in one
    /// CB_COMPOUND; a holder that cannot be told loses those delegations.
    pub(crate) fn send_dir_notifies(
        &self,
        client: u64,
        notes: Vec<(Other, Option<(CB_NOTIFY4args, usize)>)>,
    ) -> Vec<Unwatch> {
        let mut t = self.lock_tables();
        let mut args = Vec::new();
        let mut sent = Vec::new();
        for (other, note) in notes {
            match note {
                Some((a, n)) => {
                    args.push(a);
                    sent.push((other, n));
                }
                None => t.dir_delegs.nothing_sent(&other),
            }
        }
        if args.is_empty() {
            return Vec::new();
        }
        if callback::notify(self, &mut t, client, args) {
            tracing::debug!(client = format_args!("{client:#x}"), notifies = sent.len(), "CB_NOTIFY sent");
            for (_, n) in &sent {
                t.dir_delegs.sent(*n);
            }
            return Vec::new();
        }
        tracing::info!(client, "no back channel to tell of a directory's change: delegations revoked");
        let mut unwatch = Vec::new();
        for (other, _) in sent {
            t.dir_delegs.count_recall(RecallCause::BackchannelLost);
            delegations::revoke(&mut t, &other);
            unwatch.extend(t.dir_delegs.remove(&other));
        }
        unwatch
    }

    /// How many directory delegations are held, and what they cost.
    pub fn dir_delegation_counts(&self) -> DirDelegCounts {
        self.lock_tables().dir_delegs.counts.clone()
    }

    /// Whether any directory delegation is held or wanted (the
    /// transport's timer has work only then).
    pub fn any_dir_delegation(&self) -> bool {
        self.dir_delegs_active.load(std::sync::atomic::Ordering::Relaxed) > 0
    }
}

/// Recalls directory delegation `other` for `cause`: CB_RECALL, and
/// nothing more told; revoked at once when the recall cannot be sent.
pub(crate) fn recall(st: &State4, t: &mut Tables, other: &Other, cause: RecallCause, unwatch: &mut Vec<Unwatch>) {
    let Some(d) = t.dir_delegs.get(other) else { return };
    if d.recalled.is_some() {
        return;
    }
    let (client, stateid, fh) = (d.client, d.stateid.clone(), d.fh.clone());
    let now = st.now();
    t.dir_delegs.recalled(other, now, cause);
    t.stateids.update_deleg(other, |x| {
        x.recalled.get_or_insert(now);
    });
    if !callback::recall(st, t, client, &stateid, &fh) {
        tracing::info!(client, "directory delegation recall could not be sent: revoked");
        delegations::revoke(t, other);
        unwatch.extend(t.dir_delegs.remove(other));
    }
}

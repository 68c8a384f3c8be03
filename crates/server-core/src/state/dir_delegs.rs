//! Directory delegations (RFC 8881 sections 10.9 and 18.39) and what
//! their holders wait to be told (CB_NOTIFY, section 20.4).
//!
//! The delegation itself is a read delegation on the directory in the
//! stateid table, so that DELEGRETURN, TEST_STATEID, FREE_STATEID,
//! revocation and the end of the client go as for files, and a REMOVE,
//! RENAME or SETATTR of the directory itself by another client recalls it
//! ([`super::delegations::recall_conflicting`]). This table adds what
//! the holder asked to be told and the changes waiting to go out.
//!
//! Changes come from the backend's events ([`vfs::DirEvents`]), whoever
//! made them. Each delegation keeps its changes of entries in order and
//! the names whose attributes changed (coalesced: the values go out as
//! they are when sent). One CB_NOTIFY per delegation is out at a time, so
//! that the holder applies them in order (section 20.4.3); what comes
//! meanwhile waits for its answer. A change the holder did not ask to be
//! told of, a queue over its bound, an answer that refuses, or no answer
//! recall the delegation instead: a holder is never left with a cache the
//! server knows to be stale.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use vfs::{DirEvent, WatchId};

use super::stateids::Other;
use super::FileKey;

/// The notification bit of `t` in a `notify_type4` mask.
pub(crate) const fn bit(t: notify_type4) -> u32 {
    1 << t as u32
}

/// Every notification this server sends.
pub(crate) const SUPPORTED_NOTIFICATIONS: u32 = bit(notify_type4::NOTIFY4_CHANGE_CHILD_ATTRS)
    | bit(notify_type4::NOTIFY4_CHANGE_DIR_ATTRS)
    | bit(notify_type4::NOTIFY4_REMOVE_ENTRY)
    | bit(notify_type4::NOTIFY4_ADD_ENTRY)
    | bit(notify_type4::NOTIFY4_RENAME_ENTRY)
    | bit(notify_type4::NOTIFY4_CHANGE_COOKIE_VERIFIER);

/// What a holder asked to be told (GET_DIR_DELEGATION's arguments, less
/// what the server cannot send).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Wants {
    /// Bits of `notify_type4` ([`bit`]).
    pub types: u32,
    pub child_attrs: bitmap4,
    pub dir_attrs: bitmap4,
    /// How long attribute changes of entries, and of the directory, may
    /// wait to be sent with others (`gdda_child_attr_delay`,
    /// `gdda_dir_attr_delay`).
    pub child_delay: Duration,
    pub dir_delay: Duration,
}

impl Wants {
    fn has(&self, t: notify_type4) -> bool {
        self.types & bit(t) != 0
    }
}

/// A change of a directory's entries, by name; the attributes are read
/// when it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EntryChange {
    Add(Bytes),
    Remove(Bytes),
    Rename { from: Bytes, to: Bytes },
}

/// What the events of one watched directory say, with renames within it
/// paired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    Entry(EntryChange),
    /// An entry's attributes.
    Child(Bytes),
    /// The directory's own attributes.
    DirAttrs,
    /// The directory went, or its events were lost: nothing describes it.
    Lost,
}

/// Pairs each rename's two halves within one directory (a rename to
/// another directory is a removal here and an addition there), and turns
/// backend events into what holders are told, per watch. An overflow
/// loses every watch's events: it comes out as `None`.
pub(crate) fn seen(events: Vec<DirEvent>) -> Vec<(Option<WatchId>, Seen)> {
    let mut out = Vec::with_capacity(events.len());
    let mut it = events.into_iter().peekable();
    while let Some(e) = it.next() {
        let (w, s) = match e {
            DirEvent::Added { watch, name } => (watch, Seen::Entry(EntryChange::Add(name))),
            DirEvent::Removed { watch, name } => (watch, Seen::Entry(EntryChange::Remove(name))),
            DirEvent::MovedIn { watch, name, .. } => (watch, Seen::Entry(EntryChange::Add(name))),
            DirEvent::MovedOut { watch, name, cookie } => match it.peek() {
                Some(DirEvent::MovedIn { watch: w2, name: to, cookie: c2 }) if *w2 == watch && *c2 == cookie => {
                    let to = to.clone();
                    it.next();
                    (watch, Seen::Entry(EntryChange::Rename { from: name, to }))
                }
                _ => (watch, Seen::Entry(EntryChange::Remove(name))),
            },
            DirEvent::ChildChanged { watch, name } => (watch, Seen::Child(name)),
            DirEvent::DirChanged { watch } => (watch, Seen::DirAttrs),
            DirEvent::Gone { watch } => (watch, Seen::Lost),
            DirEvent::Overflow => {
                out.push((None, Seen::Lost));
                continue;
            }
        };
        out.push((Some(w), s));
    }
    out
}

/// Why a directory delegation was recalled (or, when the holder could
/// not be told, revoked): the metrics' labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecallCause {
    /// A change the holder did not ask to be told of.
    NotAsked,
    /// More changes waited than `dir_notify_queue` allows.
    Overflow,
    /// The directory went, or the backend lost its events.
    Undescribable,
    /// The holder answered a CB_NOTIFY with an error.
    Refused,
    /// The holder did not answer a CB_NOTIFY in `dir_notify_answer_secs`.
    NotAnswered,
    /// The back channel was gone when a change was to be sent (revoked).
    BackchannelLost,
    /// Another client removed, renamed or changed the directory itself
    /// (the file delegations' path).
    Conflict,
}

impl RecallCause {
    pub const ALL: [RecallCause; 7] = [
        RecallCause::NotAsked,
        RecallCause::Overflow,
        RecallCause::Undescribable,
        RecallCause::Refused,
        RecallCause::NotAnswered,
        RecallCause::BackchannelLost,
        RecallCause::Conflict,
    ];

    pub fn label(self) -> &'static str {
        match self {
            RecallCause::NotAsked => "not_asked",
            RecallCause::Overflow => "overflow",
            RecallCause::Undescribable => "undescribable",
            RecallCause::Refused => "refused",
            RecallCause::NotAnswered => "not_answered",
            RecallCause::BackchannelLost => "backchannel_lost",
            RecallCause::Conflict => "conflict",
        }
    }
}

/// One directory delegation's notification state.
#[derive(Debug, Clone)]
pub(crate) struct DirDeleg {
    pub client: u64,
    pub stateid: stateid4,
    pub dir: FileKey,
    pub fh: nfs_fh4,
    pub watch: WatchId,
    pub wants: Wants,
    entries: VecDeque<EntryChange>,
    /// Entries whose attributes changed, each once.
    children: Vec<Bytes>,
    dir_attrs: bool,
    /// When the oldest attribute change waiting came.
    attrs_since: Option<Duration>,
    /// When the CB_NOTIFY out was sent.
    pub in_flight: Option<Duration>,
    /// Recalled: nothing more is sent; revoked a lease after unless
    /// returned.
    pub recalled: Option<Duration>,
    /// Changes the holder itself is making that it did not ask to hear
    /// of (kind bit, name, when): their events must not recall the
    /// delegation (section 10.9.2). Forgotten after [`OWN_CHANGE_TTL`].
    own: Vec<(u32, Bytes, Duration)>,
}

/// How often the tick checks the delegations against the stateid table
/// and for overdue answers and returns.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Changes one CB_NOTIFY carries at most: with names of 255 bytes and a
/// handle and stat in each, about 30 KiB, within the 64 KiB back-channel
/// requests clients take (Linux's and nfsx's).
const MAX_CHANGES_PER_NOTIFY: usize = 64;

/// How long a holder's own change waits for its event: one that failed
/// makes none.
pub(crate) const OWN_CHANGE_TTL: Duration = Duration::from_secs(2);

/// Own changes remembered per delegation; more are not exempted (a
/// recall is safe, only slower).
const MAX_OWN_CHANGES: usize = 64;

/// What a request is about to do to a directory's entries or attributes,
/// as the notification that would tell of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change<'a> {
    Add(&'a [u8]),
    Remove(&'a [u8]),
    Rename(&'a [u8]),
    DirAttrs,
}

impl Change<'_> {
    fn kind(&self) -> notify_type4 {
        match self {
            Change::Add(_) => notify_type4::NOTIFY4_ADD_ENTRY,
            Change::Remove(_) => notify_type4::NOTIFY4_REMOVE_ENTRY,
            Change::Rename(_) => notify_type4::NOTIFY4_RENAME_ENTRY,
            Change::DirAttrs => notify_type4::NOTIFY4_CHANGE_DIR_ATTRS,
        }
    }

    fn name(&self) -> &[u8] {
        match self {
            Change::Add(n) | Change::Remove(n) | Change::Rename(n) => n,
            Change::DirAttrs => b"",
        }
    }
}

/// The kind bit and name an event is matched to a holder's own change by.
fn own_key(s: &Seen) -> Option<(u32, &[u8])> {
    Some(match s {
        Seen::Entry(EntryChange::Add(n)) => (bit(notify_type4::NOTIFY4_ADD_ENTRY), n),
        Seen::Entry(EntryChange::Remove(n)) => (bit(notify_type4::NOTIFY4_REMOVE_ENTRY), n),
        Seen::Entry(EntryChange::Rename { to, .. }) => (bit(notify_type4::NOTIFY4_RENAME_ENTRY), to),
        Seen::DirAttrs => (bit(notify_type4::NOTIFY4_CHANGE_DIR_ATTRS), b""),
        Seen::Child(_) | Seen::Lost => return None,
    })
}

/// What a request's change to a directory means for one delegation on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Before {
    /// Nothing to do: asked for (told when it happens), or the holder's own.
    Proceed,
    /// Another client's change the holder did not ask to hear of: recall
    /// and wait for the return.
    Recall,
    /// Recalled already and not yet returned: wait.
    Wait,
}

/// What one CB_NOTIFY of a delegation says, by name (the attributes are
/// read as it goes out).
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    pub other: Other,
    pub client: u64,
    pub stateid: stateid4,
    pub dir: FileKey,
    pub fh: nfs_fh4,
    pub wants: Wants,
    pub entries: Vec<EntryChange>,
    pub children: Vec<Bytes>,
    /// The directory's attributes go too (asked for, and they changed).
    pub dir_attrs: bool,
}

/// What the holders were told and how often delegations were recalled.
#[derive(Debug, Clone, Default)]
pub struct DirDelegCounts {
    pub held: usize,
    pub granted: u64,
    /// CB_NOTIFY calls, and the changes they carried.
    pub notify_calls: u64,
    pub notify_changes: u64,
    pub recalls: [u64; RecallCause::ALL.len()],
}

#[derive(Debug, Default)]
pub(crate) struct DirDelegs {
    /// How many are held plus the clients waiting for one, read without
    /// the tables' lock: while it is 0 the timer has nothing to do.
    pub active: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    by_other: HashMap<Other, DirDeleg>,
    /// The delegations on each watched directory, by (export, watch).
    by_watch: HashMap<(u32, WatchId), Vec<Other>>,
    /// The delegations on each directory.
    by_dir: HashMap<FileKey, Vec<Other>>,
    /// The delegations with changes waiting: what [`DirDelegs::due`] looks
    /// at, so that a tick or an answered CB_NOTIFY costs what is waiting,
    /// not every delegation held.
    waiting: std::collections::HashSet<Other>,
    /// When the delegations were last checked against the stateid table
    /// ([`DirDelegs::sweep_due`]).
    last_sweep: Option<Duration>,
    /// Watches to stop at the next tick (no backend at hand when they
    /// were left).
    unwatch_later: Vec<(u32, WatchId)>,
    per_client: HashMap<u64, usize>,
    /// Clients declined for a limit that asked to be told when one is
    /// free (`gdda_signal_deleg_avail`): CB_RECALLABLE_OBJ_AVAIL.
    wanting: Vec<u64>,
    pub counts: DirDelegCounts,
}

/// What an event did to the delegations of its directory.
#[derive(Debug, Default)]
pub(crate) struct Pushed {
    /// Delegations to recall, and why.
    pub recall: Vec<(Other, RecallCause)>,
}

impl DirDelegs {
    pub fn len(&self) -> usize {
        self.by_other.len()
    }

    pub fn of_client(&self, client: u64) -> usize {
        self.per_client.get(&client).copied().unwrap_or(0)
    }

    /// Whether a client other than `client` holds a delegation of `dir`.
    pub fn held_by_other(&self, dir: FileKey, client: u64) -> bool {
        self.by_dir
            .get(&dir)
            .is_some_and(|v| v.iter().any(|o| self.by_other.get(o).is_some_and(|d| d.client != client)))
    }

    pub fn holds(&self, client: u64, dir: FileKey) -> bool {
        self.by_other.values().any(|d| d.client == client && d.dir == dir)
    }

    fn publish(&self) {
        self.active.store(self.by_other.len() + self.wanting.len(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Remembers that `client` wants to be told when a delegation is
    /// free again (once, however often it asked).
    pub fn want(&mut self, client: u64, max_clients: usize) {
        if !self.wanting.contains(&client) && self.wanting.len() < max_clients {
            self.wanting.push(client);
            self.publish();
        }
    }

    /// The clients waiting for a delegation that may have one now, with
    /// how many each may hold (`craa_objects_to_keep`): none while the
    /// total is at `max`.
    pub fn now_available(&mut self, max: usize, per_client: usize) -> Vec<(u64, u32)> {
        if self.wanting.is_empty() || self.by_other.len() >= max {
            return Vec::new();
        }
        let room = max - self.by_other.len();
        let mut out = Vec::new();
        self.wanting.retain(|c| {
            let held = self.per_client.get(c).copied().unwrap_or(0);
            if held >= per_client {
                return true;
            }
            out.push((*c, (held + room).min(per_client) as u32));
            false
        });
        self.publish();
        out
    }

    /// The delegations on the directory `watch` of `export` watches.
    pub fn on_watch(&self, export: u32, watch: WatchId) -> Vec<Other> {
        self.by_watch.get(&(export, watch)).cloned().unwrap_or_default()
    }

    pub fn unwatch_later(&mut self, keys: Vec<(u32, WatchId)>) {
        self.unwatch_later.extend(keys);
    }

    pub fn take_unwatch_later(&mut self) -> Vec<(u32, WatchId)> {
        std::mem::take(&mut self.unwatch_later)
    }

    /// Whether some delegation uses watch `key` (export, watch).
    pub fn watched(&self, key: (u32, WatchId)) -> bool {
        self.by_watch.contains_key(&key)
    }

    pub fn get(&self, other: &Other) -> Option<&DirDeleg> {
        self.by_other.get(other)
    }

    pub fn others(&self) -> Vec<Other> {
        self.by_other.keys().copied().collect()
    }

    #[allow(clippy::too_many_arguments)]
    pub fn insert(
        &mut self,
        other: Other,
        client: u64,
        stateid: stateid4,
        dir: FileKey,
        fh: nfs_fh4,
        watch: WatchId,
        wants: Wants,
    ) {
        let d = DirDeleg {
            client,
            stateid,
            dir,
            fh,
            watch,
            wants,
            entries: VecDeque::new(),
            children: Vec::new(),
            dir_attrs: false,
            attrs_since: None,
            in_flight: None,
            recalled: None,
            own: Vec::new(),
        };
        self.by_watch.entry((dir.0, watch)).or_default().push(other);
        self.by_dir.entry(dir).or_default().push(other);
        *self.per_client.entry(client).or_default() += 1;
        self.by_other.insert(other, d);
        self.counts.granted += 1;
        self.counts.held = self.by_other.len();
        self.publish();
    }

    /// Forgets delegation `other`; the watch to stop, when no other
    /// delegation uses it.
    pub fn remove(&mut self, other: &Other) -> Option<(u32, WatchId)> {
        self.waiting.remove(other);
        let d = self.by_other.remove(other)?;
        self.counts.held = self.by_other.len();
        self.publish();
        if let Some(n) = self.per_client.get_mut(&d.client) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&d.client);
            }
        }
        if let Some(v) = self.by_dir.get_mut(&d.dir) {
            v.retain(|o| o != other);
            if v.is_empty() {
                self.by_dir.remove(&d.dir);
            }
        }
        let key = (d.dir.0, d.watch);
        let users = self.by_watch.get_mut(&key)?;
        users.retain(|o| o != other);
        if users.is_empty() {
            self.by_watch.remove(&key);
            return Some(key);
        }
        None
    }

    /// What `change` of directory `dir` by `caller` (`None`: not an
    /// NFSv4.1 client) means for each delegation on it (RFC 8881 section
    /// 10.9.2): a holder's own change it did not ask to hear of is
    /// remembered, so that its event does not recall.
    pub fn before(&mut self, dir: FileKey, change: Change, caller: Option<u64>, now: Duration) -> Vec<(Other, Before)> {
        let Some(others) = self.by_dir.get(&dir) else { return Vec::new() };
        let mut out = Vec::new();
        for other in others.clone() {
            let Some(d) = self.by_other.get_mut(&other) else { continue };
            let mine = caller == Some(d.client);
            let verdict = if d.recalled.is_some() {
                if mine {
                    Before::Proceed
                } else {
                    Before::Wait
                }
            } else if d.wants.has(change.kind()) {
                Before::Proceed
            } else if mine {
                d.own.retain(|(_, _, at)| now.saturating_sub(*at) < OWN_CHANGE_TTL);
                if d.own.len() < MAX_OWN_CHANGES {
                    d.own.push((bit(change.kind()), Bytes::copy_from_slice(change.name()), now));
                }
                Before::Proceed
            } else {
                Before::Recall
            };
            out.push((other, verdict));
        }
        out
    }

    /// Records what was seen in the directory watched by `watch` of
    /// export `export` (`None`: every directory, events were lost) for
    /// each delegation on it, at `now`; at most `queue_max` changes wait
    /// per delegation.
    pub fn push(&mut self, export: u32, watch: Option<WatchId>, s: &Seen, now: Duration, queue_max: usize) -> Pushed {
        let mut pushed = Pushed::default();
        let others: Vec<Other> = match watch {
            Some(w) => self.by_watch.get(&(export, w)).cloned().unwrap_or_default(),
            None => self.by_other.iter().filter(|(_, d)| d.dir.0 == export).map(|(o, _)| *o).collect(),
        };
        for other in others {
            let Some(d) = self.by_other.get_mut(&other) else { continue };
            if d.recalled.is_some() {
                continue;
            }
            let w = &d.wants;
            let verdict = match s {
                Seen::Lost => Err(RecallCause::Undescribable),
                Seen::Entry(e) => {
                    let asked = match e {
                        EntryChange::Add(_) => w.has(notify_type4::NOTIFY4_ADD_ENTRY),
                        EntryChange::Remove(_) => w.has(notify_type4::NOTIFY4_REMOVE_ENTRY),
                        EntryChange::Rename { .. } => w.has(notify_type4::NOTIFY4_RENAME_ENTRY),
                    };
                    if asked {
                        d.entries.push_back(e.clone());
                        self.waiting.insert(other);
                        Ok(())
                    } else {
                        Err(RecallCause::NotAsked)
                    }
                }
                // Attribute changes of entries never recall (section
                // 18.39.4): told if asked, else nothing.
                Seen::Child(name) => {
                    if w.has(notify_type4::NOTIFY4_CHANGE_CHILD_ATTRS) && !w.child_attrs.is_empty() {
                        if !d.children.contains(name) {
                            d.children.push(name.clone());
                        }
                        d.attrs_since.get_or_insert(now);
                        self.waiting.insert(other);
                    }
                    Ok(())
                }
                Seen::DirAttrs => {
                    if w.has(notify_type4::NOTIFY4_CHANGE_DIR_ATTRS) {
                        d.dir_attrs = true;
                        d.attrs_since.get_or_insert(now);
                        self.waiting.insert(other);
                        Ok(())
                    } else {
                        Err(RecallCause::NotAsked)
                    }
                }
            };
            let verdict = verdict.and_then(|()| {
                if d.entries.len() + d.children.len() > queue_max {
                    Err(RecallCause::Overflow)
                } else {
                    Ok(())
                }
            });
            // The holder's own change, announced by the request making it.
            let verdict = match (verdict, own_key(s)) {
                (Err(RecallCause::NotAsked), Some((kind, name))) => {
                    match d.own.iter().position(|(k, n, _)| *k == kind && n[..] == *name) {
                        Some(i) => {
                            d.own.remove(i);
                            Ok(())
                        }
                        None => verdict,
                    }
                }
                _ => verdict,
            };
            if let Err(cause) = verdict {
                pushed.recall.push((other, cause));
            }
        }
        pushed
    }

    /// Marks `other` recalled at `now` for `cause` (counted once): what
    /// waited is dropped, nothing more is sent.
    pub fn recalled(&mut self, other: &Other, now: Duration, cause: RecallCause) {
        let Some(d) = self.by_other.get_mut(other) else { return };
        if d.recalled.is_some() {
            return;
        }
        d.recalled = Some(now);
        self.waiting.remove(other);
        d.entries.clear();
        d.children.clear();
        d.dir_attrs = false;
        d.attrs_since = None;
        self.count_recall(cause);
    }

    pub fn count_recall(&mut self, cause: RecallCause) {
        if let Some(i) = RecallCause::ALL.iter().position(|c| *c == cause) {
            self.counts.recalls[i] += 1;
        }
    }

    /// The CB_NOTIFY of every delegation that has something to send now
    /// and none out: changes of entries at once, attribute changes once
    /// the delay the holder allowed has passed since the first of them
    /// (sooner when they can go with changes of entries).
    pub fn due(&mut self, now: Duration) -> Vec<Batch> {
        let mut out = Vec::new();
        let mut drained = Vec::new();
        for other in &self.waiting {
            let Some(d) = self.by_other.get_mut(other) else {
                drained.push(*other);
                continue;
            };
            if d.in_flight.is_some() || d.recalled.is_some() {
                continue;
            }
            let attrs_due = d.attrs_since.is_some_and(|since| {
                let delay = if d.children.is_empty() {
                    d.wants.dir_delay
                } else if d.dir_attrs {
                    d.wants.child_delay.min(d.wants.dir_delay)
                } else {
                    d.wants.child_delay
                };
                now.saturating_sub(since) >= delay
            });
            if d.entries.is_empty() && !attrs_due {
                continue;
            }
            // Bounded, so that one CB_NOTIFY fits the client's back
            // channel; the rest goes once this one is answered.
            let n = d.entries.len().min(MAX_CHANGES_PER_NOTIFY);
            let entries: Vec<EntryChange> = d.entries.drain(..n).collect();
            // An entry added in this batch goes with its attributes as they
            // are when sent: a change of them since says nothing more.
            let room = MAX_CHANGES_PER_NOTIFY - entries.len();
            let more = d.children.len().saturating_sub(room);
            let mut children: Vec<Bytes> = d.children.drain(..d.children.len() - more).collect();
            children.retain(|c| {
                !entries.iter().any(|e| matches!(e, EntryChange::Add(n) | EntryChange::Rename { to: n, .. } if n == c))
            });
            // Changes of entries change the directory's attributes too.
            let dir_attrs = (d.dir_attrs || !entries.is_empty()) && d.wants.has(notify_type4::NOTIFY4_CHANGE_DIR_ATTRS);
            let b = Batch {
                other: *other,
                client: d.client,
                stateid: d.stateid.clone(),
                dir: d.dir,
                fh: d.fh.clone(),
                wants: d.wants.clone(),
                entries,
                children,
                dir_attrs,
            };
            d.dir_attrs = false;
            if d.children.is_empty() {
                d.attrs_since = None;
            }
            d.in_flight = Some(now);
            if d.entries.is_empty() && d.children.is_empty() {
                drained.push(*other);
            }
            out.push(b);
        }
        for other in drained {
            self.waiting.remove(&other);
        }
        out
    }

    /// Whether a second has passed since the delegations were last
    /// checked against the stateid table (and notes that they are now):
    /// one gone by another path (its client expired) waits that long at
    /// most to be forgotten, and the tick does not lock every one's shard
    /// each time.
    pub fn sweep_due(&mut self, now: Duration) -> bool {
        if self.last_sweep.is_some_and(|at| now.saturating_sub(at) < SWEEP_EVERY) {
            return false;
        }
        self.last_sweep = Some(now);
        true
    }

    /// A batch came to nothing worth sending (every name vanished): the
    /// next may go.
    pub fn nothing_sent(&mut self, other: &Other) {
        if let Some(d) = self.by_other.get_mut(other) {
            d.in_flight = None;
        }
    }

    /// The CB_NOTIFY of `other` was sent with `changes` changes.
    pub fn sent(&mut self, changes: usize) {
        self.counts.notify_calls += 1;
        self.counts.notify_changes += changes as u64;
    }

    /// The holder answered the CB_NOTIFY out (`ok`: NFS4_OK); false when
    /// it refused it, and the delegation is to be recalled.
    pub fn answered(&mut self, other: &Other, ok: bool) -> bool {
        match self.by_other.get_mut(other) {
            Some(d) => {
                d.in_flight = None;
                ok
            }
            None => true,
        }
    }

    /// Delegations whose CB_NOTIFY has been out longer than `answer`
    /// (to recall), and those recalled longer than `lease` ago (to
    /// revoke).
    pub fn overdue(&self, now: Duration, answer: Duration, lease: Duration) -> (Vec<Other>, Vec<Other>) {
        let mut unanswered = Vec::new();
        let mut unreturned = Vec::new();
        for (other, d) in &self.by_other {
            match (d.recalled, d.in_flight) {
                (Some(at), _) if now.saturating_sub(at) >= lease => unreturned.push(*other),
                (None, Some(at)) if now.saturating_sub(at) >= answer => unanswered.push(*other),
                _ => {}
            }
        }
        (unanswered, unreturned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    const W: WatchId = WatchId(1);

    fn all() -> Wants {
        Wants {
            types: SUPPORTED_NOTIFICATIONS,
            child_attrs: proto::bitmap4::of(&[FATTR4_SIZE]),
            dir_attrs: proto::bitmap4::of(&[FATTR4_CHANGE]),
            child_delay: Duration::from_secs(1),
            dir_delay: Duration::ZERO,
        }
    }

    fn table(wants: Wants) -> (DirDelegs, Other) {
        let mut t = DirDelegs::default();
        let other = [7; 12];
        t.insert(other, 1, stateid4 { seqid: 1, other }, (1, 2, 3), Bytes::new(), W, wants);
        (t, other)
    }

    #[test]
    fn renames_within_a_directory_pair_and_others_split() {
        let ev = vec![
            DirEvent::MovedOut { watch: W, name: b("a"), cookie: 5 },
            DirEvent::MovedIn { watch: W, name: b("b"), cookie: 5 },
            DirEvent::MovedOut { watch: W, name: b("c"), cookie: 6 },
            DirEvent::MovedIn { watch: WatchId(2), name: b("c"), cookie: 6 },
            DirEvent::Overflow,
        ];
        assert_eq!(
            seen(ev),
            vec![
                (Some(W), Seen::Entry(EntryChange::Rename { from: b("a"), to: b("b") })),
                (Some(W), Seen::Entry(EntryChange::Remove(b("c")))),
                (Some(WatchId(2)), Seen::Entry(EntryChange::Add(b("c")))),
                (None, Seen::Lost),
            ]
        );
    }

    #[test]
    fn entries_go_at_once_and_attributes_after_their_delay() {
        let (mut t, other) = table(all());
        let t0 = Duration::from_secs(100);
        t.push(1, Some(W), &Seen::Child(b("f")), t0, 10);
        t.push(1, Some(W), &Seen::Child(b("f")), t0, 10);
        assert!(t.due(t0 + Duration::from_millis(500)).is_empty(), "the child delay is 1 s");
        let batch = t.due(t0 + Duration::from_secs(1));
        assert_eq!(batch.len(), 1);
        assert_eq!(batch[0].children, vec![b("f")], "coalesced");
        assert!(!batch[0].dir_attrs);
        // One out at a time: the next waits for the answer.
        t.push(1, Some(W), &Seen::Entry(EntryChange::Add(b("g"))), t0, 10);
        assert!(t.due(t0 + Duration::from_secs(2)).is_empty());
        assert!(t.answered(&other, true));
        let batch = t.due(t0 + Duration::from_secs(2));
        assert_eq!(batch[0].entries, vec![EntryChange::Add(b("g"))]);
        assert!(batch[0].dir_attrs, "an entry change moves the directory's attributes");
    }

    #[test]
    fn what_was_not_asked_for_or_overflows_recalls() {
        let (mut t, other) = table(Wants { types: bit(notify_type4::NOTIFY4_ADD_ENTRY), ..all() });
        let now = Duration::from_secs(1);
        assert!(t.push(1, Some(W), &Seen::Entry(EntryChange::Add(b("a"))), now, 2).recall.is_empty());
        // Child attributes not asked for: nothing, never a recall.
        assert!(t.push(1, Some(W), &Seen::Child(b("a")), now, 2).recall.is_empty());
        let p = t.push(1, Some(W), &Seen::Entry(EntryChange::Remove(b("a"))), now, 2);
        assert_eq!(p.recall, vec![(other, RecallCause::NotAsked)]);
        t.push(1, Some(W), &Seen::Entry(EntryChange::Add(b("b"))), now, 2);
        let p = t.push(1, Some(W), &Seen::Entry(EntryChange::Add(b("c"))), now, 2);
        assert_eq!(p.recall, vec![(other, RecallCause::Overflow)]);
        let p = t.push(1, None, &Seen::Lost, now, 2);
        assert_eq!(p.recall, vec![(other, RecallCause::Undescribable)]);
        t.recalled(&other, now, RecallCause::Overflow);
        assert!(t.due(now).is_empty(), "nothing goes after a recall");
        assert!(t.push(1, Some(W), &Seen::Entry(EntryChange::Add(b("d"))), now, 2).recall.is_empty());
        assert_eq!(t.counts.recalls.iter().sum::<u64>(), 1);
        let (_, unreturned) =
            t.overdue(now + Duration::from_secs(90), Duration::from_secs(15), Duration::from_secs(90));
        assert_eq!(unreturned, vec![other]);
        assert_eq!(t.remove(&other), Some((1, W)), "the last user stops the watch");
        assert_eq!(t.len(), 0);
    }
}

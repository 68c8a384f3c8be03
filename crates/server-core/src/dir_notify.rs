//! Telling the holders of directory delegations what changed (CB_NOTIFY,
//! RFC 8881 section 20.4), from the backends' change events.
//!
//! The transport polls each export's [`vfs::DirEvents`] descriptor and
//! calls [`Core::dir_events_ready`] when it is readable, and
//! [`Core::dir_notify_tick`] every `dir_notify_tick_ms` while delegations
//! are held. The state queues what each holder asked to hear of
//! (`state::dir_delegs`); what is due is read from the backend here (the
//! attributes of entries added or changed, and of the directory), outside
//! the state's locks, then sent.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::dir_notify::DirChange;
use proto::nfs4::*;

use crate::ops::v4::attrs::notify;
use crate::state::dir_delegs::{self, Batch, EntryChange};
use crate::state::Unwatch;
use crate::{Core, Export};

/// Events read from a backend at once: a burst beyond it is read at the
/// next readiness.
const EVENTS_PER_READ: usize = 4096;

/// Bytes of a CB_COMPOUND that are not CB_NOTIFYs: the RPC header and
/// credential, CB_SEQUENCE and its referring calls.
const COMPOUND_HEADROOM: usize = 1024;

impl Core {
    /// The exports whose backend reports directory changes, for the
    /// transport to poll ([`vfs::DirEvents::ready_fd`]).
    pub fn dir_event_sources(&self) -> Vec<(u32, Arc<dyn vfs::Vfs>)> {
        self.exports.iter().filter(|e| e.fs.dir_events().is_some()).map(|e| (e.id, e.fs.clone())).collect()
    }

    /// How often [`Core::dir_notify_tick`] is due while
    /// [`Core::any_dir_delegation`].
    pub fn dir_notify_tick_interval(&self) -> Duration {
        Duration::from_millis(self.v4.settings.dir_notify_tick_ms.into())
    }

    pub fn any_dir_delegation(&self) -> bool {
        self.v4.any_dir_delegation()
    }

    /// Export `export_id`'s backend has events waiting: they are read and
    /// told to the holders of the directories' delegations. True when
    /// more may wait (call again before polling).
    pub fn dir_events_ready(&self, export_id: u32) -> bool {
        let Some(export) = self.export_by_id(export_id) else { return false };
        let Some(events) = export.fs.dir_events() else { return false };
        let got = events.take(EVENTS_PER_READ);
        let more = got.len() >= EVENTS_PER_READ;
        if got.is_empty() || !self.v4.any_dir_delegation() {
            return more;
        }
        let (due, unwatch) = self.v4.dir_seen(export_id, dir_delegs::seen(got));
        self.stop_watches(unwatch);
        self.send_batches(due);
        more
    }

    /// Directory delegations held, CB_NOTIFYs sent and recalls by cause.
    pub fn dir_delegation_counts(&self) -> crate::state::dir_delegs::DirDelegCounts {
        self.v4.dir_delegation_counts()
    }

    /// What time alone makes due (attribute changes past their delay,
    /// CB_NOTIFYs unanswered, recalls unreturned).
    pub fn dir_notify_tick(&self) {
        if !self.v4.any_dir_delegation() {
            return;
        }
        let (due, unwatch) = self.v4.dir_notify_tick();
        self.stop_watches(unwatch);
        self.send_batches(due);
    }

    /// Sends what became due without time passing (an answered CB_NOTIFY
    /// lets its delegation's next one go).
    pub(crate) fn dir_notify_flush(&self) {
        if self.v4.any_dir_delegation() {
            self.send_batches(self.v4.dir_notify_due());
        }
    }

    /// Stops watching directories no delegation holds any more.
    pub(crate) fn stop_watches(&self, unwatch: Vec<Unwatch>) {
        for (export_id, watch) in unwatch {
            if let Some(events) = self.export_by_id(export_id).and_then(|e| e.fs.dir_events()) {
                events.unwatch(watch);
            }
        }
    }

    /// Sends the CB_NOTIFYs of `due`, those of one client packed into as
    /// few CB_COMPOUNDs as its back channel takes: a burst of changes in
    /// many directories (a tree being made) costs a round trip per
    /// compound, not per directory.
    fn send_batches(&self, due: Vec<Batch>) {
        let mut by_client: Vec<(u64, Vec<Batch>)> = Vec::new();
        for b in due {
            match by_client.iter_mut().find(|(c, _)| *c == b.client) {
                Some((_, v)) => v.push(b),
                None => by_client.push((b.client, vec![b])),
            }
        }
        for (client, batches) in by_client {
            let (max_ops, max_bytes) = self.v4.dir_notify_room(client);
            // Room for the RPC and CB_SEQUENCE headers.
            let budget = max_bytes.saturating_sub(COMPOUND_HEADROOM);
            let mut notes = Vec::new();
            let mut bytes = 0;
            for b in batches {
                let changes = match self.export_by_id(b.dir.0) {
                    Some(export) => changes_of(self, export, &b),
                    None => Vec::new(),
                };
                let note = (!changes.is_empty()).then(|| {
                    let n = changes.len();
                    let args = CB_NOTIFY4args {
                        cna_stateid: b.stateid.clone(),
                        cna_fh: b.fh.clone(),
                        cna_changes: proto::dir_notify::encode(&changes),
                    };
                    (args, n)
                });
                let size = note.as_ref().map_or(0, |(a, _)| xdr::to_bytes(a).len());
                if !notes.is_empty() && (notes.len() >= max_ops || bytes + size > budget) {
                    let unwatch = self.v4.send_dir_notifies(client, std::mem::take(&mut notes));
                    self.stop_watches(unwatch);
                    bytes = 0;
                }
                bytes += size;
                notes.push((b.other, note));
            }
            let unwatch = self.v4.send_dir_notifies(client, notes);
            self.stop_watches(unwatch);
        }
    }
}

/// An entry as CB_NOTIFY names it, with the attributes asked of it when
/// it is still there (none when it already went again: a removal
/// follows).
fn entry(core: &Core, export: &Export, dir: vfs::FileId, name: &Bytes, mask: &[u32]) -> notify_entry4 {
    let ne_attrs = match export.fs.lookup(dir, name) {
        Ok((id, a)) if !mask.is_empty() => notify::encode(core, export, id, &a, mask),
        _ => fattr4::default(),
    };
    notify_entry4 { ne_file: name.clone(), ne_attrs }
}

fn removed(name: &Bytes) -> notify_remove4 {
    // Cookies are positions in the directory's scan, which this server
    // does not keep per name: 0, and the holder goes by the name.
    notify_remove4 {
        nrm_old_entry: notify_entry4 { ne_file: name.clone(), ne_attrs: fattr4::default() },
        nrm_old_entry_cookie: 0,
    }
}

fn added(core: &Core, export: &Export, b: &Batch, name: &Bytes) -> notify_add4 {
    notify_add4 {
        nad_old_entry: Vec::new(),
        nad_new_entry: entry(core, export, b.dir.1, name, &b.wants.child_attrs),
        nad_new_entry_cookie: Vec::new(),
        nad_prev_entry: Vec::new(),
        nad_last_entry: false,
    }
}

/// The changes of batch `b` as CB_NOTIFY carries them: entries in order,
/// then the attributes of changed entries, then the directory's.
fn changes_of(core: &Core, export: &Export, b: &Batch) -> Vec<DirChange> {
    let mut out = Vec::with_capacity(b.entries.len() + b.children.len() + 1);
    for e in &b.entries {
        out.push(match e {
            EntryChange::Add(name) => DirChange::Add(added(core, export, b, name)),
            EntryChange::Remove(name) => DirChange::Remove(removed(name)),
            EntryChange::Rename { from, to } => DirChange::Rename(notify_rename4 {
                nrn_old_entry: removed(from),
                nrn_new_entry: added(core, export, b, to),
            }),
        });
    }
    for name in &b.children {
        if let Ok((id, a)) = export.fs.lookup(b.dir.1, name) {
            let ne_attrs = notify::encode(core, export, id, &a, &b.wants.child_attrs);
            out.push(DirChange::ChildAttrs(notify_attr4 {
                na_changed_entry: notify_entry4 { ne_file: name.clone(), ne_attrs },
            }));
        }
    }
    if b.dir_attrs {
        if let Ok(a) = export.fs.getattr(b.dir.1) {
            let ne_attrs = notify::encode(core, export, b.dir.1, &a, &b.wants.dir_attrs);
            out.push(DirChange::DirAttrs(notify_attr4 {
                na_changed_entry: notify_entry4 { ne_file: Bytes::new(), ne_attrs },
            }));
        }
    }
    out
}

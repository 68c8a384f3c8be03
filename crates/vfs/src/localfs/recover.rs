//! Finding again the objects whose ids a crash took from the id journal.
//!
//! The journal is written to the file as the map changes, so a killed
//! server loses none of it, but it is fsync'd only every
//! `journal_sync_every` records; with `sync_id_journal` off (the default)
//! not even a CREATE waits for it, only for the new object's own flush. A
//! machine crash can therefore take the journal's tail, and with it the
//! place of objects whose creation (or rename) was durable and whose
//! handles clients hold.
//!
//! Such a handle names an id the map does not know, or knows at a place it
//! has left. The first time one is met in a run whose journal was not
//! closed cleanly (no clean-stop marker at its end),
//! the export is walked once: every directory is read, beneath the root,
//! following no symlink and crossing no mount, and every entry the map does
//! not know at that place is opened O_PATH, stat'd and added while still
//! held open, so that its inode number cannot pass to a new object between
//! the stat and the record (the rule removals follow, see the module
//! documentation). Requests that meet an unknown id meanwhile wait for the
//! walk; after it, an id still unknown is Stale. A run that started from a
//! cleanly closed journal never walks, and no run walks twice.
//!
//! Cost: one `getdents` pass over the export and an `openat` + `statx` per
//! entry the map does not know, once, and only after a crash.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use rustix::fs::{Mode, OFlags};

use super::ids::Change;
use super::sys;
use super::LocalFs;
use crate::{FileId, FileType, VfsResult};

#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) walks: AtomicU64,
    pub(crate) learnt: AtomicU64,
}

/// Whether this run may still need a walk, and whether it has had one.
pub(crate) struct Recovery {
    /// (walk still possible, walk done). Held for the whole walk, so that
    /// requests meeting unknown ids meanwhile wait for its result.
    state: Mutex<(bool, bool)>,
    pub(crate) counts: Counts,
}

impl Recovery {
    /// `needed`: the journal this run started from was not closed cleanly.
    pub(crate) fn new(needed: bool) -> Recovery {
        Recovery { state: Mutex::new((needed, false)), counts: Counts::default() }
    }
}

/// A directory still to read: its id and an O_PATH fd.
struct Pending {
    id: FileId,
    fd: Arc<OwnedFd>,
    depth: usize,
}

impl LocalFs {
    /// Called when an id resolved to nothing. Walks the export if this run
    /// may need it and has not walked yet; returns whether a walk has run
    /// (now, or earlier in the run), i.e. whether looking again can help.
    pub(super) fn recover(&self) -> bool {
        let mut state = self.recovery.state.lock();
        if state.0 {
            state.0 = false;
            let started = Instant::now();
            let (dirs, learnt) = self.walk();
            state.1 = true;
            self.recovery.counts.walks.fetch_add(1, Relaxed);
            tracing::warn!(
                dirs,
                learnt,
                secs = started.elapsed().as_secs_f64(),
                "walked the export for ids the id journal lost (it was not closed cleanly)"
            );
        }
        state.1
    }

    /// The walk itself: directories read and entries learnt. Depth first,
    /// so the fds held open are those of one path's directories.
    fn walk(&self) -> (u64, u64) {
        let mut stack = vec![Pending { id: self.root_id, fd: self.root_fd.clone(), depth: 0 }];
        let (mut dirs, mut learnt) = (0u64, 0u64);
        while let Some(dir) = stack.pop() {
            dirs += 1;
            match self.learn_dir(&dir, &mut stack) {
                Ok(n) => learnt += n,
                Err(e) => tracing::warn!(dir = dir.id, error = %e, "recovery walk could not read a directory"),
            }
        }
        self.recovery.counts.learnt.fetch_add(learnt, Relaxed);
        self.record(&[], true);
        (dirs, learnt)
    }

    /// Reads one directory: adds the entries the map does not know there,
    /// and queues its subdirectories.
    fn learn_dir(&self, dir: &Pending, stack: &mut Vec<Pending>) -> VfsResult<u64> {
        let listing = sys::open_dir(dir.fd.as_fd())?;
        let mut entries = Vec::new();
        sys::scan_dir(listing.as_fd(), self.settings.readdir_buffer, |e| {
            entries.push(e);
            true
        })?;
        let mut changes = Vec::new();
        // Held until recorded: see the module documentation.
        let mut held = Vec::new();
        for e in entries {
            let known = self.ids.read().has_place(e.ino, dir.id, &e.name);
            let mut ftype = e.ftype;
            if !known {
                let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let Ok(fd) = rustix::fs::openat(dir.fd.as_fd(), e.name.as_slice(), flags, Mode::empty()) else {
                    continue; // gone since the listing
                };
                let stx = sys::statx_fd(fd.as_fd())?;
                ftype = Some(sys::file_type(&stx));
                changes.push(Change::Add {
                    id: stx.stx_ino as FileId,
                    generation: sys::birth_generation(&stx),
                    parent: dir.id,
                    name: Bytes::from(e.name.clone()),
                });
                held.push(fd);
            }
            // Unknown types (some file systems' getdents) are tried as
            // directories; the open says ENOTDIR otherwise.
            if matches!(ftype, Some(FileType::Directory) | None) && dir.depth + 1 < self.settings.max_depth {
                // RESOLVE_NO_XDEV: a mount inside the export is not entered.
                if let Ok(fd) = sys::open_beneath(dir.fd.as_fd(), &e.name, OFlags::PATH | OFlags::DIRECTORY) {
                    let stx = sys::statx_fd(fd.as_fd())?;
                    stack.push(Pending { id: stx.stx_ino as FileId, fd: Arc::new(fd), depth: dir.depth + 1 });
                }
            }
        }
        let n = changes.len() as u64;
        self.record(&changes, false);
        drop(held);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::super::{LocalFs, LocalFsSettings};
    use crate::{CreateHow, Owner, SetAttrs, Vfs, VfsError};

    /// A machine crash that takes the id journal's tail: simulated by
    /// cutting the journal back to what it held before the changes (the
    /// clean-stop marker of the close goes with it). Every object created,
    /// made or renamed meanwhile resolves again, with its generation; an id
    /// that never existed is still Stale; a cleanly closed journal never
    /// walks.
    #[test]
    fn ids_lost_with_the_journal_tail_are_found_by_one_walk() {
        let base = std::env::temp_dir().join(format!("nfsx-vfs-recover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (export, state) = (base.join("export"), base.join("state"));
        std::fs::create_dir_all(&export).unwrap();
        let settings = LocalFsSettings::default();
        let owner = Owner { uid: 0, gid: 0 };
        let how = CreateHow::Guarded(SetAttrs::default());
        let fs = LocalFs::open(&export, &state, settings.clone()).unwrap();
        let root = fs.root();
        let (kept, _) = fs.mkdir(root, b"kept", &SetAttrs::default(), owner).unwrap();
        drop(fs);

        let fs = LocalFs::open(&export, &state, settings.clone()).unwrap();
        let journal = state.join("ids.journal");
        let synced = std::fs::metadata(&journal).unwrap().len();
        let mut made = Vec::new();
        let (sub, a) = fs.mkdir(root, b"sub", &SetAttrs::default(), owner).unwrap();
        made.push((sub, a.generation));
        for i in 0..20 {
            let (id, a) = fs.create(sub, format!("f{i}").as_bytes(), &how, owner).unwrap();
            made.push((id, a.generation));
        }
        let (moved, a) = fs.create(root, b"moved", &how, owner).unwrap();
        made.push((moved, a.generation));
        fs.rename(root, b"moved", kept, b"moved-here").unwrap();
        drop(fs);
        let f = std::fs::OpenOptions::new().write(true).open(&journal).unwrap();
        f.set_len(synced).unwrap();
        rustix::fs::fsync(f.as_fd()).unwrap();
        drop(f);

        let fs = LocalFs::open(&export, &state, settings.clone()).unwrap();
        assert_eq!(fs.getattr(0x7fff_0000_0000), Err(VfsError::Stale), "a forged id stays Stale");
        for &(id, generation) in &made {
            assert_eq!(fs.getattr(id).map(|a| a.generation), Ok(generation), "id {id} found again");
        }
        assert_eq!(fs.recovery.counts.walks.load(std::sync::atomic::Ordering::Relaxed), 1);
        drop(fs);

        // Closed cleanly this time: an unknown id does not walk.
        let fs = LocalFs::open(&export, &state, settings).unwrap();
        assert_eq!(fs.getattr(0x7fff_0000_0000), Err(VfsError::Stale));
        assert_eq!(fs.recovery.counts.walks.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(fs.getattr(moved).map(|a| a.generation), Ok(made.last().unwrap().1));
        drop(fs);
        let _ = std::fs::remove_dir_all(base);
    }

    /// Creations and directories wait for the id journal's flush only
    /// with `sync_id_journal`; the records are written either way.
    #[test]
    fn namespace_changes_flush_the_journal_only_when_asked() {
        for sync_id_journal in [false, true] {
            let base = std::env::temp_dir().join(format!("nfsx-vfs-jflush-{}-{sync_id_journal}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            std::fs::create_dir_all(base.join("export")).unwrap();
            let settings = LocalFsSettings { sync_id_journal, ..LocalFsSettings::default() };
            let fs = LocalFs::open(&base.join("export"), &base.join("state"), settings).unwrap();
            let owner = Owner { uid: 0, gid: 0 };
            let (dir, _) = fs.mkdir(fs.root(), b"d", &SetAttrs::default(), owner).unwrap();
            for i in 0..5 {
                let how = CreateHow::Guarded(SetAttrs::default());
                fs.create(dir, format!("f{i}").as_bytes(), &how, owner).unwrap();
            }
            fs.rename(dir, b"f0", fs.root(), b"g").unwrap();
            fs.remove(dir, b"f1").unwrap();
            let flushes = fs.journal.counts.flushes.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(flushes, if sync_id_journal { 8 } else { 0 }, "sync_id_journal = {sync_id_journal}");
            let written = std::fs::metadata(base.join("state/ids.journal")).unwrap().len();
            assert!(written > 6 * 32, "records are written at once ({written} bytes)");
            drop(fs);
            let _ = std::fs::remove_dir_all(base);
        }
    }
}

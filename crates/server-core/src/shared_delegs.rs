//! Delegations on a file system other servers share ([`vfs::Vfs::shared_store`]).
//!
//! This server cannot see the other servers' opens, so it hands out a
//! delegation there only while it holds one in the store as well
//! ([`vfs::SharedStore::delegate`]): the store then makes the other servers'
//! conflicting requests wait and asks this server to give it back. The
//! server recalls its clients' delegations on the file (CB_RECALL) and
//! gives the store's back once they are returned, or revokes them after
//! [`vfs::SharedStore::delegation_return_deadline`]: the store (libcephfs) cuts a
//! server off that keeps a recalled delegation too long.
//!
//! One background job ([`crate::Jobs`]) does the giving back. The store's recall callback only
//! queues the file (it runs inside the store's client, under its locks);
//! DELEGRETURN queues it too, and the thread gives the store's delegation
//! back once no delegation of this server's clients is left on the file.
//! Lock order: the state tables, then `files`; the store's delegation is
//! taken and given back with the tables locked, so a grant and a release
//! of one file never cross.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use vfs::{FileId, Vfs};

use crate::state::{FileKey, State4};
use crate::Core;

/// How often the thread looks again at files whose store delegation was
/// recalled, for their clients' DELEGRETURNs and the deadline. Returns
/// also wake it, so this only bounds how late a revocation comes.
const RECHECK: Duration = Duration::from_millis(100);

/// How long the thread, with no recall pending, waits before it looks for
/// store delegations no client's delegation stands behind any more (their
/// clients' state went with a lease or a DESTROY_CLIENTID, not through
/// DELEGRETURN), and gives them back.
const SWEEP: Duration = Duration::from_secs(10);

/// Files with a store delegation, by export and id.
type Files = Arc<Mutex<HashMap<(u32, FileId), Held>>>;

/// A store delegation: the file's key in the state tables, whether the
/// store asked for it back, and its file system.
struct Held {
    file: FileKey,
    recalled: bool,
    fs: Weak<dyn Vfs>,
}

/// The store delegations behind this server's delegations.
#[derive(Default)]
pub(crate) struct SharedDelegs {
    files: Files,
    thread: OnceLock<Mutex<mpsc::Sender<Settle>>>,
    /// Exports whose file system was given the recall sink.
    sinks: Mutex<Vec<u32>>,
}

/// A file to look at: the store recalled its delegation, or one of its
/// clients' delegations was returned.
struct Settle {
    fs: Arc<dyn Vfs>,
    export: u32,
    id: FileId,
    recalled: bool,
}

impl Core {
    /// Takes the store's delegation on `file` (of `export`'s file system
    /// `fs`) before a delegation of it is granted; false: grant none.
    /// Called with the state tables locked.
    pub(crate) fn take_shared_delegation(&self, fs: &Arc<dyn Vfs>, file: FileKey, write: bool) -> bool {
        if !self.settings.pnfs_data_servers.is_empty() {
            // The holder's own I/O through a data server (another head)
            // would recall the store's delegation: none is granted.
            return false;
        }
        let Some(store) = fs.shared_store() else { return false };
        let (export, id) = (file.0, file.1);
        let d = &self.shared_delegs;
        let sender = d.thread.get_or_init(|| start(&*self.jobs, self.v4.clone(), d.files.clone()));
        let mut sinks = d.sinks.lock();
        if !sinks.contains(&export) {
            let tx = sender.lock().clone();
            let weak: Weak<dyn Vfs> = Arc::downgrade(fs);
            store.on_delegation_recall(Arc::new(move |id| {
                if let Some(fs) = weak.upgrade() {
                    let _ = tx.send(Settle { fs, export, id, recalled: true });
                }
            }));
            sinks.push(export);
        }
        drop(sinks);
        if d.files.lock().get(&(export, id)).is_some_and(|h| h.recalled) {
            return false;
        }
        match store.delegate(id, write) {
            Ok(true) => {
                d.files.lock().insert((export, id), Held { file, recalled: false, fs: Arc::downgrade(fs) });
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::debug!(file = id, error = %e, "no store delegation");
                false
            }
        }
    }

    /// A delegation on `file` went back (DELEGRETURN): the store's goes
    /// too once none is left.
    pub(crate) fn shared_delegation_returned(&self, fs: &Arc<dyn Vfs>, file: FileKey) {
        let Some(sender) = self.shared_delegs.thread.get() else { return };
        let _ = sender.lock().send(Settle { fs: fs.clone(), export: file.0, id: file.1, recalled: false });
    }
}

/// The job ends with the last sender: the server's, and the sinks its
/// file systems hold. Its times are the core's clock's.
fn start(jobs: &dyn crate::Jobs, st: Arc<State4>, files: Files) -> Mutex<mpsc::Sender<Settle>> {
    let (tx, rx) = mpsc::channel::<Settle>();
    if !jobs.start("nfsx-delegs", Box::new(move || run(&st, &files, &rx))) {
        tracing::error!("cannot start the job that gives store delegations back");
    }
    Mutex::new(tx)
}

/// Recalled files waiting for their clients' returns, with their deadline.
type Pending = HashMap<(u32, FileId), (Arc<dyn Vfs>, Duration)>;

fn run(st: &State4, files: &Files, rx: &mpsc::Receiver<Settle>) {
    let mut pending: Pending = HashMap::new();
    let mut swept = st.now();
    loop {
        let wait = if pending.is_empty() { SWEEP.saturating_sub(st.now().saturating_sub(swept)) } else { RECHECK };
        match rx.recv_timeout(wait) {
            Ok(s) if s.recalled => {
                if let Some(h) = files.lock().get_mut(&(s.export, s.id)) {
                    h.recalled = true;
                }
                let grace = s.fs.shared_store().map_or(Duration::ZERO, |x| x.delegation_return_deadline());
                let deadline = st.now() + grace;
                pending.entry((s.export, s.id)).or_insert((s.fs, deadline));
            }
            Ok(s) => {
                settle(st, files, &s.fs, (s.export, s.id), None);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        pending.retain(|key, (fs, deadline)| !settle(st, files, fs, *key, Some(*deadline)));
        if st.now().saturating_sub(swept) >= SWEEP {
            sweep(st, files);
            swept = st.now();
        }
    }
}

/// Gives the store's delegation on `key` back if none of this server's
/// clients' is left on the file; for a recalled one (`deadline` set),
/// recalls theirs first, and revokes them once the deadline has passed.
/// True when the store's delegation is gone.
fn settle(st: &State4, files: &Files, fs: &Arc<dyn Vfs>, key: (u32, FileId), deadline: Option<Duration>) -> bool {
    let file = || files.lock().get(&key).map(|h| h.file);
    st.settle_store_delegation(deadline, file, |granted| {
        if granted {
            files.lock().remove(&key);
        }
        undelegate(fs, key.1);
    })
}

/// Gives back the store delegations no client's delegation stands behind.
fn sweep(st: &State4, files: &Files) {
    st.with_delegations_held(|held| {
        let orphans: Vec<(u32, FileId)> = files.lock().iter().filter(|(_, h)| !held(h.file)).map(|(k, _)| *k).collect();
        for key in orphans {
            let Some(h) = files.lock().remove(&key) else { continue };
            if let Some(fs) = h.fs.upgrade() {
                undelegate(&fs, key.1);
            }
        }
    });
}

fn undelegate(fs: &Arc<dyn Vfs>, id: FileId) {
    if let Some(store) = fs.shared_store() {
        store.undelegate(id);
    }
}

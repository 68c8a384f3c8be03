//! Share modes for a server over shared file systems that is not a head
//! of a cluster: it learns of another server's first OPEN that denies from
//! the store itself ([`vfs::SharedStore::watch_share_denials`]), and until then
//! holds no share modes there, as heads of a cluster do until their shared
//! record says a client denied (see `shared_shares`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use crate::Core;

/// How often the watch looks for a client's denial to pass on, and at
/// the store's mark (beside the store's own call, which a lapsed session
/// can miss).
const LOOK: Duration = Duration::from_millis(100);

impl Core {
    /// Watches every shared export's store for another server's first
    /// denial; false when there is none to watch or some store cannot say
    /// (every open's modes are then held from the start, as before). Call
    /// before serving, and not for a head of a cluster. The watch runs as a
    /// background job ([`crate::Jobs`]) and ends at `stop`, or once this
    /// server may grant denials itself.
    pub fn watch_share_denials(self: &Arc<Self>, stop: Arc<AtomicBool>) -> bool {
        if shared(self).next().is_none() {
            return false;
        }
        let (tx, rx) = mpsc::channel::<()>();
        let tx = std::sync::Mutex::new(tx);
        let sink: vfs::ShareDenialSink = Arc::new(move || {
            let _ = tx.lock().map(|t| t.send(()));
        });
        for (e, store) in shared(self) {
            match store.watch_share_denials(sink.clone()) {
                Ok(true) => {}
                Ok(false) => {
                    unwatch(self);
                    return false;
                }
                Err(err) => {
                    tracing::warn!(export = %e.path, error = %err, "cannot watch for OPENs that deny on a shared file system: holding share modes in it from the start");
                    unwatch(self);
                    return false;
                }
            }
        }
        self.defer_share_store();
        tracing::info!("no OPEN has denied on the shared file systems: holding no share modes there until one does");
        let core = self.clone();
        let started = self.jobs.start("nfsx-shares", Box::new(move || {
            let mut told = false;
            while !stop.load(Ordering::Acquire) {
                let called = rx.recv_timeout(LOOK).is_ok();
                let marked = !told && shared(&core).any(|(_, s)| s.share_denials_marked().unwrap_or(false));
                if (called || marked) && !told {
                    tracing::info!("another server is granting an OPEN that denies: holding share modes in the shared file systems from now on");
                    core.start_share_store();
                    unwatch(&core);
                    told = true;
                }
                if core.share_store_wanted() {
                    if !told {
                        core.start_share_store();
                        unwatch(&core);
                        told = true;
                    }
                    let marks = shared(&core).map(|(_, s)| s.mark_share_denials());
                    match marks.collect::<vfs::VfsResult<Vec<()>>>() {
                        Ok(_) => {
                            core.allow_share_denials();
                            return;
                        }
                        Err(e) => tracing::warn!(error = %e, "cannot tell the other servers of an OPEN that denies; trying again"),
                    }
                }
            }
            unwatch(&core);
        }));
        if !started {
            // Holding every open's modes, but never told the others:
            // OPENs that deny wait (DELAY) rather than meet their opens
            // outside the store.
            tracing::error!("cannot start the job that watches for OPENs that deny");
            self.start_share_store();
        }
        started
    }
}

fn shared(core: &Core) -> impl Iterator<Item = (&crate::Export, &dyn vfs::SharedStore)> {
    core.exports().iter().filter_map(|e| Some((e, e.fs.shared_store()?)))
}

/// Stops watching every export's store (the gate's client ends with it).
fn unwatch(core: &Core) {
    shared(core).for_each(|(_, s)| s.unwatch_share_denials());
}

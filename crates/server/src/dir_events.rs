//! The transport's side of directory delegations: each export's change
//! events polled ([`server_core::Core::dir_events_ready`] when its
//! descriptor is readable) and the notification timer
//! ([`server_core::Core::dir_notify_tick`] every `dir_notify_tick_ms`
//! while any directory delegation is held). Both read the backend, so
//! they run on the blocking pool.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use tokio::io::unix::AsyncFd;

use crate::Shared;

/// An export's event descriptor, as the reactor polls it.
struct Source(Arc<dyn vfs::Vfs>);

impl AsRawFd for Source {
    fn as_raw_fd(&self) -> RawFd {
        self.0.dir_events().map_or(-1, |e| e.ready_fd().as_raw_fd())
    }
}

/// One task per export whose backend reports directory changes, and the
/// timer.
pub(crate) fn spawn(shared: &Arc<Shared>) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    for (export_id, fs) in shared.core.dir_event_sources() {
        tasks.push(tokio::spawn(watch_export(shared.clone(), export_id, fs)));
    }
    if !tasks.is_empty() {
        tasks.push(tokio::spawn(ticks(shared.clone())));
    }
    tasks
}

async fn watch_export(shared: Arc<Shared>, export_id: u32, fs: Arc<dyn vfs::Vfs>) {
    // The descriptor lives as long as the backend, which `Source` holds
    // for as long as the reactor polls it: what the deprecation warns of
    // (a descriptor closed while registered) cannot happen here.
    #[allow(deprecated)]
    let fd = match AsyncFd::with_interest(Source(fs), tokio::io::Interest::READABLE) {
        Ok(fd) => fd,
        Err(e) => {
            tracing::warn!(export_id, "cannot poll the export's directory events ({e}): no notifications");
            return;
        }
    };
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let mut ready = tokio::select! {
            r = fd.readable() => match r {
                Ok(g) => g,
                Err(e) => {
                    tracing::warn!(export_id, "polling directory events failed: {e}");
                    return;
                }
            },
            _ = shutdown.changed() => return,
        };
        // Edge-triggered: read until the backend has nothing more.
        loop {
            let core = shared.core.clone();
            match tokio::task::spawn_blocking(move || core.dir_events_ready(export_id)).await {
                Ok(true) => continue,
                _ => break,
            }
        }
        ready.clear_ready();
    }
}

async fn ticks(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    let every = shared.core.dir_notify_tick_interval();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        if shared.core.any_dir_delegation() {
            let core = shared.core.clone();
            let _ = tokio::task::spawn_blocking(move || core.dir_notify_tick()).await;
        }
    }
}

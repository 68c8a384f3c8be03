//! Files open through the mount. All opens of one node share one client
//! [`File`], so its write-behind and readahead see every write made
//! through the mount; it is closed (and written back) with the last open.

use std::collections::HashMap;
use std::sync::Arc;

use client::{Fattr, File, Time};
use parking_lot::Mutex;

pub type Shared = Arc<tokio::sync::Mutex<File>>;

struct Open {
    file: Shared,
    opens: u32,
}

#[derive(Default)]
pub struct OpenFiles {
    open: Mutex<HashMap<u64, Open>>,
    /// (mtime, size) of each node when last opened: the kernel may keep
    /// its cached pages at the next open only if neither changed
    /// (close-to-open consistency).
    seen: Mutex<HashMap<u64, (Time, u64)>>,
}

/// Closes a file whose last open ended (it writes back first). A read or
/// write may still hold it: that finishes, then the last reference closes
/// nothing more, everything having been written back here.
pub async fn close_last(file: Shared) -> client::Result<()> {
    match Arc::try_unwrap(file) {
        Ok(f) => f.into_inner().close().await,
        Err(shared) => shared.lock().await.flush().await,
    }
}

impl OpenFiles {
    /// One more open of node `ino`, making its file with `make` if it is
    /// not open yet.
    pub fn open(&self, ino: u64, make: impl FnOnce() -> File) -> Shared {
        let mut open = self.open.lock();
        let o = open.entry(ino).or_insert_with(|| Open { file: Arc::new(tokio::sync::Mutex::new(make())), opens: 0 });
        o.opens += 1;
        o.file.clone()
    }

    pub fn get(&self, ino: u64) -> Option<Shared> {
        self.open.lock().get(&ino).map(|o| o.file.clone())
    }

    /// One open of `ino` ended; the file when it was the last.
    pub fn release(&self, ino: u64) -> Option<Shared> {
        let mut open = self.open.lock();
        let o = open.get_mut(&ino)?;
        o.opens = o.opens.saturating_sub(1);
        if o.opens > 0 {
            return None;
        }
        open.remove(&ino).map(|o| o.file)
    }

    /// Whether the kernel's cached pages of `ino` are still good given the
    /// attributes fetched at this open; remembers them for the next.
    pub fn unchanged_since_last_open(&self, ino: u64, a: &Fattr) -> bool {
        let now = (a.mtime, a.size);
        self.seen.lock().insert(ino, now) == Some(now)
    }

    /// The node is gone from the kernel: nothing more to remember of it.
    pub fn forget(&self, ino: u64) {
        self.seen.lock().remove(&ino);
    }
}

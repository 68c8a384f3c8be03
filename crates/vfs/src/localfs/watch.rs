//! [`DirEvents`] of a LocalFs: inotify. Every change to a watched
//! directory's entries and to their attributes is reported, whether the
//! server made it or a program on the host did, which is what directory
//! delegations need: the holders are told of both.

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use bytes::Bytes;
use parking_lot::Mutex;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use super::{sys, LocalFs};
use crate::{DirEvent, DirEvents, FileId, VfsError, VfsResult, WatchId};

/// Bytes read from the inotify descriptor at once (an event is 16 bytes
/// plus its name).
const READ_BUFFER: usize = 16 * 1024;

/// The export's inotify instance; reads are serialised so that events
/// come out in the order the kernel queued them.
pub(crate) struct Watcher {
    fd: OwnedFd,
    reading: Mutex<()>,
}

impl Watcher {
    /// None where inotify is unavailable (out of instances): the export
    /// then offers no [`DirEvents`].
    pub(crate) fn new() -> Option<Watcher> {
        match inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK) {
            Ok(fd) => Some(Watcher { fd, reading: Mutex::new(()) }),
            Err(e) => {
                tracing::warn!("no inotify instance ({e}): no directory delegations on this export");
                None
            }
        }
    }
}

/// What a watched directory reports: its entries coming and going, their
/// attributes and data, its own attributes, and its end. IN_EXCL_UNLINK:
/// a file unlinked but still open does not keep reporting writes.
fn watch_flags() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::ATTRIB
        | WatchFlags::MODIFY
        | WatchFlags::DELETE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::EXCL_UNLINK
}

fn event_of(wd: i32, flags: ReadFlags, cookie: u32, name: Option<&[u8]>) -> Option<DirEvent> {
    let watch = WatchId(wd);
    if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
        return Some(DirEvent::Overflow);
    }
    if flags.intersects(ReadFlags::IGNORED | ReadFlags::DELETE_SELF | ReadFlags::UNMOUNT) {
        return Some(DirEvent::Gone { watch });
    }
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        // The directory itself.
        return flags.intersects(ReadFlags::ATTRIB | ReadFlags::MODIFY).then_some(DirEvent::DirChanged { watch });
    };
    let name = Bytes::copy_from_slice(name);
    Some(if flags.contains(ReadFlags::CREATE) {
        DirEvent::Added { watch, name }
    } else if flags.contains(ReadFlags::DELETE) {
        DirEvent::Removed { watch, name }
    } else if flags.contains(ReadFlags::MOVED_FROM) {
        DirEvent::MovedOut { watch, name, cookie }
    } else if flags.contains(ReadFlags::MOVED_TO) {
        DirEvent::MovedIn { watch, name, cookie }
    } else if flags.intersects(ReadFlags::ATTRIB | ReadFlags::MODIFY) {
        DirEvent::ChildChanged { watch, name }
    } else {
        return None;
    })
}

impl DirEvents for LocalFs {
    fn watch(&self, dir: FileId) -> VfsResult<WatchId> {
        let w = self.watcher.as_ref().ok_or(VfsError::NotSupported)?;
        let d = self.resolve_dir(dir)?;
        // The O_PATH fd's magic link: the directory itself, whatever its
        // path is now.
        let path = format!("/proc/self/fd/{}", d.fd.as_raw_fd());
        inotify::add_watch(&w.fd, path.as_str(), watch_flags()).map(WatchId).map_err(|e| match e {
            // max_user_watches reached.
            Errno::NOSPC => VfsError::NoSpace,
            e => sys::errno(e),
        })
    }

    fn unwatch(&self, watch: WatchId) {
        if let Some(w) = &self.watcher {
            // EINVAL: already gone with its directory.
            let _ = inotify::remove_watch(&w.fd, watch.0);
        }
    }

    fn ready_fd(&self) -> BorrowedFd<'_> {
        match &self.watcher {
            Some(w) => w.fd.as_fd(),
            // Never readable for this purpose: no events without a watcher.
            None => self.root_fd.as_fd(),
        }
    }

    fn take(&self, max: usize) -> Vec<DirEvent> {
        let mut out = Vec::new();
        let Some(w) = &self.watcher else { return out };
        let _reading = w.reading.lock();
        let mut buf = [MaybeUninit::<u8>::uninit(); READ_BUFFER];
        let mut r = inotify::Reader::new(&w.fd, &mut buf);
        loop {
            match r.next() {
                Ok(ev) => {
                    let name = ev.file_name().map(|n| n.to_bytes());
                    if let Some(e) = event_of(ev.wd(), ev.events(), ev.cookie(), name) {
                        out.push(e);
                    }
                }
                Err(Errno::AGAIN) | Err(Errno::INTR) => break,
                Err(e) => {
                    tracing::warn!("reading inotify events: {e}");
                    out.push(DirEvent::Overflow);
                    break;
                }
            }
            // What one read brought in is used up before stopping: events
            // left in the buffer would be lost.
            if out.len() >= max && r.is_buffer_empty() {
                break;
            }
        }
        out
    }
}

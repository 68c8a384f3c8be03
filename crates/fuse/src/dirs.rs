//! Directory listings through the mount: READDIRPLUS pages, the cookie
//! verifier each listing must send back, and where a listing ended.
//!
//! A listing is known by its open-directory handle, or, when the kernel
//! sends no OPENDIR (`FUSE_NO_OPENDIR_SUPPORT`, the default), by the
//! directory's node id. The kernel asks for one more page after the last
//! entry to learn that the listing ended; the page that had the server's
//! EOF already said so, so that ask is answered here without a call: one
//! READDIRPLUS per small directory instead of two.
//!
//! NFSv4 READDIR returns no `.` and `..` (RFC 8881 section 18.23), and
//! keeps the cookies 1 and 2 for them; programs expect both, so the mount
//! puts them at those cookies itself, as the Linux client does, and asks
//! the server from cookie 0 once they are listed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use client::{Client, DirPage, Fattr, ListEntry};
use parking_lot::Mutex;
use proto::nfs3::{cookieverf3, ftype3, nfs_fh3};

/// The cookies of `.` and `..` in an NFSv4 listing; the server's own
/// cookies start above them.
const DOT_COOKIE: u64 = 1;
const DOTDOT_COOKIE: u64 = 2;

/// Keys of listings without an open handle are node ids with this bit
/// set, so they never meet the handles `open` gives out.
const NODE_KEY: u64 = 1 << 63;

#[derive(Debug, Clone, Copy, Default)]
struct Listing {
    verf: cookieverf3,
    /// The cookie after which the server said there is nothing more.
    end: Option<u64>,
}

#[derive(Default)]
pub struct Listings {
    map: Mutex<HashMap<u64, Listing>>,
    next: AtomicU64,
}

impl Listings {
    /// A handle for an OPENDIR (never 0: 0 is "no handle").
    pub fn open(&self) -> u64 {
        let id = (self.next.fetch_add(1, Ordering::Relaxed) + 1) & !NODE_KEY;
        self.map.lock().insert(id, Listing::default());
        id
    }

    /// RELEASEDIR: the listing of that handle is over.
    pub fn close(&self, fh: u64) {
        self.map.lock().remove(&fh);
    }

    /// The kernel forgot the directory: so does its handle-less listing.
    pub fn forget_node(&self, ino: u64) {
        self.map.lock().remove(&(ino | NODE_KEY));
    }

    /// The listing a READDIR(PLUS) of node `ino` with handle `fh` belongs to.
    pub fn key(ino: u64, fh: u64) -> u64 {
        if fh == 0 {
            ino | NODE_KEY
        } else {
            fh
        }
    }

    /// The page after `offset` (a cookie; 0 starts over) of `dir`, with
    /// the node ids and handles of the directory and its parent.
    pub async fn page(&self, c: &Client, key: u64, dir: &Dots, offset: u64) -> client::Result<DirPage> {
        let known = self.map.lock().get(&key).copied().unwrap_or_default();
        if offset != 0 && known.end == Some(offset) {
            return Ok(DirPage { entries: Vec::new(), cookieverf: known.verf, eof: true });
        }
        let v4 = c.nfs3().is_none();
        // NFSv4: the server's listing starts after `..`.
        let server_offset = if v4 && offset <= DOTDOT_COOKIE { 0 } else { offset };
        let verf = if server_offset == 0 { [0u8; 8] } else { known.verf };
        let mut page = c.readdir_page(&dir.fh.1, server_offset, verf).await?;
        self.map.lock().insert(key, Listing { verf: page.cookieverf, end: None });
        if v4 {
            page.entries = with_dots(offset, dir, std::mem::take(&mut page.entries));
        }
        Ok(page)
    }

    /// Every entry of a page with the server's EOF reached the kernel; the
    /// next ask, after `last` (the last entry's cookie), needs no call.
    pub fn ended(&self, key: u64, last: u64) {
        if let Some(l) = self.map.lock().get_mut(&key) {
            l.end = Some(last);
        }
    }
}

/// A directory being listed and its parent, each as (node id, handle):
/// what its `.` and `..` name. The parent is the directory itself at the
/// mount's root.
pub struct Dots {
    pub fh: (u64, nfs_fh3),
    pub parent: (u64, nfs_fh3),
}

/// An NFSv4 page read after `offset`, with whichever of `.` (cookie 1)
/// and `..` (cookie 2) come after `offset` in front of it.
fn with_dots(offset: u64, dir: &Dots, mut entries: Vec<ListEntry>) -> Vec<ListEntry> {
    let mut all = Vec::with_capacity(entries.len() + 2);
    if offset < DOT_COOKIE {
        all.push(dot_entry(".", DOT_COOKIE, &dir.fh));
    }
    if offset < DOTDOT_COOKIE {
        all.push(dot_entry("..", DOTDOT_COOKIE, &dir.parent));
    }
    all.append(&mut entries);
    all
}

/// A `.` or `..` entry naming the directory `node`: listed by its node id
/// (never 0, which readdir(3) skips as a deleted entry), as a directory.
fn dot_entry(name: &'static str, cookie: u64, (ino, fh): &(u64, nfs_fh3)) -> ListEntry {
    ListEntry {
        fileid: *ino,
        name: Bytes::from_static(name.as_bytes()),
        cookie,
        name_attributes: Some(Fattr { r#type: ftype3::NF3DIR, fileid: *ino, ..Default::default() }),
        name_handle: Some(fh.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// seekdir(3) to a cookie resumes after the entry it was read with:
    /// after `.` (1) comes `..`, after `..` (2) the server's first entry.
    #[test]
    fn dots_come_once_whatever_the_offset() {
        let fh = |b: &'static [u8]| nfs_fh3 { data: Bytes::from_static(b) };
        let dir = Dots { fh: (5, fh(b"d")), parent: (1, fh(b"p")) };
        let first = ListEntry {
            fileid: 9,
            name: Bytes::from_static(b"a"),
            cookie: 7,
            name_attributes: None,
            name_handle: None,
        };
        let names = |offset| -> Vec<(Vec<u8>, u64)> {
            with_dots(offset, &dir, vec![first.clone()]).iter().map(|e| (e.name.to_vec(), e.cookie)).collect()
        };
        assert_eq!(names(0), vec![(b".".to_vec(), 1), (b"..".to_vec(), 2), (b"a".to_vec(), 7)]);
        assert_eq!(names(1), vec![(b"..".to_vec(), 2), (b"a".to_vec(), 7)]);
        assert_eq!(names(2), vec![(b"a".to_vec(), 7)]);
        let dots = with_dots(0, &dir, Vec::new());
        assert_eq!(dots.iter().map(|e| e.fileid).collect::<Vec<_>>(), vec![5, 1]);
    }

    #[test]
    fn keys_of_handles_and_nodes_never_meet() {
        let l = Listings::default();
        let a = l.open();
        let b = l.open();
        assert!(a != 0 && b != 0 && a != b);
        assert_eq!(Listings::key(7, a), a);
        assert_eq!(Listings::key(a, 0), a | NODE_KEY);
        assert_ne!(Listings::key(a, 0), a);
        l.ended(a, 42);
        assert_eq!(l.map.lock()[&a].end, Some(42));
        l.close(a);
        assert!(!l.map.lock().contains_key(&a));
    }
}

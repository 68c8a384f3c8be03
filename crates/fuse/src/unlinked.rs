//! Open files whose name was removed or renamed over (silly rename, as
//! the Linux NFS client does): NFS has no open-file reference that keeps
//! a file whose last name is gone (NFSv3 has no opens at all, and an
//! NFSv4 server may drop the file with its last name), so a program
//! reading a file it still holds after `rm` would get ESTALE. The mount
//! renames such a file to a hidden `.nfs` name in the same directory
//! instead, reports it with one link fewer (`st_nlink` 0 for a file whose
//! only name was removed), and removes the hidden name at the last close,
//! or when the mount ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use client::Fattr;
use parking_lot::Mutex;
use proto::nfs3::nfs_fh3;

/// Where an open file was hidden.
#[derive(Debug, Clone)]
pub struct Hidden {
    /// The directory's node and handle.
    pub parent: u64,
    pub dir: nfs_fh3,
    pub name: String,
}

pub struct Unlinked {
    by_node: Mutex<HashMap<u64, Hidden>>,
    /// Makes each hidden name of this mount new; seeded per process, so
    /// two mounts of one export rarely try the same name (a taken name is
    /// skipped anyway).
    counter: AtomicU32,
}

impl Default for Unlinked {
    fn default() -> Self {
        let seed = std::process::id().wrapping_mul(0x9e37_79b9)
            ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        Unlinked { by_node: Mutex::default(), counter: AtomicU32::new(seed) }
    }
}

impl Unlinked {
    /// A hidden name for the file `fileid`: `.nfs`, its file id and a
    /// counter, in hex, as Linux names them.
    pub fn new_name(&self, fileid: u64) -> String {
        format!(".nfs{fileid:016x}{:08x}", self.counter.fetch_add(1, Ordering::Relaxed))
    }

    pub fn hide(&self, ino: u64, h: Hidden) {
        self.by_node.lock().insert(ino, h);
    }

    pub fn is_hidden(&self, ino: u64) -> bool {
        self.by_node.lock().contains_key(&ino)
    }

    /// The node's hidden name, to remove now that it is closed.
    pub fn take(&self, ino: u64) -> Option<Hidden> {
        self.by_node.lock().remove(&ino)
    }

    /// Every hidden name, when the mount ends.
    pub fn take_all(&self) -> Vec<Hidden> {
        self.by_node.lock().drain().map(|(_, h)| h).collect()
    }

    /// The kernel's view of `a` as node `ino`, less the hidden name of
    /// an open file whose own name was removed.
    pub fn shown_attr(&self, ino: u64, a: &Fattr) -> fuser::FileAttr {
        let mut attr = crate::attr::file_attr(ino, a);
        attr.nlink = self.shown_nlink(ino, attr.nlink);
        attr
    }

    /// The link count a program sees: the hidden name is not one of its.
    pub fn shown_nlink(&self, ino: u64, nlink: u32) -> u32 {
        if self.is_hidden(ino) {
            nlink.saturating_sub(1)
        } else {
            nlink
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_are_new_and_counted_out_of_links() {
        let u = Unlinked::default();
        let (a, b) = (u.new_name(0xab), u.new_name(0xab));
        assert_ne!(a, b);
        assert!(a.starts_with(".nfs00000000000000ab") && a.len() == 4 + 16 + 8);
        let dir = nfs_fh3 { data: bytes::Bytes::from_static(b"d") };
        u.hide(7, Hidden { parent: 1, dir, name: a.clone() });
        assert_eq!(u.shown_nlink(7, 1), 0);
        assert_eq!(u.shown_nlink(8, 1), 1);
        assert_eq!(u.take(7).map(|h| h.name), Some(a));
        assert!(u.take_all().is_empty());
    }
}

//! The mount's inode table: FUSE node ids for NFS file handles.
//!
//! Node ids are handed out from a counter, never reused while the kernel
//! may still hold one, and a handle keeps its id while it is known, so two
//! names of one file (hard links) share an id and `st_ino`. The kernel
//! counts its lookups of each id and tells us when it forgets them
//! ([`Inodes::forget`]); an id whose count reaches zero is dropped. The
//! root is node 1 and is never dropped.

use std::collections::HashMap;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::nfs3::nfs_fh3;

pub const ROOT: u64 = 1;

struct Node {
    fh: nfs_fh3,
    /// Lookups the kernel holds (entries and creates replied).
    lookups: u64,
}

struct Table {
    by_id: HashMap<u64, Node>,
    by_fh: HashMap<Bytes, u64>,
    next: u64,
}

pub struct Inodes {
    table: Mutex<Table>,
}

impl Inodes {
    pub fn new(root: nfs_fh3) -> Inodes {
        let mut by_id = HashMap::new();
        let mut by_fh = HashMap::new();
        by_fh.insert(root.data.clone(), ROOT);
        by_id.insert(ROOT, Node { fh: root, lookups: 1 });
        Inodes { table: Mutex::new(Table { by_id, by_fh, next: ROOT + 1 }) }
    }

    /// The handle behind node `id`, if the kernel still holds it.
    pub fn handle(&self, id: u64) -> Option<nfs_fh3> {
        self.table.lock().by_id.get(&id).map(|n| n.fh.clone())
    }

    /// The node id of `fh`, counting one more lookup by the kernel (every
    /// reply that hands the kernel an entry must call this once).
    pub fn remember(&self, fh: &nfs_fh3) -> u64 {
        let mut t = self.table.lock();
        if let Some(&id) = t.by_fh.get(&fh.data) {
            if let Some(n) = t.by_id.get_mut(&id) {
                n.lookups += 1;
            }
            return id;
        }
        let id = t.next;
        t.next += 1;
        t.by_fh.insert(fh.data.clone(), id);
        t.by_id.insert(id, Node { fh: fh.clone(), lookups: 1 });
        id
    }

    /// The node id of `fh` if the kernel holds one, without counting a
    /// lookup (for plain READDIR entries, which the kernel does not count).
    pub fn known(&self, fh: &nfs_fh3) -> Option<u64> {
        self.table.lock().by_fh.get(&fh.data).copied()
    }

    /// The kernel dropped `n` lookups of `id`.
    pub fn forget(&self, id: u64, n: u64) {
        if id == ROOT {
            return;
        }
        let mut t = self.table.lock();
        let gone = match t.by_id.get_mut(&id) {
            Some(node) => {
                node.lookups = node.lookups.saturating_sub(n);
                node.lookups == 0
            }
            None => false,
        };
        if gone {
            if let Some(node) = t.by_id.remove(&id) {
                t.by_fh.remove(&node.fh.data);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fh(b: &'static [u8]) -> nfs_fh3 {
        nfs_fh3 { data: Bytes::from_static(b) }
    }

    #[test]
    fn ids_are_stable_while_held_and_dropped_when_forgotten() {
        let t = Inodes::new(fh(b"root"));
        assert_eq!(t.remember(&fh(b"root")), ROOT);
        let a = t.remember(&fh(b"a"));
        assert_eq!(t.remember(&fh(b"a")), a, "a second name of the same file");
        let b = t.remember(&fh(b"b"));
        assert_ne!(a, b);
        t.forget(a, 1);
        assert_eq!(t.handle(a), Some(fh(b"a")), "one lookup still held");
        t.forget(a, 1);
        assert_eq!(t.handle(a), None);
        assert_ne!(t.remember(&fh(b"a")), a, "an id is never handed out twice");
        t.forget(ROOT, 100);
        assert_eq!(t.handle(ROOT), Some(fh(b"root")));
        assert_eq!(t.known(&fh(b"b")), Some(b));
    }
}

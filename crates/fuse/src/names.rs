//! The names the kernel holds for each node: every entry the mount hands
//! the kernel (LOOKUP, CREATE, MKDIR, LINK, a READDIRPLUS entry) is
//! (directory node, name) → node here, until the name is removed or
//! renamed or the kernel forgets the node.
//!
//! Why the mount keeps its own: UNLINK and RENAME name the object only by
//! its directory and name, and the client's name cache may have dropped
//! that name (any change to the directory drops its names). The kernel
//! never removes a name it has no node for, so this table always knows
//! which object a removal or a rename-over touches: the open file that
//! must be hidden instead of removed, and the object whose cached link
//! count and ctime the removal changes. A directory's one name also gives
//! the `..` entry of its listings without asking the server.

use std::collections::HashMap;

use parking_lot::Mutex;

#[derive(Default)]
struct Table {
    by_name: HashMap<(u64, String), u64>,
    /// Every name of a node (several for hard links).
    by_node: HashMap<u64, Vec<(u64, String)>>,
}

impl Table {
    fn unname(&mut self, parent: u64, name: &str) -> Option<u64> {
        let ino = self.by_name.remove(&(parent, name.to_string()))?;
        if let Some(names) = self.by_node.get_mut(&ino) {
            names.retain(|(p, n)| !(*p == parent && n == name));
            if names.is_empty() {
                self.by_node.remove(&ino);
            }
        }
        Some(ino)
    }
}

#[derive(Default)]
pub struct Names {
    table: Mutex<Table>,
}

impl Names {
    /// The kernel was given `name` in `parent` as node `ino`.
    pub fn named(&self, parent: u64, name: &str, ino: u64) {
        let mut t = self.table.lock();
        if t.by_name.get(&(parent, name.to_string())) == Some(&ino) {
            return;
        }
        t.unname(parent, name);
        t.by_name.insert((parent, name.to_string()), ino);
        t.by_node.entry(ino).or_default().push((parent, name.to_string()));
    }

    /// The node `name` in `parent` names, as the kernel knows it.
    pub fn get(&self, parent: u64, name: &str) -> Option<u64> {
        self.table.lock().by_name.get(&(parent, name.to_string())).copied()
    }

    /// The name is gone; the node it named.
    pub fn unnamed(&self, parent: u64, name: &str) -> Option<u64> {
        self.table.lock().unname(parent, name)
    }

    /// RENAME: the node named `name` in `parent` is now `to_name` in
    /// `to`, and whatever `to_name` named before lost that name.
    pub fn renamed(&self, parent: u64, name: &str, to: u64, to_name: &str) {
        let mut t = self.table.lock();
        t.unname(to, to_name);
        if let Some(ino) = t.unname(parent, name) {
            t.by_name.insert((to, to_name.to_string()), ino);
            t.by_node.entry(ino).or_default().push((to, to_name.to_string()));
        }
    }

    /// The directory a directory node is named in (a directory has one
    /// name).
    pub fn parent_of(&self, ino: u64) -> Option<u64> {
        self.table.lock().by_node.get(&ino).and_then(|names| names.first()).map(|(p, _)| *p)
    }

    /// The kernel forgot the node: its names go too.
    pub fn forget_node(&self, ino: u64) {
        let mut t = self.table.lock();
        for (parent, name) in t.by_node.remove(&ino).unwrap_or_default() {
            t.by_name.remove(&(parent, name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_links_renames_and_removals() {
        let n = Names::default();
        n.named(1, "a", 10);
        n.named(1, "b", 10);
        n.named(2, "c", 11);
        assert_eq!(n.get(1, "a"), Some(10));
        assert_eq!(n.unnamed(1, "a"), Some(10));
        assert_eq!(n.get(1, "a"), None);
        assert_eq!(n.get(1, "b"), Some(10));
        // Renamed over "c": node 11 loses it, node 10 takes it.
        n.renamed(1, "b", 2, "c");
        assert_eq!(n.get(2, "c"), Some(10));
        assert_eq!(n.get(1, "b"), None);
        assert_eq!(n.parent_of(10), Some(2));
        assert_eq!(n.parent_of(11), None);
        n.forget_node(10);
        assert_eq!(n.get(2, "c"), None);
        // The same name given again to the same node is one name.
        n.named(3, "d", 12);
        n.named(3, "d", 12);
        n.forget_node(12);
        assert!(n.table.lock().by_name.is_empty() && n.table.lock().by_node.is_empty());
    }
}

//! Where every id handed out can be found again: id → (parent id, name).
//!
//! The map is the in-memory half of id persistence; [`super::journal`]
//! makes it survive restarts. An object may have several names (hard
//! links); up to a configured number are remembered, the first being the
//! one path walks use. Entries are corrected lazily: a walk that finds
//! another object (or nothing) at a remembered place drops that place.

use std::collections::HashMap;

use bytes::Bytes;

use crate::FileId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loc {
    pub(crate) parent: FileId,
    pub(crate) name: Bytes,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Entry {
    /// Generation last seen for this id (0: not yet seen, e.g. an id
    /// learnt from a directory scan).
    pub(crate) generation: u64,
    pub(crate) locs: Vec<Loc>,
}

/// A change to the map, as the journal records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// `id` (with `generation`) is reachable as `name` in `parent`.
    Add { id: FileId, generation: u64, parent: FileId, name: Bytes },
    /// `id` is no longer reachable as `name` in `parent`.
    Unlink { id: FileId, parent: FileId, name: Bytes },
    /// `id` is gone altogether.
    Forget { id: FileId },
}

#[derive(Debug)]
pub(crate) struct IdMap {
    root: FileId,
    max_locs: usize,
    entries: HashMap<FileId, Entry>,
}

impl IdMap {
    pub(crate) fn new(root: FileId, max_locs: usize) -> IdMap {
        IdMap { root, max_locs: max_locs.max(1), entries: HashMap::new() }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn get(&self, id: FileId) -> Option<&Entry> {
        self.entries.get(&id)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&FileId, &Entry)> {
        self.entries.iter()
    }

    /// Applies a change; returns whether it changed anything (and so needs
    /// journalling).
    pub(crate) fn apply(&mut self, c: &Change) -> bool {
        match c {
            Change::Add { id, generation, parent, name } => {
                if *id == self.root {
                    return false;
                }
                let e = self.entries.entry(*id).or_default();
                let mut changed = false;
                if *generation != 0 && e.generation != *generation {
                    if e.generation != 0 {
                        // Another object now has this inode number: what we
                        // knew about the old one's names is void.
                        e.locs.clear();
                    }
                    e.generation = *generation;
                    changed = true;
                }
                let loc = Loc { parent: *parent, name: name.clone() };
                if let Some(pos) = e.locs.iter().position(|l| *l == loc) {
                    if pos != 0 {
                        // The name just used is the freshest: walk it first.
                        e.locs[..=pos].rotate_right(1);
                    }
                    return changed;
                }
                if e.locs.len() >= self.max_locs {
                    e.locs.pop();
                }
                e.locs.insert(0, loc);
                true
            }
            Change::Unlink { id, parent, name } => {
                let Some(e) = self.entries.get_mut(id) else {
                    return false;
                };
                let before = e.locs.len();
                e.locs.retain(|l| !(l.parent == *parent && l.name == *name));
                let changed = e.locs.len() != before;
                if e.locs.is_empty() {
                    self.entries.remove(id);
                }
                changed
            }
            Change::Forget { id } => self.entries.remove(id).is_some(),
        }
    }

    /// The components from the root to `id` along first names, or None if
    /// some ancestor is unknown or the chain is longer than `max_depth`
    /// (a cycle left by renames behind our back).
    pub(crate) fn path(&self, id: FileId, max_depth: usize) -> Option<Vec<Bytes>> {
        let mut comps = Vec::new();
        let mut cur = id;
        while cur != self.root {
            if comps.len() >= max_depth {
                return None;
            }
            let loc = self.entries.get(&cur)?.locs.first()?;
            comps.push(loc.name.clone());
            cur = loc.parent;
        }
        comps.reverse();
        Some(comps)
    }

    /// Whether `loc` is already known for `id` with this generation (so a
    /// lookup need not journal anything).
    pub(crate) fn knows(&self, id: FileId, generation: u64, parent: FileId, name: &[u8]) -> bool {
        id == self.root
            || self.entries.get(&id).is_some_and(|e| {
                (generation == 0 || e.generation == generation)
                    && e.locs.first().is_some_and(|l| l.parent == parent && l.name == name)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(m: &mut IdMap, id: u64, generation: u64, parent: u64, name: &str) -> bool {
        m.apply(&Change::Add { id, generation, parent, name: Bytes::copy_from_slice(name.as_bytes()) })
    }

    #[test]
    fn paths_and_links() {
        let mut m = IdMap::new(2, 2);
        assert!(add(&mut m, 10, 5, 2, "a"));
        assert!(add(&mut m, 11, 6, 10, "b"));
        assert!(!add(&mut m, 11, 6, 10, "b"));
        assert_eq!(m.path(11, 10).unwrap(), vec![Bytes::from("a"), Bytes::from("b")]);
        assert!(add(&mut m, 11, 6, 2, "c"));
        assert_eq!(m.path(11, 10).unwrap(), vec![Bytes::from("c")]);
        assert!(add(&mut m, 11, 0, 2, "d"));
        assert_eq!(m.get(11).unwrap().locs.len(), 2);
        assert_eq!(m.get(11).unwrap().generation, 6);
        assert!(m.apply(&Change::Unlink { id: 11, parent: 2, name: Bytes::from("d") }));
        assert!(m.apply(&Change::Unlink { id: 11, parent: 2, name: Bytes::from("c") }));
        assert!(m.get(11).is_none());
        assert_eq!(m.path(2, 10).unwrap(), Vec::<Bytes>::new());
    }

    #[test]
    fn reused_inode_drops_old_names() {
        let mut m = IdMap::new(2, 4);
        add(&mut m, 10, 5, 2, "old");
        add(&mut m, 10, 9, 2, "new");
        assert_eq!(m.get(10).unwrap().locs, vec![Loc { parent: 2, name: Bytes::from("new") }]);
    }

    #[test]
    fn cycles_are_bounded() {
        let mut m = IdMap::new(2, 4);
        add(&mut m, 10, 1, 11, "x");
        add(&mut m, 11, 1, 10, "y");
        assert!(m.path(10, 100).is_none());
    }
}

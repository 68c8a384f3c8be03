//! Where every id handed out can be found again: id → (parent id, name).
//!
//! The map is the in-memory half of id persistence; [`super::journal`]
//! makes it survive restarts. An object may have several names (hard
//! links); up to a configured number are remembered, the first being the
//! one path walks use. Entries are corrected lazily: a walk that finds
//! another object (or nothing) at a remembered place drops that place.

use bytes::Bytes;

use super::FastMap;
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
    Unlink { id: FileId, generation: u64, parent: FileId, name: Bytes },
    /// `id` is gone altogether.
    Forget { id: FileId, generation: u64 },
}

/// Whether an `Unlink` or `Forget` about the object of `generation` still
/// concerns the entry of generation `current`. Once a removed object's
/// inode number has been given to a new object, its entry describes the
/// new one, and news of the old one's removal (which a concurrent REMOVE
/// can record after a CREATE has already recorded the new object) must
/// not touch it. 0 on either side means unknown (journals written before
/// removals carried generations, ids learnt from a directory scan, file
/// systems without birth times) and matches.
pub(crate) fn same_object(current: u64, generation: u64) -> bool {
    current == 0 || generation == 0 || current == generation
}

#[derive(Debug)]
pub(crate) struct IdMap {
    root: FileId,
    max_locs: usize,
    entries: FastMap<FileId, Entry>,
}

impl IdMap {
    pub(crate) fn new(root: FileId, max_locs: usize) -> IdMap {
        IdMap { root, max_locs: max_locs.max(1), entries: FastMap::default() }
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
            Change::Unlink { id, generation, parent, name } => {
                let Some(e) = self.entries.get_mut(id) else {
                    return false;
                };
                if !same_object(e.generation, *generation) {
                    return false;
                }
                let before = e.locs.len();
                e.locs.retain(|l| !(l.parent == *parent && l.name == *name));
                let changed = e.locs.len() != before;
                if e.locs.is_empty() {
                    self.entries.remove(id);
                }
                changed
            }
            Change::Forget { id, generation } => match self.entries.get(id) {
                Some(e) if same_object(e.generation, *generation) => {
                    self.entries.remove(id);
                    true
                }
                _ => false,
            },
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

    /// Whether `id` is known to have the name `name` in `parent` (any of
    /// its remembered names).
    pub(crate) fn has_place(&self, id: FileId, parent: FileId, name: &[u8]) -> bool {
        id == self.root
            || self.entries.get(&id).is_some_and(|e| e.locs.iter().any(|l| l.parent == parent && l.name == name))
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
        assert!(m.apply(&Change::Unlink { id: 11, generation: 6, parent: 2, name: Bytes::from("d") }));
        assert!(m.apply(&Change::Unlink { id: 11, generation: 0, parent: 2, name: Bytes::from("c") }));
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

    /// A REMOVE of the old object recorded after a CREATE has recorded the
    /// new object under the same inode number leaves the new one's entry
    /// alone; removals of the new object itself (or of unknown
    /// generation, as replayed from older journals) still apply.
    #[test]
    fn removal_of_an_earlier_object_keeps_the_reused_id() {
        let mut m = IdMap::new(2, 4);
        add(&mut m, 10, 5, 2, "f5");
        add(&mut m, 10, 9, 2, "f33");
        assert!(!m.apply(&Change::Forget { id: 10, generation: 5 }));
        assert!(!m.apply(&Change::Unlink { id: 10, generation: 5, parent: 2, name: Bytes::from("f33") }));
        assert_eq!(m.path(10, 10).unwrap(), vec![Bytes::from("f33")]);
        // The same name reused by the new object is not dropped either.
        add(&mut m, 11, 5, 2, "x");
        add(&mut m, 11, 9, 2, "x");
        assert!(!m.apply(&Change::Unlink { id: 11, generation: 5, parent: 2, name: Bytes::from("x") }));
        assert_eq!(m.path(11, 10).unwrap(), vec![Bytes::from("x")]);
        assert!(m.apply(&Change::Forget { id: 10, generation: 9 }));
        assert!(m.get(10).is_none());
        assert!(m.apply(&Change::Forget { id: 11, generation: 0 }));
        assert!(m.get(11).is_none());
        // An id learnt from a directory scan (generation unknown) is
        // removed by any removal.
        add(&mut m, 12, 0, 2, "y");
        assert!(m.apply(&Change::Forget { id: 12, generation: 7 }));
        assert!(m.get(12).is_none());
    }

    #[test]
    fn cycles_are_bounded() {
        let mut m = IdMap::new(2, 4);
        add(&mut m, 10, 1, 11, "x");
        add(&mut m, 11, 1, 10, "y");
        assert!(m.path(10, 100).is_none());
    }
}

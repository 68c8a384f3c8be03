//! Path prefixes walked lately, each with the directory handle it led to.
//!
//! A path-based caller (`stat` of every file in a directory, as
//! `find -exec ls -l` does) names the same directory again and again; each
//! call walked it from the export's root, one name-cache and one
//! attribute-cache lookup per component, a sixth of a tree walk's client
//! time. A walk answered wholly from fresh cache entries gives the same
//! answer until the first of those entries expires, unless the caches
//! dropped an entry meanwhile because it may have stopped being true
//! (their `drops` counts). So that answer is kept, for that long, under the
//! prefix exactly as the caller spelled it.

use bytes::Bytes;
use client_core::attrcache::WallNanos;

/// Prefixes kept: a walker alternates between a directory and its
/// subdirectories, and a few walkers may share the client.
pub(crate) const WALKS_KEPT: usize = 8;

/// The caches' state when a walk began: any drop after it (a rename, a
/// removal, a changed directory) makes the walk's answer unsafe to keep.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drops {
    pub(crate) names: u64,
    pub(crate) attrs: u64,
}

struct Walked {
    path: String,
    fh: Bytes,
    /// When the walk began, and when its first entry stops being fresh.
    began: WallNanos,
    until: WallNanos,
    drops: Drops,
}

#[derive(Default)]
pub(crate) struct Walks {
    kept: Vec<Walked>,
    /// The slot the next new prefix takes once all are used.
    next: usize,
}

impl Walks {
    /// The handle `path` led to, if that walk still holds at `now` with
    /// the caches at `drops`.
    pub(crate) fn get(&self, path: &str, now: WallNanos, drops: Drops) -> Option<Bytes> {
        let w = self.kept.iter().find(|w| w.path == path)?;
        (w.drops == drops && w.began <= now && now < w.until).then(|| w.fh.clone())
    }

    /// Keeps a walk of `path` to `fh` that began at `began` with the caches
    /// at `drops` and used entries fresh until `until`.
    pub(crate) fn put(&mut self, path: &str, fh: &Bytes, began: WallNanos, until: WallNanos, drops: Drops) {
        let slot = match self.kept.iter().position(|w| w.path == path) {
            Some(i) => i,
            None if self.kept.len() < WALKS_KEPT => {
                self.kept.push(Walked { path: path.to_string(), fh: Bytes::new(), began, until, drops });
                self.kept.len() - 1
            }
            None => {
                let i = self.next;
                self.next = (i + 1) % WALKS_KEPT;
                i
            }
        };
        let Some(w) = self.kept.get_mut(slot) else { return };
        if w.path != path {
            w.path.clear();
            w.path.push_str(path);
        }
        (w.fh, w.began, w.until, w.drops) = (fh.clone(), began, until, drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Drops = Drops { names: 1, attrs: 2 };

    #[test]
    fn a_walk_holds_until_its_first_entry_expires_or_the_caches_drop_one() {
        let mut w = Walks::default();
        let fh = Bytes::from_static(b"dir");
        w.put("/a/b", &fh, 100, 200, D);
        assert_eq!(w.get("/a/b", 150, D), Some(fh.clone()));
        assert_eq!(w.get("/a/b", 200, D), None, "past the first expiry");
        assert_eq!(w.get("/a/b", 99, D), None, "a clock stepped back");
        assert_eq!(w.get("/a/b", 150, Drops { names: 2, ..D }), None, "a name was dropped");
        assert_eq!(w.get("/a/b", 150, Drops { attrs: 3, ..D }), None, "attributes were invalidated");
        assert_eq!(w.get("/a", 150, D), None);
    }

    #[test]
    fn the_oldest_slot_makes_room_and_a_prefix_keeps_one_slot() {
        let mut w = Walks::default();
        for i in 0..WALKS_KEPT + 3 {
            w.put(&format!("/d{i}"), &Bytes::from(vec![i as u8]), 0, 10, D);
        }
        w.put("/d5", &Bytes::from_static(b"again"), 0, 10, D);
        assert_eq!(w.kept.len(), WALKS_KEPT);
        assert_eq!(w.kept.iter().filter(|k| k.path == "/d5").count(), 1);
        assert_eq!(w.get("/d5", 5, D), Some(Bytes::from_static(b"again")));
        assert_eq!(w.get("/d0", 5, D), None, "replaced by a newer prefix");
        assert_eq!(w.get(&format!("/d{}", WALKS_KEPT + 2), 5, D).map(|b| b[0] as usize), Some(WALKS_KEPT + 2));
    }
}

//! Range operations on maps of disjoint extents keyed by their start offset.
//!
//! Everything is a `BTreeMap` lookup around the affected range, so a write costs
//! O(log n + extents it touches) however much data the file has cached — the
//! per-write list walk Lever & Honeyman measured is exactly what this avoids.

use std::collections::BTreeMap;

/// A piece of data that can be cut in two.
pub(super) trait Piece: Sized {
    fn len(&self) -> u64;
    /// Keeps `[0, at)` in `self` and returns `[at, len)`.
    fn split_off(&mut self, at: u64) -> Self;
}

impl Piece for Vec<u8> {
    fn len(&self) -> u64 {
        Vec::len(self) as u64
    }
    fn split_off(&mut self, at: u64) -> Self {
        Vec::split_off(self, at as usize)
    }
}

/// Removes `[a, b)` from `map`, cutting extents that straddle either end, and
/// returns the removed pieces (clipped to the range) in offset order.
pub(super) fn take_range<V: Piece>(map: &mut BTreeMap<u64, V>, a: u64, b: u64) -> Vec<(u64, V)> {
    let mut out = Vec::new();
    if a >= b {
        return out;
    }
    if let Some((&s, v)) = map.range_mut(..a).next_back() {
        if s + v.len() > a {
            let tail = v.split_off(a - s);
            map.insert(a, tail);
        }
    }
    let keys: Vec<u64> = map.range(a..b).map(|(&k, _)| k).collect();
    for k in keys {
        let mut v = map.remove(&k).expect("key just listed");
        if k + v.len() > b {
            let tail = v.split_off(b - k);
            map.insert(b, tail);
        }
        out.push((k, v));
    }
    out
}

/// Whether any extent of `map` (ending at `end_of(start, value)`) overlaps `[a, b)`.
/// Extents are disjoint, so only the last one starting before `b` can.
pub(super) fn overlaps<V>(map: &BTreeMap<u64, V>, a: u64, b: u64, end_of: impl Fn(u64, &V) -> u64) -> bool {
    a < b && map.range(..b).next_back().is_some_and(|(&s, v)| end_of(s, v) > a)
}

/// The sub-ranges of `[a, b)` that no extent of `map` covers.
pub(super) fn gaps<V>(map: &BTreeMap<u64, V>, a: u64, b: u64, end_of: impl Fn(u64, &V) -> u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut pos = a;
    let first = match map.range(..a).next_back() {
        Some((&s, _)) => s,
        None => a,
    };
    for (&s, v) in map.range(first..b) {
        let e = end_of(s, v);
        if e <= pos {
            continue;
        }
        if s > pos {
            out.push((pos, s));
        }
        pos = pos.max(e);
        if pos >= b {
            break;
        }
    }
    if pos < b {
        out.push((pos, b));
    }
    out
}

/// Starts of the extents overlapping `[a, b)`.
pub(super) fn overlapping<V: Piece>(map: &BTreeMap<u64, V>, a: u64, b: u64) -> Vec<u64> {
    let mut out = Vec::new();
    if let Some((&s, v)) = map.range(..a).next_back() {
        if s + v.len() > a {
            out.push(s);
        }
    }
    out.extend(map.range(a..b).map(|(&k, _)| k));
    out
}

/// What [`merge_insert`] did: the merged extent and the change in cached bytes.
pub(super) struct Merged {
    pub start: u64,
    pub added: u64,
    pub removed: u64,
}

/// Writes `data` at `off` into a map of dirty extents that never cross a
/// multiple of `block`: overlapped bytes are overwritten, and extents that touch
/// the new data inside the same block merge with it, so an 8 KiB sequential
/// stream grows one extent per block by appending (amortised O(1) per byte).
/// `data` must lie inside one block. `on_removed` is told every extent start
/// that disappears (so indexes over the map can forget it).
pub(super) fn merge_insert(
    map: &mut BTreeMap<u64, Vec<u8>>,
    off: u64,
    data: &[u8],
    block: u64,
    mut on_removed: impl FnMut(u64),
) -> Merged {
    let end = off + data.len() as u64;
    let blk_start = off / block * block;
    let blk_end = blk_start + block;
    debug_assert!(end <= blk_end, "piece crosses a block boundary");
    // Rewriting bytes already cached: copy in place, nothing moves.
    if let Some((&s, v)) = map.range_mut(..=off).next_back() {
        if s + v.len() as u64 >= end {
            if let Some(cached) = v.get_mut((off - s) as usize..(end - s) as usize) {
                cached.copy_from_slice(data);
                return Merged { start: s, added: 0, removed: 0 };
            }
        }
    }
    let mut removed = 0;
    let mut start = off;
    let pred =
        map.range(..off).next_back().filter(|(&s, v)| s >= blk_start && s + v.len() as u64 >= off).map(|(&s, _)| s);
    let mut buf = match pred {
        Some(s) => {
            let mut v = map.remove(&s).expect("predecessor");
            on_removed(s);
            removed += v.len() as u64;
            v.truncate((off - s) as usize);
            start = s;
            v
        }
        None => Vec::with_capacity(data.len()),
    };
    buf.extend_from_slice(data);
    let upto = end.min(blk_end - 1);
    let keys: Vec<u64> = map.range(off..=upto).map(|(&k, _)| k).collect();
    for k in keys {
        let v = map.remove(&k).expect("key just listed");
        on_removed(k);
        removed += v.len() as u64;
        let v_end = k + v.len() as u64;
        if v_end > end {
            buf.extend_from_slice(v.get((end - k) as usize..).unwrap_or_default());
        }
    }
    let added = buf.len() as u64;
    map.insert(start, buf);
    Merged { start, added, removed }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(extents: &[(u64, &[u8])]) -> BTreeMap<u64, Vec<u8>> {
        extents.iter().map(|(o, d)| (*o, d.to_vec())).collect()
    }

    #[test]
    fn take_range_cuts_both_ends() {
        let mut m = map(&[(0, b"abcd"), (6, b"ef"), (10, b"ghij")]);
        let got = take_range(&mut m, 2, 12);
        assert_eq!(got, vec![(2, b"cd".to_vec()), (6, b"ef".to_vec()), (10, b"gh".to_vec())]);
        assert_eq!(m, map(&[(0, b"ab"), (12, b"ij")]));
        let mut m = map(&[(0, b"abcdef")]);
        assert_eq!(take_range(&mut m, 2, 4), vec![(2, b"cd".to_vec())]);
        assert_eq!(m, map(&[(0, b"ab"), (4, b"ef")]));
    }

    #[test]
    fn gaps_and_overlaps() {
        let m = map(&[(2, b"ab"), (6, b"cd")]);
        let end = |s: u64, v: &Vec<u8>| s + v.len() as u64;
        assert_eq!(gaps(&m, 0, 10, end), vec![(0, 2), (4, 6), (8, 10)]);
        assert_eq!(gaps(&m, 3, 7, end), vec![(4, 6)]);
        assert_eq!(gaps(&m, 2, 4, end), vec![]);
        assert!(overlaps(&m, 3, 4, end));
        assert!(!overlaps(&m, 4, 6, end));
        assert!(!overlaps(&m, 8, 9, end));
    }

    #[test]
    fn merge_appends_overwrites_and_respects_blocks() {
        let mut m = BTreeMap::new();
        for i in 0..4u64 {
            merge_insert(&mut m, i * 2, &[i as u8; 2], 8, |_| {});
        }
        assert_eq!(m, map(&[(0, &[0, 0, 1, 1, 2, 2, 3, 3])]));
        // next block: separate extent even though adjacent
        merge_insert(&mut m, 8, b"zz", 8, |_| {});
        assert_eq!(m.len(), 2);
        // overwrite in place
        let r = merge_insert(&mut m, 1, b"xy", 8, |_| {});
        assert_eq!((r.start, r.added, r.removed), (0, 0, 0));
        assert_eq!(m[&0], vec![0, b'x', b'y', 1, 2, 2, 3, 3]);
        // bridging two extents
        let mut m = map(&[(0, b"ab"), (4, b"ef")]);
        let r = merge_insert(&mut m, 1, b"XYZ", 8, |_| {});
        assert_eq!((r.start, r.added, r.removed), (0, 6, 4));
        assert_eq!(m, map(&[(0, b"aXYZef")]));
    }
}

use rand::{Rng, SeedableRng};

use super::*;
use crate::fattr::Time;

const K8: u64 = 8 * KIB;

fn ra() -> Readahead {
    Readahead::new(ReadaheadSettings::default())
}

#[test]
fn sequential_reads_grow_the_window_to_the_maximum() {
    let mut r = ra();
    assert_eq!(r.on_read(0, K8), None, "one read is not yet a stream");
    assert_eq!(r.on_read(K8, K8), Some((2 * K8, 128 * KIB)), "initial window right after the reads");
    assert_eq!(r.window(), 128 * KIB);
    let mut asked_to = 2 * K8 + 128 * KIB;
    let mut prefetches = 1;
    for i in 2..2000u64 {
        if let Some((start, len)) = r.on_read(i * K8, K8) {
            assert_eq!(start, asked_to, "prefetches are contiguous, never re-requested");
            assert!(start + len <= (i + 1) * K8 + 8 * 1024 * KIB, "never beyond the window");
            asked_to = start + len;
            prefetches += 1;
        }
        assert!(asked_to >= (i + 1) * K8, "the reader never runs past the prefetched data");
    }
    assert_eq!(r.window(), 8 * 1024 * KIB);
    assert!(prefetches < 2000 / 8, "prefetches are few and large: {prefetches}");
}

#[test]
fn random_reads_never_prefetch() {
    let mut r = ra();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut last_end = 0;
    for _ in 0..10_000 {
        let mut off = rng.gen_range(0..1u64 << 30) / K8 * K8;
        if off == last_end {
            off += K8;
        }
        assert_eq!(r.on_read(off, K8), None);
        assert_eq!(r.window(), 0);
        last_end = off + K8;
    }
}

#[test]
fn a_miss_collapses_the_window_and_a_new_stream_regrows_it() {
    let mut r = ra();
    for i in 0..10 {
        r.on_read(i * K8, K8);
    }
    assert!(r.window() > 128 * KIB);
    assert_eq!(r.on_read(1 << 30, K8), None, "jump elsewhere");
    assert_eq!(r.window(), 0);
    assert_eq!(r.on_read((1 << 30) + K8, K8), Some(((1 << 30) + 2 * K8, 128 * KIB)), "two reads in a row again");
    assert_eq!(r.window(), 128 * KIB);
    // Re-reading part of the previous read (unaligned records) is no miss.
    assert_eq!(r.on_read((1 << 30) + K8 + 100, 50), None);
    assert_eq!(r.window(), 256 * KIB);
}

#[test]
fn reads_arriving_out_of_order_keep_the_stream() {
    // The kernel's FUSE readahead: 128 KiB reads, several in flight,
    // served in a slightly shuffled order.
    let k128 = 128 * KIB;
    let mut r = ra();
    // The first reads come one at a time, in order; then three at a time.
    let mut order: Vec<u64> = (0..512).collect();
    for trio in order[4..].chunks_mut(3) {
        trio.reverse();
    }
    let mut asked_to = 0;
    for (n, i) in order.into_iter().enumerate() {
        if let Some((start, len)) = r.on_read(i * k128, k128) {
            assert!(start >= asked_to, "nothing asked for twice");
            asked_to = start + len;
        }
        if n > 8 {
            assert!(r.window() >= 1024 * KIB, "the window collapsed at read {n} (offset {})", i * k128);
        }
    }
    assert_eq!(r.window(), 8 * 1024 * KIB);
    // A read far behind the stream is a new stream.
    assert_eq!(r.on_read(0, k128), None);
    assert_eq!(r.window(), 0);
}

#[test]
fn start_threshold_and_disabling() {
    let mut r = Readahead::new(ReadaheadSettings { sequential_reads_to_start: 3, ..ReadaheadSettings::default() });
    assert_eq!(r.on_read(100 * K8, K8), None);
    assert_eq!(r.on_read(101 * K8, K8), None);
    assert_eq!(r.on_read(102 * K8, K8), Some((103 * K8, 128 * KIB)));
    let mut off = Readahead::new(ReadaheadSettings { max_window: 0, ..ReadaheadSettings::default() });
    assert!((0..100).all(|i| off.on_read(i * K8, K8).is_none()), "max_window 0 disables readahead");
}

fn v(size: u64) -> Validator {
    Validator { size, mtime: Time::new(1, 0), ctime: Time::new(1, 0) }
}

fn blk(b: u8, len: usize) -> Bytes {
    Bytes::from(vec![b; len])
}

#[test]
fn cache_lookup_whole_partial_and_spanning() {
    let mut c = ReadCache::new(ReadCacheSettings::default());
    c.insert(&1, 0, blk(1, 100), &v(300));
    c.insert(&1, 100, blk(2, 100), &v(300));
    c.insert(&1, 250, blk(3, 50), &v(300));
    assert_eq!(c.lookup(&1, 10, 20), Some(blk(1, 20)));
    let span = c.lookup(&1, 90, 20).unwrap();
    assert_eq!(&span[..], &[[1u8; 10], [2u8; 10]].concat()[..]);
    assert_eq!(c.lookup(&1, 150, 120), None, "hole at 200..250");
    assert_eq!(c.lookup(&2, 0, 1), None);
    assert_eq!(c.missing(&1, 150, 200), vec![(200, 50), (300, 50)]);
    assert_eq!(c.missing(&1, 0, 100), vec![]);
    assert_eq!(c.missing(&2, 5, 10), vec![(5, 10)]);
    // A newer READ of an overlapping range replaces just the overlap.
    c.insert(&1, 50, blk(9, 100), &v(300));
    assert_eq!(c.lookup(&1, 0, 200).unwrap(), [vec![1; 50], vec![9; 100], vec![2; 50]].concat());
    assert_eq!(c.bytes(), 250);
}

#[test]
fn cache_evicts_least_recently_used_across_files() {
    let mut c = ReadCache::new(ReadCacheSettings { max_bytes: 300, ..Default::default() });
    c.insert(&1, 0, blk(1, 100), &v(1000));
    c.insert(&2, 0, blk(2, 100), &v(1000));
    c.insert(&3, 0, blk(3, 100), &v(1000));
    assert!(c.lookup(&1, 0, 100).is_some()); // file 2 is now the oldest
    c.insert(&4, 0, blk(4, 100), &v(1000));
    assert_eq!(c.bytes(), 300);
    assert!(c.lookup(&2, 0, 1).is_none());
    assert!(c.lookup(&1, 0, 1).is_some() && c.lookup(&3, 0, 1).is_some() && c.lookup(&4, 0, 1).is_some());
}

#[test]
fn cache_dropped_when_the_file_changes() {
    let mut c = ReadCache::new(ReadCacheSettings::default());
    c.insert(&1, 0, blk(1, 100), &v(100));
    assert!(!c.revalidate(&1, &v(100)));
    assert!(c.lookup(&1, 0, 100).is_some());
    assert!(c.revalidate(&1, &v(200)));
    assert!(c.lookup(&1, 0, 100).is_none());
    assert_eq!(c.bytes(), 0);
    // Data read under new attributes replaces data read under old ones.
    c.insert(&1, 0, blk(1, 100), &v(100));
    c.insert(&1, 100, blk(2, 100), &v(200));
    assert!(c.lookup(&1, 0, 1).is_none());
    assert_eq!(c.bytes(), 100);
    c.invalidate(&1);
    assert_eq!(c.bytes(), 0);
}

#[test]
fn the_window_covers_two_of_the_readers_own_reads_from_the_start() {
    let mut r = ra();
    let mib = 1024 * KIB;
    assert_eq!(r.on_read(0, mib), None);
    // The whole next two reads, not a 128 KiB head of the next one.
    assert_eq!(r.on_read(mib, mib), Some((2 * mib, 2 * mib)));
    assert_eq!(r.window(), 2 * mib);
}

//! Attribute and name caches on virtual time.

use bytes::Bytes;
use proto::nfs3::{ftype3, nfstime3, wcc_attr};

use super::*;

const NOW: WallNanos = 1_700_000_000 * SEC;

fn attr(t: ftype3, size: u64, mtime_secs_ago: u64) -> Fattr {
    let m = Time::new((NOW / SEC - mtime_secs_ago) as i64, 0);
    Fattr { r#type: t, size, mtime: m, ctime: m, ..Fattr::default() }
}

fn file(size: u64, age: u64) -> Fattr {
    attr(ftype3::NF3REG, size, age)
}

#[test]
fn timeout_is_a_tenth_of_the_age_clamped_per_type() {
    let s = AttrCacheSettings::default();
    assert_eq!(s.timeout(&file(0, 10), NOW), 3 * SEC, "recently changed: acregmin");
    assert_eq!(s.timeout(&file(0, 200), NOW), 20 * SEC);
    assert_eq!(s.timeout(&file(0, 100_000), NOW), 60 * SEC, "old: acregmax");
    assert_eq!(s.timeout(&attr(ftype3::NF3DIR, 0, 10), NOW), 30 * SEC, "acdirmin");
    assert_eq!(s.timeout(&attr(ftype3::NF3DIR, 0, 450), NOW), 45 * SEC);
    // An mtime ahead of the client's clock (skew) counts as just changed.
    assert_eq!(s.timeout(&file(0, 0), NOW - 5 * SEC), 3 * SEC);
    // Times before 1970 and far past 2106 are old and new, without overflow.
    let at = |seconds| Fattr { mtime: Time::new(seconds, 0), ..file(0, 0) };
    assert_eq!(s.timeout(&at(-315_619_200), NOW), 60 * SEC);
    assert_eq!(s.timeout(&at(i64::MIN), NOW), 60 * SEC);
    assert_eq!(s.timeout(&at(i64::MAX), NOW), 3 * SEC);
    let s = AttrCacheSettings { actimeo: Some(7), ..AttrCacheSettings::default() };
    assert_eq!(s.timeout(&file(0, 100_000), NOW), 7 * SEC);
    let s = AttrCacheSettings { noac: true, ..AttrCacheSettings::default() };
    assert_eq!(s.timeout(&attr(ftype3::NF3DIR, 0, 100_000), NOW), 0);
}

#[test]
fn get_only_while_fresh() {
    let mut c = AttrCache::new(AttrCacheSettings::default());
    c.put(&1, file(10, 200), NOW);
    assert_eq!(c.get(&1, NOW).map(|a| a.size), Some(10));
    assert!(c.get(&1, NOW + 20 * SEC - 1).is_some());
    assert!(c.get(&1, NOW + 20 * SEC).is_none());
    assert_eq!(c.expires_at(&1, NOW), Some(NOW + 20 * SEC));
    assert!(c.get(&1, NOW - 1).is_none(), "the clock went backwards: do not trust");
    c.invalidate(&1);
    assert!(c.get(&1, NOW).is_none());
    for s in [
        AttrCacheSettings { noac: true, ..AttrCacheSettings::default() },
        AttrCacheSettings { actimeo: Some(0), ..AttrCacheSettings::default() },
    ] {
        let mut c = AttrCache::new(s);
        c.put(&1, file(10, 200), NOW);
        assert!(c.get(&1, NOW).is_none());
    }
}

#[test]
fn changes_are_reported_so_data_is_dropped() {
    let mut c = AttrCache::new(AttrCacheSettings::default());
    assert!(!c.put(&1, file(10, 200), NOW), "nothing cached before");
    assert!(!c.put(&1, file(10, 200), NOW + SEC));
    // Even after expiry the old attributes are compared.
    assert!(c.put(&1, file(11, 0), NOW + 100 * SEC));
    // Our own WRITE: pre-op attributes match the cache.
    // (As NFSv3 sends them.)
    let secs = (NOW / SEC) as u32;
    let t = nfstime3 { seconds: secs, nseconds: 0 };
    let before = Validator::from(&wcc_attr { size: 11, mtime: t.clone(), ctime: t });
    assert_eq!(before, Validator::from(&file(11, 0)));
    assert!(!c.put_wcc(&1, Some(&before), file(20, 0), NOW + 101 * SEC));
    // Someone else wrote in between: pre-op attributes do not match.
    assert!(c.put_wcc(&1, Some(&before), file(30, 0), NOW + 102 * SEC));
    assert!(c.put_wcc(&1, None, file(31, 0), NOW + 103 * SEC));
}

#[test]
fn close_to_open_revalidation() {
    let mut c = AttrCache::new(AttrCacheSettings::default());
    assert!(c.revalidate_on_open(&1, file(10, 200), NOW), "nothing known: cached data cannot be vouched for");
    assert!(!c.revalidate_on_open(&1, file(10, 200), NOW + SEC), "unchanged: keep the data");
    let mut changed = file(10, 0);
    changed.mtime.nseconds = 5;
    assert!(c.revalidate_on_open(&1, changed, NOW + 2 * SEC), "same size, new mtime: drop the data");
}

#[test]
fn bounded_by_max_attrs() {
    let mut c = AttrCache::new(AttrCacheSettings { max_attrs: 2, ..AttrCacheSettings::default() });
    c.put(&1, file(1, 200), NOW);
    c.put(&2, file(2, 200), NOW);
    c.put(&1, file(1, 200), NOW); // refreshed: now the most recent
    c.put(&3, file(3, 200), NOW);
    assert_eq!(c.len(), 2);
    assert!(c.get(&2, NOW).is_none());
    assert!(c.get(&1, NOW).is_some() && c.get(&3, NOW).is_some());
}

/// `find -exec ls -l` over 100 files, each stat'ed 10 times within a second:
/// one GETATTR per file instead of one per stat.
#[test]
fn repeated_stats_hit_the_cache() {
    let mut c = AttrCache::new(AttrCacheSettings::default());
    let mut getattrs = 0;
    for round in 0..10u64 {
        for f in 0..100u64 {
            let now = NOW + round * SEC / 10;
            if c.get(&f, now).is_none() {
                getattrs += 1;
                c.put(&f, file(f, 3600), now);
            }
        }
    }
    assert_eq!(getattrs, 100);
}

fn name(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[test]
fn names_valid_while_directory_unchanged_and_fresh() {
    let mut d = DirCache::new(AttrCacheSettings::default());
    let dir = attr(ftype3::NF3DIR, 4096, 1000); // timeout 60 s
    d.insert(&0, name("a"), 1, file(5, 200), &dir, NOW);
    assert_eq!(d.lookup(&0, b"a", NOW + SEC).map(|(k, a)| (k, a.size)), Some((1, 5)));
    assert!(d.lookup(&0, b"b", NOW).is_none());
    assert!(d.lookup(&0, b"a", NOW + 60 * SEC).is_none(), "directory timeout passed");
    // A GETATTR showing the directory unchanged revalidates all its names.
    d.dir_attrs(&0, &dir, NOW + 61 * SEC);
    assert!(d.lookup(&0, b"a", NOW + 62 * SEC).is_some());
    // Changed (another client created or removed something): names dropped.
    let mut changed = dir.clone();
    changed.mtime.seconds += 1;
    d.dir_attrs(&0, &changed, NOW + 63 * SEC);
    assert!(d.lookup(&0, b"a", NOW + 63 * SEC).is_none());
    assert!(d.is_empty());
}

#[test]
fn own_changes_invalidate_names() {
    let mut d = DirCache::new(AttrCacheSettings::default());
    let dir = attr(ftype3::NF3DIR, 4096, 1000);
    d.insert(&0, name("a"), 1, file(5, 200), &dir, NOW);
    d.insert(&0, name("b"), 2, file(5, 200), &dir, NOW);
    d.insert(&9, name("c"), 3, file(5, 200), &dir, NOW);
    d.remove(&0, b"a");
    assert!(d.lookup(&0, b"a", NOW).is_none());
    assert!(d.lookup(&0, b"b", NOW).is_some());
    d.invalidate_dir(&0);
    assert!(d.lookup(&0, b"b", NOW).is_none());
    assert!(d.lookup(&9, b"c", NOW).is_some(), "other directories keep their names");
    assert_eq!(d.len(), 1);
}

#[test]
fn names_bounded_with_lru_eviction() {
    let mut d = DirCache::new(AttrCacheSettings { max_names: 2, ..AttrCacheSettings::default() });
    let dir = attr(ftype3::NF3DIR, 4096, 1000);
    d.insert(&0, name("a"), 1, file(5, 200), &dir, NOW);
    d.insert(&0, name("b"), 2, file(5, 200), &dir, NOW);
    assert!(d.lookup(&0, b"a", NOW).is_some()); // "b" is now the least recently used
    d.insert(&1, name("c"), 3, file(5, 200), &dir, NOW);
    assert_eq!(d.len(), 2);
    assert!(d.lookup(&0, b"b", NOW).is_none());
    assert!(d.lookup(&0, b"a", NOW).is_some() && d.lookup(&1, b"c", NOW).is_some());
    let mut d = DirCache::new(AttrCacheSettings { noac: true, ..AttrCacheSettings::default() });
    d.insert(&0, name("a"), 1, file(5, 200), &dir, NOW);
    assert!(d.is_empty(), "noac: no name caching");
}

/// The eviction queues are lazy (a re-stored or dropped entry leaves a
/// stale place behind): a cache that keeps re-storing, removing and
/// invalidating the same few entries must still hold a bounded queue,
/// and the entries it keeps must be the right ones.
#[test]
fn eviction_queues_stay_bounded_under_churn() {
    let mut c = AttrCache::new(AttrCacheSettings { max_attrs: 8, ..AttrCacheSettings::default() });
    for i in 0..100_000u64 {
        c.put(&(i % 4), file(i, 200), NOW);
        if i % 7 == 0 {
            c.invalidate(&(i % 4));
        }
    }
    assert!(c.len() <= 4 && c.queued() <= 2 * c.len() + ORDER_SLACK + 1, "queue {} for {}", c.queued(), c.len());
    for k in 10..20u64 {
        c.put(&k, file(k, 200), NOW);
    }
    assert_eq!(c.len(), 8);
    assert!((12..20u64).all(|k| c.get(&k, NOW).is_some()), "the 8 most recently stored stay");

    let mut d = DirCache::new(AttrCacheSettings { max_names: 8, ..AttrCacheSettings::default() });
    let dir = attr(ftype3::NF3DIR, 4096, 1000);
    for i in 0..100_000u64 {
        d.insert(&(i % 3), name(&format!("n{}", i % 5)), i, file(5, 200), &dir, NOW);
        if i % 11 == 0 {
            d.remove(&(i % 3), format!("n{}", i % 5).as_bytes());
        }
        if i % 13 == 0 {
            d.invalidate_dir(&(i % 3));
        }
    }
    assert!(d.len() <= 8 && d.queued() <= 2 * d.len() + ORDER_SLACK + 1, "queue {} for {}", d.queued(), d.len());
    // A READDIRPLUS batch past the bound keeps the newest and the used.
    d.insert_all(&7, &dir, NOW, (0..4u64).map(|i| (name(&format!("old{i}")), i, file(5, 200))));
    assert!(d.lookup(&7, b"old0", NOW).is_some());
    d.insert_all(&7, &dir, NOW, (0..7u64).map(|i| (name(&format!("new{i}")), i, file(5, 200))));
    assert_eq!(d.len(), 8);
    assert!(d.lookup(&7, b"old0", NOW).is_some(), "used since queued: a second chance");
    assert!((0..7).all(|i| d.lookup(&7, format!("new{i}").as_bytes(), NOW).is_some()));
}

/// A directory listed again updates its names in place (no new queue
/// places, the listing counts as a use); a name now naming another object
/// counts as a drop, and so do invalidations and removals, but evictions
/// and refreshes do not.
#[test]
fn a_listing_again_updates_in_place_and_drops_are_counted() {
    let mut d = DirCache::new(AttrCacheSettings { max_names: 100, ..AttrCacheSettings::default() });
    let dir = attr(ftype3::NF3DIR, 4096, 1000);
    let listing =
        |size| -> Vec<(String, u64, Fattr)> { (0..50).map(|i| (format!("f{i}"), i, file(size, 200))).collect() };
    d.insert_all(&1, &dir, NOW, listing(5).iter().map(|(n, k, a)| (n.as_bytes(), *k, a.clone())));
    let (queued, drops) = (d.queued(), d.drops());
    for _ in 0..10 {
        d.insert_all(&1, &dir, NOW, listing(6).iter().map(|(n, k, a)| (n.as_bytes(), *k, a.clone())));
    }
    assert_eq!(d.queued(), queued, "a listing again queued its names again");
    assert_eq!(d.drops(), drops);
    assert_eq!(d.lookup(&1, b"f3", NOW).map(|(k, a)| (k, a.size)), Some((3, 6)), "newer attributes");
    d.insert(&1, name("f3"), 99, file(5, 200), &dir, NOW);
    assert_eq!(d.drops(), drops + 1, "a name now naming another object");
    assert_eq!(d.child(&1, b"f3", NOW), Some(99));
    d.remove(&1, b"f4");
    d.invalidate_dir(&2);
    assert_eq!(d.drops(), drops + 3);
    // Evictions are not drops.
    d.insert_all(&3, &dir, NOW, (0..200u64).map(|i| (name(&format!("g{i}")), i, file(5, 200))));
    assert!(d.len() <= 100);
    assert_eq!(d.drops(), drops + 3);
    let mut c = AttrCache::new(AttrCacheSettings { max_attrs: 10, ..AttrCacheSettings::default() });
    for f in 0..100u64 {
        c.put(&f, file(f, 3600), NOW);
    }
    assert_eq!(c.drops(), 0, "evictions and refreshes");
    c.invalidate(&5);
    c.invalidate(&500);
    assert_eq!(c.drops(), 2, "every invalidation, cached or not");
}

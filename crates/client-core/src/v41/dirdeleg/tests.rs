use bytes::Bytes;
use proto::nfs3::ftype3;
use proto::nfs4::*;
use xdr::Encoder;

use super::*;
use crate::fattr::Time;

fn name(n: &str) -> Bytes {
    Bytes::copy_from_slice(n.as_bytes())
}

/// A whole stat of a regular file, with its handle.
pub(super) fn stat(fileid: u64, size: u64, mode: u32) -> fattr4 {
    let mut e = Encoder::new();
    e.u32(1); // TYPE: NF4REG
    e.u64(size);
    e.opaque_var(format!("fh{fileid}").as_bytes());
    e.u64(fileid);
    e.u32(mode);
    e.u32(1);
    e.opaque_var(b"1000");
    e.opaque_var(b"1000");
    e.i64(1_700_000_000);
    e.u32(0);
    e.i64(1_700_000_000);
    e.u32(0);
    let attrs = [
        FATTR4_TYPE,
        FATTR4_SIZE,
        FATTR4_FILEHANDLE,
        FATTR4_FILEID,
        FATTR4_MODE,
        FATTR4_NUMLINKS,
        FATTR4_OWNER,
        FATTR4_OWNER_GROUP,
        FATTR4_TIME_METADATA,
        FATTR4_TIME_MODIFY,
    ];
    fattr4 { attrmask: attrs::bitmap(&attrs), attr_vals: e.into_bytes() }
}

/// A chmod's and a write's attributes: mode, size, mtime.
pub(super) fn changed(size: u64, mode: u32, mtime: i64) -> fattr4 {
    let mut e = Encoder::new();
    e.u64(size);
    e.u32(mode);
    e.i64(mtime);
    e.u32(0);
    fattr4 { attrmask: attrs::bitmap(&[FATTR4_SIZE, FATTR4_MODE, FATTR4_TIME_MODIFY]), attr_vals: e.into_bytes() }
}

pub(super) fn entry(n: &str, attrs: fattr4) -> notify_entry4 {
    notify_entry4 { ne_file: name(n), ne_attrs: attrs }
}

fn file(fileid: u64) -> Child {
    let a = Fattr { r#type: ftype3::NF3REG, fileid, size: 1, mode: 0o644, nlink: 1, ..Fattr::default() };
    Child { handle: Some(name(&format!("fh{fileid}"))), attrs: Some(a) }
}

/// A directory listed whole: a (fileid 1), b (2).
fn listed() -> DelegatedDir {
    let mut d = DelegatedDir::default();
    let mark = d.fill_mark();
    let dir = Fattr { r#type: ftype3::NF3DIR, fsid: 9, ..Fattr::default() };
    assert!(d.fill(mark, [(name("a"), file(1)), (name("b"), file(2))], Some(dir)));
    d
}

pub(super) fn add(n: &str, attrs: fattr4) -> DirChange {
    DirChange::Add(notify_add4 {
        nad_old_entry: vec![],
        nad_new_entry: entry(n, attrs),
        nad_new_entry_cookie: vec![],
        nad_prev_entry: vec![],
        nad_last_entry: false,
    })
}

pub(super) fn remove(n: &str) -> DirChange {
    DirChange::Remove(notify_remove4 { nrm_old_entry: entry(n, fattr4::default()), nrm_old_entry_cookie: 0 })
}

pub(super) fn rename(from: &str, to: &str) -> DirChange {
    let DirChange::Add(new) = add(to, fattr4::default()) else { unreachable!() };
    let DirChange::Remove(old) = remove(from) else { unreachable!() };
    DirChange::Rename(notify_rename4 { nrn_old_entry: old, nrn_new_entry: new })
}

fn names(d: &DelegatedDir) -> Vec<String> {
    d.listing().unwrap().iter().map(|(n, _, _)| String::from_utf8_lossy(n).into_owned()).collect()
}

#[test]
fn a_whole_listing_answers_lookups_both_ways() {
    let d = listed();
    assert_eq!(names(&d), ["a", "b"]);
    assert!(matches!(d.lookup(b"a"), Lookup::Found(h, a) if &h[..] == b"fh1" && a.fileid == 1));
    assert_eq!(d.lookup(b"zz"), Lookup::Absent);
    assert_eq!(d.child_attrs(b"fh2").map(|a| a.fileid), Some(2));
    assert_eq!(DelegatedDir::default().lookup(b"a"), Lookup::Unknown);
}

#[test]
fn an_added_name_comes_with_its_handle_and_attributes() {
    let mut d = listed();
    let t = d.apply(&[add("c", stat(3, 10, 0o600))], Ids::NUMERIC).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t.first(), Some(&Touched::Name(name("c"))));
    assert!(
        matches!(t.get(1), Some(Touched::Child { handle: Some(h), attrs: Some(a), .. }) if &h[..] == b"fh3" && a.size == 10)
    );
    assert_eq!(names(&d), ["a", "b", "c"]);
    let Lookup::Found(h, a) = d.lookup(b"c") else { panic!("c not found") };
    assert_eq!((&h[..], a.fileid, a.size, a.mode, a.uid), (&b"fh3"[..], 3, 10, 0o600, 1000));
    assert_eq!(a.fsid, 9, "the directory's file system");
}

/// ADD with an empty fattr4: the entry vanished at once, or the server
/// could not read it. The name exists; a listing needs the server.
#[test]
fn an_added_name_without_attributes_exists_unknown() {
    let mut d = listed();
    d.apply(&[add("c", fattr4::default())], Ids::NUMERIC).unwrap();
    assert_eq!(d.lookup(b"c"), Lookup::Unknown);
    assert!(d.listing().is_none());
    // Its removal then is no news.
    d.apply(&[remove("c")], Ids::NUMERIC).unwrap();
    assert_eq!(names(&d), ["a", "b"]);
}

#[test]
fn removes_and_renames_move_names() {
    let mut d = listed();
    let t = d.apply(&[remove("a"), rename("b", "z")], Ids::NUMERIC).unwrap();
    let names_touched: Vec<_> =
        t.iter().filter_map(|t| if let Touched::Name(n) = t { Some(n.clone()) } else { None }).collect();
    assert_eq!(names_touched, vec![name("a"), name("b"), name("z")]);
    assert!(
        matches!(t.last(), Some(Touched::Child { handle: Some(h), .. }) if &h[..] == b"fh2"),
        "the file under its new name"
    );
    assert_eq!(names(&d), ["z"]);
    // The renamed entry is the same file.
    assert!(matches!(d.lookup(b"z"), Lookup::Found(h, a) if &h[..] == b"fh2" && a.fileid == 2));
    assert_eq!(d.child_attrs(b"fh2").map(|a| a.fileid), Some(2));
    assert_eq!(d.child_attrs(b"fh1"), None);
}

#[test]
fn a_rename_over_a_name_replaces_it() {
    let mut d = listed();
    d.apply(&[rename("a", "b")], Ids::NUMERIC).unwrap();
    assert_eq!(names(&d), ["b"]);
    assert!(matches!(d.lookup(b"b"), Lookup::Found(h, _) if &h[..] == b"fh1"));
    assert_eq!(d.child_attrs(b"fh2"), None);
}

#[test]
fn child_and_directory_attributes_merge_into_what_was_known() {
    let mut d = listed();
    let t = d.apply(
        &[DirChange::ChildAttrs(notify_attr4 { na_changed_entry: entry("a", changed(4096, 0o600, 5)) })],
        Ids::NUMERIC,
    );
    let Touched::Child { name: n, handle, attrs: Some(a) } = &t.unwrap()[0] else { panic!("no attributes") };
    assert_eq!((&n[..], handle.as_deref()), (&b"a"[..], Some(&b"fh1"[..])));
    assert_eq!((a.size, a.mode, a.mtime, a.nlink), (4096, 0o600, Time::new(5, 0), 1));
    assert_eq!(d.child_attrs(b"fh1").map(|a| a.size), Some(4096));
    let t = d.apply(
        &[DirChange::DirAttrs(notify_attr4 { na_changed_entry: entry("", changed(3, 0o700, 6)) })],
        Ids::NUMERIC,
    );
    assert!(matches!(&t.unwrap()[0], Touched::Dir(Some(a)) if a.mode == 0o700 && a.fsid == 9));
    assert_eq!(d.dir_attrs().map(|a| a.mtime), Some(Time::new(6, 0)));
}

/// The holder's own change comes back as a notification after it already
/// read the directory again: an ADD of a name it has is the same name.
#[test]
fn an_add_of_a_known_name_is_taken_again() {
    let mut d = listed();
    d.apply(&[add("a", stat(1, 7, 0o644))], Ids::NUMERIC).unwrap();
    assert_eq!(names(&d), ["a", "b"]);
    assert_eq!(d.child_attrs(b"fh1").map(|a| a.size), Some(7));
}

#[test]
fn what_does_not_fit_drops_the_cache() {
    for bad in [
        remove("nobody"),
        rename("nobody", "x"),
        DirChange::ChildAttrs(notify_attr4 { na_changed_entry: entry("nobody", changed(1, 1, 1)) }),
    ] {
        let mut d = listed();
        assert!(matches!(d.apply(std::slice::from_ref(&bad), Ids::NUMERIC), Err(Distrust::UnknownName(_))), "{bad:?}");
        assert!(d.listing().is_none() && d.is_empty() && d.dir_attrs().is_none());
        assert_eq!(d.lookup(b"a"), Lookup::Unknown, "not trusted any more");
    }
    // Attributes that do not decode, after a change that did: nothing of
    // the notification stays.
    let mut d = listed();
    let short = fattr4 { attrmask: attrs::bitmap(&[FATTR4_SIZE]), attr_vals: Bytes::from_static(&[0, 0, 0]) };
    let r = d.apply(&[remove("a"), add("c", short)], Ids::NUMERIC);
    assert!(matches!(r, Err(Distrust::Attrs { .. })));
    assert!(d.is_empty() && !d.complete());
    // An attribute nobody asked for cannot be skipped either.
    let mut d = listed();
    let odd = fattr4 { attrmask: attrs::bitmap(&[FATTR4_ACL]), attr_vals: Bytes::from_static(&[0, 0, 0, 0]) };
    let r = d.apply(&[DirChange::ChildAttrs(notify_attr4 { na_changed_entry: entry("a", odd) })], Ids::NUMERIC);
    assert!(matches!(r, Err(Distrust::Attrs { .. })));
}

/// Without the whole listing, a name it lacks may be anywhere: changes
/// to it are no error, and the next listing reads the directory.
#[test]
fn a_partial_cache_takes_changes_to_names_it_lacks() {
    let mut d = listed();
    d.forget();
    d.apply(&[remove("a"), rename("b", "y")], Ids::NUMERIC).unwrap();
    d.apply(&[add("c", stat(3, 1, 0o644))], Ids::NUMERIC).unwrap();
    assert!(d.listing().is_none());
    assert!(matches!(d.lookup(b"c"), Lookup::Found(..)));
    assert_eq!(d.lookup(b"zz"), Lookup::Unknown);
}

/// A listing read while a notification came may say what was true
/// before it: it is not kept.
#[test]
fn a_listing_read_across_a_notification_is_not_kept() {
    let mut d = DelegatedDir::default();
    let mark = d.fill_mark();
    d.apply(&[add("c", stat(3, 1, 0o644))], Ids::NUMERIC).unwrap();
    assert!(!d.fill(mark, [(name("a"), file(1))], None));
    assert!(!d.complete());
    let mark = d.fill_mark();
    assert!(d.fill(mark, [(name("a"), file(1))], None));
    assert_eq!(names(&d), ["a"]);
}

#[test]
fn a_hard_link_keeps_the_file_known_by_handle() {
    let mut d = DelegatedDir::default();
    let mark = d.fill_mark();
    assert!(d.fill(mark, [(name("a"), file(1)), (name("l"), file(1))], None));
    d.apply(&[remove("l")], Ids::NUMERIC).unwrap();
    assert_eq!(d.child_attrs(b"fh1").map(|a| a.fileid), Some(1));
    d.apply(&[remove("a")], Ids::NUMERIC).unwrap();
    assert_eq!(d.child_attrs(b"fh1"), None);
}

mod registry {
    use super::*;
    use crate::v41::dirdelegs::{AskPolicy, DirDelegations, Notified};

    const MS: u64 = 1_000_000;

    fn policy() -> AskPolicy {
        AskPolicy { window: 2000 * MS, declined_hold: 60_000 * MS, max_held: 2 }
    }

    fn sid(n: u8) -> stateid4 {
        stateid4 { seqid: 1, other: [n; 12] }
    }

    #[test]
    fn asked_at_the_second_listing_within_the_window() {
        let mut r = DirDelegations::new(policy());
        let d = name("dir");
        assert!(!r.listed(&d, 0));
        assert!(!r.listed(&d, 3000 * MS), "too late after the first");
        assert!(r.listed(&d, 4000 * MS));
        assert!(!r.listed(&d, 4001 * MS), "already asking");
        r.declined(&d, 4002 * MS);
        assert!(!r.listed(&d, 5000 * MS) && !r.listed(&d, 5001 * MS), "declined lately");
        assert!(!r.listed(&d, 70_000 * MS));
        assert!(r.listed(&d, 70_001 * MS));
        r.granted(&d, sid(1), true);
        assert!(!r.listed(&d, 70_002 * MS), "held");
        assert!(r.usable(&d).is_some());
    }

    #[test]
    fn no_more_than_the_limit_are_held() {
        let mut r = DirDelegations::new(policy());
        for (i, n) in ["a", "b", "c"].into_iter().enumerate() {
            let d = name(n);
            r.listed(&d, 0);
            let asked = r.listed(&d, 1);
            assert_eq!(asked, i < 2, "{n}");
            if asked {
                r.granted(&d, sid(i as u8), false);
            }
        }
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn notifications_go_to_the_delegation_they_name() {
        let mut r = DirDelegations::new(policy());
        let d = name("dir");
        r.granted(&d, sid(1), true);
        let h = r.get_mut(&d).unwrap();
        let mark = h.cache.fill_mark();
        h.cache.fill(mark, [(name("a"), file(1))], None);
        assert_eq!(r.notify(&sid(2), &d, &[remove("a")], Ids::NUMERIC), Notified::NotHeld);
        assert_eq!(r.notify(&sid(1), &b"other"[..], &[remove("a")], Ids::NUMERIC), Notified::NotHeld);
        assert_eq!(r.child_attrs(b"fh1").map(|a| a.fileid), Some(1));
        assert!(matches!(r.notify(&sid(1), &d, &[remove("nobody")], Ids::NUMERIC), Notified::Dropped(_)));
        assert_eq!(r.child_attrs(b"fh1"), None);
        // Recalled: still notified until returned, no longer used.
        assert_eq!(r.recall(&sid(1)), Some(d.clone()));
        assert!(r.usable(&d).is_none());
        let applied = r.notify(&sid(1), &d, &[add("b", stat(2, 1, 0o644))], Ids::NUMERIC);
        assert!(
            matches!(&applied, Notified::Applied(t) if t.first() == Some(&Touched::Name(name("b")))),
            "{applied:?}"
        );
        assert!(r.take(&d).is_some());
        assert_eq!(r.notify(&sid(1), &d, &[remove("b")], Ids::NUMERIC), Notified::NotHeld);
        assert_eq!(r.recall(&sid(1)), None);
    }
}

//! Whatever the server does to a directory and in whatever state the
//! cache is (listed whole, dropped, partly known), applying its
//! notifications in order never panics, and a listing the cache answers
//! is exactly the server's: names, objects and modes. Notifications that
//! do not fit (a stale one, attributes that do not decode) drop the cache
//! rather than leave it wrong.

use std::collections::BTreeMap;

use bytes::Bytes;
use proptest::prelude::*;
use proto::nfs4::*;

use super::tests::{add, changed, entry, remove, rename, stat};
use super::*;

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

#[derive(Debug, Clone)]
enum Op {
    Create(usize),
    Remove(usize),
    Rename(usize, usize),
    Chmod(usize, u32),
    /// The client reads the whole directory.
    List,
    /// A notification of a change the cache already has (a REMOVE of a
    /// name the server no longer has: a listing read after it).
    Stale(usize),
    /// A notification whose attributes are these bytes.
    Garbage(usize, Vec<u8>),
    /// This client changed the directory itself.
    Forget,
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0..NAMES.len();
    prop_oneof![
        4 => name.clone().prop_map(Op::Create),
        3 => name.clone().prop_map(Op::Remove),
        3 => (name.clone(), name.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
        3 => (name.clone(), 0..0o777u32).prop_map(|(n, m)| Op::Chmod(n, m)),
        2 => Just(Op::List),
        1 => name.clone().prop_map(Op::Stale),
        1 => (name, proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(n, b)| Op::Garbage(n, b)),
        1 => Just(Op::Forget),
    ]
}

/// The server's directory: name → (fileid, mode).
type Model = BTreeMap<&'static str, (u64, u32)>;

fn child(fileid: u64, mode: u32) -> Child {
    let a = Fattr { fileid, mode, r#type: proto::nfs3::ftype3::NF3REG, ..Fattr::default() };
    Child { handle: Some(Bytes::from(format!("fh{fileid}"))), attrs: Some(a) }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn a_listing_from_the_cache_is_the_servers(ops in proptest::collection::vec(op(), 1..60)) {
        let mut server = Model::new();
        let mut d = DelegatedDir::default();
        let mut next_id = 1u64;
        for op in ops {
            let change = match op {
                Op::Create(n) if !server.contains_key(NAMES[n]) => {
                    next_id += 1;
                    server.insert(NAMES[n], (next_id, 0o644));
                    Some(add(NAMES[n], stat(next_id, 1, 0o644)))
                }
                Op::Remove(n) if server.remove(NAMES[n]).is_some() => Some(remove(NAMES[n])),
                Op::Rename(a, b) if a != b && server.contains_key(NAMES[a]) => {
                    let moved = server.remove(NAMES[a]).unwrap();
                    server.insert(NAMES[b], moved);
                    Some(rename(NAMES[a], NAMES[b]))
                }
                Op::Chmod(n, mode) if server.contains_key(NAMES[n]) => {
                    server.get_mut(NAMES[n]).unwrap().1 = mode;
                    let e = entry(NAMES[n], changed(1, mode, 7));
                    Some(DirChange::ChildAttrs(notify_attr4 { na_changed_entry: e }))
                }
                Op::List => {
                    let mark = d.fill_mark();
                    let entries = server.iter().map(|(n, (id, mode))| (Bytes::from_static(n.as_bytes()), child(*id, *mode)));
                    prop_assert!(d.fill(mark, entries, None));
                    None
                }
                Op::Stale(n) if !server.contains_key(NAMES[n]) => Some(remove(NAMES[n])),
                Op::Garbage(n, bytes) => {
                    let attrs = fattr4 { attrmask: attrs::bitmap(&[FATTR4_SIZE, FATTR4_MODE]), attr_vals: Bytes::from(bytes) };
                    // Whatever it says of the name, the server's own copy
                    // is not changed by it: only good values are kept.
                    let ok = attrs::decode(&attrs).is_ok();
                    if ok {
                        continue;
                    }
                    Some(DirChange::ChildAttrs(notify_attr4 { na_changed_entry: entry(NAMES[n], attrs) }))
                }
                Op::Forget => {
                    d.forget();
                    None
                }
                _ => None,
            };
            if let Some(c) = change {
                let before_complete = d.complete();
                let r = d.apply(std::slice::from_ref(&c), Ids::NUMERIC);
                if r.is_err() {
                    prop_assert!(d.is_empty() && !d.complete(), "a refused notification drops the cache");
                } else if let DirChange::Remove(_) = c {
                    prop_assert!(!before_complete || server.len() == d.len());
                }
            }
            if let Some(l) = d.listing() {
                let got: Vec<(&str, u64, u32)> =
                    l.iter().map(|(n, _, a)| (std::str::from_utf8(n).unwrap(), a.fileid, a.mode)).collect();
                let want: Vec<(&str, u64, u32)> = server.iter().map(|(n, (id, m))| (*n, *id, *m)).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}

//! Directory delegations between two clients of the nfsx server in
//! process: one lists a directory until it holds a delegation on it, and
//! trusts names and attributes for ten minutes; every change the other
//! client makes (create, remove, rename within and across directories,
//! chmod, a write that moves size and mtime), and every change made in
//! the export on the server's host, shows in the holder's listing and
//! stats within a second, from its cache updated in place, and a listing
//! of the unchanged directory makes no call.

use std::collections::BTreeMap;
use std::time::Duration;

mod common;

use client::{Client, ClientSettings, Fattr, Sattr};
use common::*;

fn url41(srv: &Srv) -> String {
    format!("{}?version=4.1", srv.url())
}

/// Names and attributes trusted for ten minutes.
fn trusting() -> ClientSettings {
    let mut s = ClientSettings::default();
    let a = &mut s.attr_cache;
    (a.acregmin, a.acregmax, a.acdirmin, a.acdirmax) = (600, 600, 600, 600);
    s
}

async fn listing(c: &Client, dir: &str) -> BTreeMap<String, Fattr> {
    let entries = c.readdir(dir).await.unwrap();
    entries.into_iter().map(|e| (e.name, e.attrs.expect("attributes"))).collect()
}

/// Calls `c` made so far, and its READDIRs.
fn calls(c: &Client) -> (u64, u64) {
    let s = c.stats();
    (s.ops.values().map(|o| o.count).sum(), s.ops.get("READDIR").map_or(0, |o| o.count))
}

/// Lists `dir` until the server granted a delegation on it: none comes
/// before the client's back channel answered the server's probe.
async fn delegate(c: &Client, dir: &str) {
    let v41 = c.nfs41().expect("NFSv4.1").clone();
    let fh = c.lookup(dir).await.unwrap().0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !v41.has_dir_delegation(&fh.data) {
        assert!(tokio::time::Instant::now() < deadline, "no delegation on {dir} within 5 s");
        listing(c, dir).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (at most a second and a half) until `cond` holds of the
/// holder's listing of `dir`.
async fn shows(c: &Client, dir: &str, what: &str, cond: impl Fn(&BTreeMap<String, Fattr>) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    loop {
        let l = listing(c, dir).await;
        if cond(&l) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: not seen within 1.5 s: {:?}", l.keys());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clients_changes_reach_the_holders_cache() {
    let srv = Srv::start().await;
    let other = Client::connect(&url41(&srv), ClientSettings::default()).await.unwrap();
    other.mkdir("d").await.unwrap();
    other.mkdir("e").await.unwrap();
    other.write_file("d/a", b"a").await.unwrap();
    other.write_file("d/b", b"bb").await.unwrap();
    let holder = Client::connect(&url41(&srv), trusting()).await.unwrap();
    delegate(&holder, "d").await;
    let v41 = holder.nfs41().unwrap().clone();
    let d = holder.lookup("d").await.unwrap().0;
    assert!(v41.has_dir_delegation(&d.data));

    // Unchanged: listed and looked up with no call at all.
    let first = listing(&holder, "d").await;
    let before = calls(&holder);
    assert_eq!(listing(&holder, "d").await, first);
    assert_eq!(holder.stat("d/b").await.unwrap().size, 2);
    assert!(holder.stat("d/nothing").await.is_err());
    assert_eq!(calls(&holder), before, "{:?}", holder.stats().ops);
    let (_, readdirs) = before;

    other.write_file("d/c", b"ccc").await.unwrap();
    shows(&holder, "d", "create", |l| l.get("c").is_some_and(|a| a.size == 3)).await;
    other.remove("d/a").await.unwrap();
    shows(&holder, "d", "remove", |l| !l.contains_key("a")).await;
    other.rename("d/b", "d/bb").await.unwrap();
    shows(&holder, "d", "rename", |l| !l.contains_key("b") && l.get("bb").is_some_and(|a| a.size == 2)).await;
    other.rename("d/c", "e/c").await.unwrap();
    shows(&holder, "d", "rename away", |l| !l.contains_key("c")).await;
    let (bb, was) = other.lookup("d/bb").await.unwrap();
    other.setattr_handle(&bb, Sattr { mode: Some(0o600), ..Default::default() }).await.unwrap();
    shows(&holder, "d", "chmod", |l| l.get("bb").is_some_and(|a| a.mode == 0o600)).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    other.write_file("d/bb", &[7u8; 5000]).await.unwrap();
    shows(&holder, "d", "write", |l| l.get("bb").is_some_and(|a| a.size == 5000 && a.mtime != was.mtime)).await;
    // Stats see what the listing sees.
    let a = holder.stat("d/bb").await.unwrap();
    assert_eq!((a.size, a.mode), (5000, 0o600));
    assert!(holder.stat("d/a").await.is_err() && holder.stat("d/c").await.is_err());

    // On the server's host.
    std::fs::write(srv.path("d/host"), b"from the host").unwrap();
    shows(&holder, "d", "host create", |l| l.get("host").is_some_and(|a| a.size == 13)).await;
    std::fs::remove_file(srv.path("d/host")).unwrap();
    shows(&holder, "d", "host remove", |l| !l.contains_key("host")).await;

    assert!(v41.has_dir_delegation(&d.data), "held all along");
    let (_, readdirs_now) = calls(&holder);
    assert_eq!(readdirs_now, readdirs, "every change applied in place, no listing read again");
    assert!(v41.counters().dir_notifications >= 6, "{:?}", v41.counters());

    // Unchanged again: no call.
    let now = listing(&holder, "d").await;
    let before = calls(&holder);
    assert_eq!(listing(&holder, "d").await, now);
    assert_eq!(calls(&holder), before);
    holder.shutdown().await;
    other.shutdown().await;
}

/// The holder's own changes: read back at once (its cache is read again),
/// and its delegation stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holders_own_changes_show_at_once() {
    let srv = Srv::start().await;
    let holder = Client::connect(&url41(&srv), trusting()).await.unwrap();
    holder.mkdir("d").await.unwrap();
    holder.write_file("d/a", b"a").await.unwrap();
    delegate(&holder, "d").await;
    holder.write_file("d/b", b"bb").await.unwrap();
    assert!(listing(&holder, "d").await.contains_key("b"));
    holder.remove("d/a").await.unwrap();
    assert!(!listing(&holder, "d").await.contains_key("a"));
    holder.rename("d/b", "d/c").await.unwrap();
    let l = listing(&holder, "d").await;
    assert!(l.contains_key("c") && !l.contains_key("b"), "{:?}", l.keys());
    let d = holder.lookup("d").await.unwrap().0;
    assert!(holder.nfs41().unwrap().has_dir_delegation(&d.data));
    // Once the notifications of those changes came, the listing needs no call.
    tokio::time::sleep(Duration::from_millis(300)).await;
    listing(&holder, "d").await;
    let before = calls(&holder);
    assert_eq!(listing(&holder, "d").await.keys().collect::<Vec<_>>(), ["c"]);
    assert_eq!(calls(&holder), before);
    holder.shutdown().await;
}

/// Another client renaming the delegated directory itself recalls the
/// delegation: the holder reads the directory once more and gives it
/// back, and the rename goes through within moments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_the_directory_itself_recalls_the_delegation() {
    let srv = Srv::start().await;
    let other = Client::connect(&url41(&srv), ClientSettings::default()).await.unwrap();
    other.mkdir("d").await.unwrap();
    other.write_file("d/a", b"a").await.unwrap();
    let holder = Client::connect(&url41(&srv), trusting()).await.unwrap();
    delegate(&holder, "d").await;
    let d = holder.lookup("d").await.unwrap().0;
    let v41 = holder.nfs41().unwrap().clone();
    let t = tokio::time::Instant::now();
    other.rename("d", "d2").await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "the rename waited {:?}", t.elapsed());
    assert!(!v41.has_dir_delegation(&d.data));
    assert!(v41.counters().recalls >= 1);
    assert_eq!(listing(&holder, "d2").await.keys().collect::<Vec<_>>(), ["a"]);
    holder.shutdown().await;
    other.shutdown().await;
}

//! The client over NFSv4.1 (`?version=4.1`) against the nfsx server in
//! process: the file API through a session, long compounds, opens and
//! delegations, a recall between two clients, and a session the server
//! lost.

use std::time::{Duration, Instant};

mod common;

use client::{Client, ClientSettings, OpenOptions};
use common::*;

fn url41(srv: &Srv) -> String {
    format!("{}?version=4.1", srv.url())
}

async fn connect41(srv: &Srv) -> Client {
    Client::connect(&url41(srv), ClientSettings::default()).await.unwrap()
}

/// Opens `name` for reading and writing once the server grants `c` a
/// delegation on it: the server grants none until the client's back
/// channel answered its CB_NULL probe, which a loaded machine may not
/// have done by the first OPEN.
async fn open_delegated(c: &Client, name: &str) -> client::File {
    let v41 = c.nfs41().expect("an NFSv4.1 client").clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let f = c.open(name, OpenOptions::read_write()).await.unwrap();
        if v41.has_delegation(&f.handle().data) {
            return f;
        }
        assert!(tokio::time::Instant::now() < deadline, "no delegation on {name} within 5 s");
        f.close().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_behind_then_read_back_over_a_session() {
    let srv = Srv::start().await;
    let c = connect41(&srv).await;
    assert_eq!(c.version(), "4.1");
    let data = pattern(8 << 20, 7);
    let at_mount: Vec<&str> = c.stats().ops.keys().copied().collect();
    assert!(at_mount.contains(&"EXCHANGE_ID") && at_mount.contains(&"CREATE_SESSION"), "{at_mount:?}");
    write_file(&c, "big.bin", &data).await;
    assert_eq!(std::fs::read(srv.path("big.bin")).unwrap(), data, "server file matches");
    let s = c.stats();
    let lookups = s.ops["LOOKUP"].count;
    assert_eq!(lookups, 1, "only the export's, at mount");
    assert!(s.ops["WRITE"].count <= 16, "coalesced: {:?}", s.ops["WRITE"]);
    assert!(s.ops.contains_key("COMMIT"));
    // One OPEN found or created the file, with its handle and attributes:
    // no LOOKUP, no GETATTR, no CREATE.
    assert_eq!(s.ops["OPEN"].count, 1);
    // Under the write delegation the server granted, the open is kept
    // idle for the next one rather than closed.
    assert!(s.ops.get("CLOSE").map_or(0, |c| c.count) <= 1);
    assert!(!s.ops.contains_key("CREATE"), "{:?}", s.ops.keys());
    assert_eq!(read_file(&c, "big.bin").await, data);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_operations_over_a_session() {
    let srv = Srv::start().await;
    let c = connect41(&srv).await;
    metadata_round(&c, "d").await;
    assert!(!srv.path("d").exists());
    let err = c.open("nope/x", OpenOptions::read()).await.err().unwrap();
    assert!(err.to_string().contains("NOENT"), "{err}");
    // A path several levels deep is one LOOKUP compound per uncached
    // component at most, and handles and attributes of a listing fill the
    // caches as READDIRPLUS does over NFSv3.
    std::fs::create_dir_all(srv.path("a/b/c")).unwrap();
    std::fs::write(srv.path("a/b/c/f"), b"12345").unwrap();
    assert_eq!(c.stat("a/b/c/f").await.unwrap().size, 5);
    let listed = c.readdir("a/b/c").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].attrs.as_ref().unwrap().size, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wrong_export_is_a_clear_error() {
    let srv = Srv::start().await;
    let url = format!("nfs://127.0.0.1:{}/no/such/export?version=4.1", srv.addr.port());
    let err = Client::connect(&url, ClientSettings::default()).await.err().unwrap();
    assert!(err.to_string().contains("mount of /no/such/export refused"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_callers_than_slots_wait_for_one() {
    let srv = Srv::start().await;
    for i in 0..20 {
        std::fs::write(srv.path(&format!("f{i}")), b"x").unwrap();
    }
    let mut settings = ClientSettings::default();
    settings.v41.slots = 2;
    settings.attr_cache.noac = true;
    let c = Client::connect(&url41(&srv), settings).await.unwrap();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move { c.stat(&format!("f{}", i % 20)).await.map(|a| a.size) })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflicting_open_recalls_the_delegation_within_milliseconds() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("shared"), pattern(4096, 1)).unwrap();
    let a = connect41(&srv).await;
    let b = connect41(&srv).await;
    // A reads the file and keeps a read delegation after closing it.
    assert_eq!(read_file(&a, "shared").await, pattern(4096, 1));
    let a41 = a.nfs41().unwrap();
    assert_eq!(a41.delegations_held(), 1, "{:?}", a41.counters());
    // Under the delegation, opening again needs no GETATTR to revalidate.
    let before = a.stats().ops.get("GETATTR").map_or(0, |c| c.count);
    read_file(&a, "shared").await;
    assert_eq!(a.stats().ops.get("GETATTR").map_or(0, |c| c.count), before);
    // B writes: the server recalls A's delegation, A returns it, B's OPEN
    // goes through after a retry or two.
    let t = Instant::now();
    let mut f = b.open("shared", OpenOptions::read_write()).await.unwrap();
    let took = t.elapsed();
    eprintln!("conflicting OPEN took {took:?}, {:?}", b.nfs41().unwrap().counters());
    f.write(0, b"changed").await.unwrap();
    f.close().await.unwrap();
    assert_eq!(a41.counters().recalls, 1);
    assert_eq!(a41.delegations_held(), 0);
    assert!(took < Duration::from_secs(1), "conflicting OPEN took {took:?}");
    // And A, its delegation gone, sees B's write at its next open.
    assert_eq!(&read_file(&a, "shared").await[..7], b"changed");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_under_a_write_delegation_are_flushed_before_it_goes_back() {
    let srv = Srv::start().await;
    let a = connect41(&srv).await;
    let b = connect41(&srv).await;
    let data = pattern(1 << 20, 9);
    write_file(&a, "w", &data).await;
    // The other client reads: A's delegation (if the server granted a
    // write one) is recalled and what A wrote is on the server first.
    assert_eq!(read_file(&b, "w").await, data);
}

/// mknod(2) of a regular file: the open its create made is closed, since
/// no open takes it over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_made_by_mknod_keeps_no_open() {
    let srv = Srv::start().await;
    let c = Client::connect(&format!("{}&delegations=0", url41(&srv)), ClientSettings::default()).await.unwrap();
    let root = c.root().clone();
    c.mknod_file_in(&root, "node", Default::default()).await.unwrap();
    assert_eq!(c.stats().ops["CLOSE"].count, 1);
    assert!(srv.path("node").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_and_locks_of_the_mount_api_work_over_a_session() {
    let srv = Srv::start().await;
    let c = connect41(&srv).await;
    let root = c.root().clone();
    let (dir, _) = c.mkdir_in(&root, "sub", Default::default()).await.unwrap();
    let (fh, a) = c.create_in(&dir, "f", Default::default(), true).await.unwrap();
    let mut f = c.open_handle(fh.clone(), a, OpenOptions::read_write());
    f.write(0, b"hello").await.unwrap();
    f.close().await.unwrap();
    let (_, l) = c.symlink_in(&dir, "l", b"f", Default::default()).await.unwrap();
    assert_eq!(l.r#type, proto::nfs3::ftype3::NF3LNK);
    let target = c.lookup_in(&dir, "l").await.unwrap().0;
    assert_eq!(&c.readlink_handle(&target).await.unwrap()[..], b"f");
    let linked = c.link_in(&fh, &dir, "g").await.unwrap();
    assert_eq!(linked.nlink, 2);
    c.rename_in(&dir, "g", &root, "moved").await.unwrap();
    assert_eq!(std::fs::read(srv.path("moved")).unwrap(), b"hello");
    let set = client::Sattr { size: Some(2), mode: Some(0o600), ..Default::default() };
    let after = c.setattr_handle(&fh, set).await.unwrap();
    assert_eq!((after.size, after.mode), (2, 0o600));
    let st = c.fsstat(&root).await.unwrap();
    assert!(st.tbytes > 0);
    c.remove_in(&root, "moved").await.unwrap();
    c.remove_in(&dir, "l").await.unwrap();
    c.remove_in(&dir, "f").await.unwrap();
    c.rmdir_in(&root, "sub").await.unwrap();
    assert!(!srv.path("sub").exists());
}

/// `nfstime4` has signed 64-bit seconds: a time past 2106 and one before
/// 1970 are set and read back as they are, from the server (not only the
/// client's cache) and by another client. NFSv3, whose seconds are
/// unsigned 32-bit, refuses them rather than set another time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_past_2106_and_before_1970_go_through_whole() {
    use client::{Error, Sattr, SetTime, Time, TimeRangeError};
    use std::os::unix::fs::MetadataExt;
    let srv = Srv::start().await;
    let c = connect41(&srv).await;
    let root = c.root().clone();
    let (fh, _) = c.create_in(&root, "t", Default::default(), true).await.unwrap();
    let (late, early) = (Time::new(4_294_967_296, 5), Time::new(-315_619_200, 7));
    let set = Sattr { atime: SetTime::ClientTime(early), mtime: SetTime::ClientTime(late), ..Default::default() };
    let after = c.setattr_handle(&fh, set).await.unwrap();
    assert_eq!((after.atime, after.mtime), (early, late));
    let fresh = c.getattr_fresh(&fh).await.unwrap();
    assert_eq!((fresh.atime, fresh.mtime), (early, late));
    let meta = std::fs::metadata(srv.path("t")).unwrap();
    assert_eq!((meta.mtime(), meta.mtime_nsec(), meta.atime(), meta.atime_nsec()), (4_294_967_296, 5, -315_619_200, 7));
    // A client with nothing cached learns them from the server.
    let other = connect41(&srv).await;
    let seen = other.stat("t").await.unwrap();
    assert_eq!((seen.atime, seen.mtime), (early, late));
    // And a create may set them too.
    let made = Sattr { mtime: SetTime::ClientTime(early), ..Default::default() };
    let (_, a) = c.create_in(&root, "u", made, true).await.unwrap();
    assert_eq!(a.mtime, early);
    assert_eq!(std::fs::metadata(srv.path("u")).unwrap().mtime(), -315_619_200);

    // (A file of its own: the NFSv4.1 client's delegation of "t" would
    // hold an NFSv3 SETATTR of it off.)
    let v3 = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    let (fh3, before) = v3.create_in(&root, "v", Default::default(), true).await.unwrap();
    let set = |t| Sattr { mtime: SetTime::ClientTime(t), ..Default::default() };
    match v3.setattr_handle(&fh3, set(late)).await {
        Err(Error::TimeRange(TimeRangeError::TooLate(s))) => assert_eq!(s, 4_294_967_296),
        other => panic!("a time past 2106 over NFSv3: {other:?}"),
    }
    match v3.setattr_handle(&fh3, set(early)).await {
        Err(Error::TimeRange(TimeRangeError::BeforeEpoch(s))) => assert_eq!(s, -315_619_200),
        other => panic!("a time before 1970 over NFSv3: {other:?}"),
    }
    assert_eq!(v3.getattr_fresh(&fh3).await.unwrap().mtime, before.mtime, "the refused times changed nothing");
    let max = Time::new(u32::MAX.into(), 0);
    assert_eq!(v3.setattr_handle(&fh3, set(max)).await.unwrap().mtime, max);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_server_reboot_opens_are_reclaimed_and_writes_go_on() {
    let mut srv = Srv::start().await;
    let c = connect41(&srv).await;
    let mut f = c.open("r", create()).await.unwrap();
    f.write(0, b"before ").await.unwrap();
    f.flush().await.unwrap();
    srv.restart().await;
    // The next call finds the connection gone, reconnects, learns the
    // session and the client id are gone, makes new ones and reclaims the
    // open during the server's grace period.
    f.write(7, b"after").await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(30), f.close()).await.expect("no hang");
    r.unwrap();
    assert_eq!(std::fs::read(srv.path("r")).unwrap(), b"before after");
    let n = c.nfs41().unwrap().counters();
    assert!(n.sessions_created >= 2, "{n:?}");
    assert_eq!(n.reclaims, 1, "{n:?}");
}

/// Reads `path` until the server has granted this client a delegation
/// of it. The server grants none before its CB_NULL on the client's back
/// channel has been answered, and a client quick to open after
/// CREATE_SESSION can beat that.
async fn hold_delegation(c: &Client, path: &str) {
    for _ in 0..100 {
        if c.nfs41().unwrap().counters().delegations_granted > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        read_file(c, path).await;
    }
    panic!("no delegation of {path} granted");
}

fn calls(c: &Client) -> u64 {
    c.stats().ops.iter().filter(|(op, _)| !matches!(**op, "SEQUENCE")).map(|(_, s)| s.count).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rereads_under_a_read_delegation_make_no_call() {
    let srv = Srv::start().await;
    let data = pattern(10_000, 3);
    std::fs::write(srv.path("small"), &data).unwrap();
    let c = connect41(&srv).await;
    assert_eq!(read_file(&c, "small").await, data);
    hold_delegation(&c, "small").await;
    // The first CLOSE goes out after close returns.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = calls(&c);
    for _ in 0..20 {
        assert_eq!(read_file(&c, "small").await, data);
    }
    assert_eq!(calls(&c), before, "opens, reads and closes all local: {:?}", c.stats().ops);
    assert!(c.nfs41().unwrap().counters().local_opens >= 20);
    // Another client's write recalls the delegation; the local opens
    // become nothing to return, and the next open sees the new data.
    let b = connect41(&srv).await;
    write_file(&b, "small", b"new").await;
    assert_eq!(read_file(&c, "small").await, b"new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_open_under_a_delegation_stays_open_through_its_recall() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("held"), pattern(8192, 4)).unwrap();
    let a = connect41(&srv).await;
    read_file(&a, "held").await;
    hold_delegation(&a, "held").await;
    // Opened locally, under the delegation.
    let mut f = a.open("held", OpenOptions::read()).await.unwrap();
    let mut buf = vec![0u8; 100];
    f.read(0, &mut buf).await.unwrap();
    // B's write open recalls it: A's open becomes an open on the server
    // (CLAIM_DELEG_CUR_FH) before the delegation goes back.
    let b = connect41(&srv).await;
    let mut w = b.open("held", OpenOptions::read_write()).await.unwrap();
    w.write(0, b"B").await.unwrap();
    w.close().await.unwrap();
    // A's open still works: a READ on its own open stateid sees B's byte.
    assert_eq!(f.read(0, &mut buf[..1]).await.unwrap(), 1);
    f.close().await.unwrap();
    assert_eq!(a.nfs41().unwrap().counters().recalls, 1);
    assert_eq!(&read_file(&a, "held").await[..1], b"B");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_range_locks_exclude_other_clients_and_waiters_get_them_when_released() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("locked"), pattern(4096, 1)).unwrap();
    locks_exclude_other_clients(&connect41(&srv).await, &connect41(&srv).await).await;
}

/// A small file written whole (`write_file`) is one COMPOUND: OPEN with
/// create, WRITE, CLOSE; read back from the cache it filled; an existing
/// file is truncated by the OPEN itself; a file larger than `wsize` goes
/// the usual way. Over NFSv3 the same call opens, writes and closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_file_written_whole_is_one_compound() {
    let srv = Srv::start().await;
    let c = connect41(&srv).await;
    let calls = |c: &Client| c.stats().ops.values().map(|o| o.count).sum::<u64>();
    c.stat("").await.unwrap(); // the directory's attributes, cached
    let before = calls(&c);
    c.write_file("small", b"one round trip").await.unwrap();
    assert_eq!(calls(&c) - before, 1, "{:?}", c.stats().ops.keys());
    assert_eq!(std::fs::read(srv.path("small")).unwrap(), b"one round trip");
    let before = calls(&c);
    assert_eq!(read_file(&c, "small").await, b"one round trip");
    assert!(calls(&c) - before <= 2, "served from the cache the write filled");
    c.write_file("small", b"short").await.unwrap();
    assert_eq!(std::fs::read(srv.path("small")).unwrap(), b"short", "truncated");
    c.write_file("empty", b"").await.unwrap();
    assert_eq!(std::fs::metadata(srv.path("empty")).unwrap().len(), 0);
    let big = pattern(3 << 20, 4);
    c.write_file("big", &big).await.unwrap();
    assert_eq!(std::fs::read(srv.path("big")).unwrap(), big);
    // An open of the same file by another user keeps working: the
    // one-shot open is an open owner of its own.
    let mut f = c.open("small", OpenOptions::read_write()).await.unwrap();
    c.write_file("small", b"again").await.unwrap();
    f.write(5, b"!").await.unwrap();
    f.close().await.unwrap();
    assert_eq!(std::fs::read(srv.path("small")).unwrap(), b"again!");
    assert!(c.write_file("no/such/dir/f", b"x").await.is_err());
    let v3 = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    v3.write_file("over-v3", b"three calls").await.unwrap();
    assert_eq!(std::fs::read(srv.path("over-v3")).unwrap(), b"three calls");
}

/// After a lock, data cached under attributes that did not change stays
/// (the GETATTR rides in the LOCK's compound; the server's times are
/// nanosecond-fine); a change made by another client meanwhile is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_keeps_the_cache_of_an_unchanged_file() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("f"), pattern(4096, 3)).unwrap();
    let url = format!("{}&delegations=0", url41(&srv));
    let c = Client::connect(&url, ClientSettings::default()).await.unwrap();
    let count = |op: &str| c.stats().ops.get(op).map_or(0, |o| o.count);
    let mut f = c.open("f", OpenOptions::read_write()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    f.read(0, &mut buf).await.unwrap();
    let (reads, getattrs) = (count("READ"), count("GETATTR"));
    for _ in 0..5 {
        assert_eq!(f.lock(1, 0, u64::MAX, false, false).await.unwrap(), None);
        f.read(0, &mut buf).await.unwrap();
        assert_eq!(buf, pattern(4096, 3));
        f.unlock(1, 0, u64::MAX).await.unwrap();
    }
    assert_eq!((count("READ"), count("GETATTR")), (reads, getattrs), "no READ, no GETATTR of its own");
    // Another writer between two locks: read again.
    std::thread::sleep(Duration::from_millis(5));
    std::fs::write(srv.path("f"), pattern(4096, 9)).unwrap();
    f.lock(1, 0, u64::MAX, false, false).await.unwrap();
    f.read(0, &mut buf).await.unwrap();
    assert_eq!(buf, pattern(4096, 9));
    assert!(count("READ") > reads);
    f.unlock(1, 0, u64::MAX).await.unwrap();
    f.close().await.unwrap();
}

/// The last writer of a file that readers still hold open downgrades the
/// open to reading (OPEN_DOWNGRADE); the readers go on reading, and the
/// last close CLOSEs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_writer_downgrades_the_open_to_reading() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("f"), b"0123456789").unwrap();
    let c = Client::connect(&format!("{}&delegations=0", url41(&srv)), ClientSettings::default()).await.unwrap();
    let count = |op: &str| c.stats().ops.get(op).map_or(0, |o| o.count);
    let mut reader = c.open("f", OpenOptions::read()).await.unwrap();
    let mut writer = c.open("f", OpenOptions::read_write()).await.unwrap();
    writer.write(0, b"A").await.unwrap();
    writer.close().await.unwrap();
    assert_eq!((count("OPEN_DOWNGRADE"), count("CLOSE")), (1, 0));
    let mut buf = [0u8; 10];
    reader.read(0, &mut buf).await.unwrap();
    assert_eq!(&buf, b"A123456789");
    reader.close().await.unwrap();
    // A reader's CLOSE goes out after close returns.
    for _ in 0..100 {
        if count("CLOSE") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(count("CLOSE"), 1);
    // A writer again after the downgrade: the open is upgraded by OPEN.
    let mut r2 = c.open("f", OpenOptions::read()).await.unwrap();
    let mut w2 = c.open("f", OpenOptions::read_write()).await.unwrap();
    w2.write(1, b"B").await.unwrap();
    w2.close().await.unwrap();
    r2.read(0, &mut buf).await.unwrap();
    r2.close().await.unwrap();
    assert_eq!(std::fs::read(srv.path("f")).unwrap(), b"AB23456789");
}

/// Under a write delegation locks are taken on the client, without a call
/// (RFC 8881 section 10.4.2), its own lock owners arbitrated there; when
/// the delegation is recalled, the locks are taken at the server first,
/// so another client finds them in its way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_under_a_write_delegation_are_local_until_it_is_recalled() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("f"), pattern(4096, 1)).unwrap();
    let a = connect41(&srv).await;
    // nfsx grants a write delegation to a lone writer.
    let mut fa = open_delegated(&a, "f").await;
    fa.write(0, b"a").await.unwrap();
    let v41 = a.nfs41().unwrap().clone();
    assert!(v41.has_delegation(&fa.handle().data));
    let count = |c: &Client, op: &str| c.stats().ops.get(op).map_or(0, |o| o.count);
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None);
    let c = fa.test_lock(2, 50, 1, false).await.unwrap().expect("owner 1's lock");
    assert_eq!((c.offset, c.length, c.write), (0, 100, true));
    assert!(fa.lock(2, 10, 1, false, false).await.unwrap().is_some());
    assert_eq!(fa.lock(2, 100, 10, true, false).await.unwrap(), None, "beside it");
    assert_eq!((count(&a, "LOCK"), count(&a, "LOCKT")), (0, 0), "no call under the delegation");
    assert!(v41.counters().local_locks >= 3);
    fa.unlock(1, 0, 100).await.unwrap();
    assert_eq!(fa.lock(2, 0, 100, true, false).await.unwrap(), None);
    // A waiter of this client gets the lock once owner 2 lets go.
    let mut fa2 = a.open("f", OpenOptions::read_write()).await.unwrap();
    let waiter = tokio::spawn(async move {
        let r = fa2.lock(3, 0, 1, true, true).await.unwrap();
        (r, fa2)
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    fa.unlock(2, 0, 100).await.unwrap();
    let (r, mut fa2) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap();
    assert_eq!(r, None);
    assert_eq!((count(&a, "LOCK"), count(&a, "LOCKU")), (0, 0));
    // Another client: its OPEN recalls the delegation; the locks of
    // owners 2 and 3 reach the server before the delegation goes back.
    let b = connect41(&srv).await;
    let mut fb = b.open("f", OpenOptions::read_write()).await.unwrap();
    let c = fb.test_lock(9, 0, 1, false).await.unwrap().expect("owner 3's lock, now at the server");
    assert!(c.write);
    assert!(fb.test_lock(9, 100, 1, false).await.unwrap().is_some(), "owner 2's");
    assert!(count(&a, "LOCK") >= 2);
    // And their release goes to the server too.
    fa2.unlock(3, 0, u64::MAX).await.unwrap();
    fa.unlock(2, 0, u64::MAX).await.unwrap();
    assert_eq!(fb.lock(9, 0, 110, true, false).await.unwrap(), None);
    fa2.close().await.unwrap();
    fb.unlock(9, 0, u64::MAX).await.unwrap();
    fb.close().await.unwrap();
    fa.close().await.unwrap();
}

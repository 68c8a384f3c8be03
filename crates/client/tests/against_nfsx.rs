//! The client against the nfsx server, in process, over loopback TCP:
//! discovery through the server's portmapper, the file API with
//! write-behind and readahead, metadata operations, several connections,
//! errors for a wrong export and for a server that goes away.

use std::time::{Duration, Instant};

mod common;

use client::{Client, ClientSettings, OpenOptions};
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_behind_then_read_back() {
    let srv = Srv::start().await;
    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    let data = pattern(8 << 20, 7);
    let mut f = c.open("big.bin", create()).await.unwrap();
    for (i, chunk) in data.chunks(8192).enumerate() {
        f.write((i * 8192) as u64, chunk).await.unwrap();
    }
    f.close().await.unwrap();
    assert_eq!(std::fs::read(srv.path("big.bin")).unwrap(), data, "server file matches");
    let s = c.stats();
    let writes = s.ops["WRITE"].count;
    assert!(writes <= 16, "8 KiB writes coalesced into large WRITEs, got {writes}");
    assert!(s.ops.contains_key("COMMIT"), "unstable writes committed on close");

    assert_eq!(read_file(&c, "big.bin").await, data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_operations() {
    let srv = Srv::start().await;
    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    metadata_round(&c, "d").await;
    assert!(!srv.path("d").exists());
    let err = c.open("nope/x", OpenOptions { read: true, ..Default::default() }).await.err().unwrap();
    assert!(err.to_string().contains("NOENT"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_connections_and_sync_writes() {
    let srv = Srv::start().await;
    let settings = ClientSettings { nconnect: 3, ..Default::default() };
    let c = Client::connect(&srv.url_v3(), settings).await.unwrap();
    let mut f = c.open("s.bin", OpenOptions { sync: true, ..create() }).await.unwrap();
    f.write(0, &pattern(100_000, 1)).await.unwrap();
    // O_SYNC: on disk before close, no COMMIT needed.
    assert_eq!(std::fs::read(srv.path("s.bin")).unwrap(), pattern(100_000, 1));
    f.close().await.unwrap();
    assert!(!c.stats().ops.contains_key("COMMIT"));
}

/// `direct_writes`: every write is its own UNSTABLE WRITE, sent before
/// `write` returns, and close COMMITs them; over both protocol versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_writes_go_out_at_once_and_are_committed_at_close() {
    let srv = Srv::start().await;
    for (url, name) in [(srv.url_v3(), "d3.bin"), (format!("{}?version=4.1", srv.url()), "d41.bin")] {
        let c = Client::connect(&url, ClientSettings { direct_writes: true, ..Default::default() }).await.unwrap();
        let data = pattern(64 * 4096, 3);
        let mut f = c.open(name, create()).await.unwrap();
        // Backwards, so nothing could be gathered into one WRITE.
        for i in (0..64).rev() {
            f.write(i * 4096, &data[i as usize * 4096..(i as usize + 1) * 4096]).await.unwrap();
        }
        assert_eq!(std::fs::read(srv.path(name)).unwrap(), data, "at the server before close");
        assert!(!c.stats().ops.contains_key("COMMIT"), "{url}: nothing committed before close");
        f.close().await.unwrap();
        let s = c.stats();
        assert_eq!(s.ops["WRITE"].count, 64, "{url}: one WRITE per write");
        assert_eq!(s.ops["COMMIT"].count, 1, "{url}: one COMMIT at close");
    }
}

/// Large READs go out as the file's bytes from the page cache after the
/// reply (sendfile) over NFSv3 and NFSv4.1 alike: every READ is one (no
/// data cache) and the file, its last partial word and the padding after
/// it included, arrives as it is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_reads_sent_from_the_file_arrive_whole() {
    let srv = Srv::start().await;
    let data = pattern((3 << 20) + 5, 11);
    std::fs::write(srv.path("r.bin"), &data).unwrap();
    let mut settings = ClientSettings::default();
    settings.read_cache.max_bytes = 0;
    settings.readahead.max_window = 0;
    for url in [srv.url_v3(), format!("{}?version=4.1", srv.url())] {
        let c = Client::connect(&url, settings.clone()).await.unwrap();
        let back = read_file_in(&c, "r.bin", 1 << 20).await;
        assert!(back == data, "{url}: {} bytes read back differ from the file's {}", back.len(), data.len());
        assert!(c.stats().ops["READ"].count >= 4, "{url}: the reads went to the server");
    }
}

/// Four large READs in flight on one connection: the reader waits for
/// each reply's rest (`reply_lowat_max`) while the others are outstanding,
/// and every reply still arrives whole, the short last one included, over
/// NFSv3 and NFSv4.1, with the mark and without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_reads_in_flight_together_arrive_whole() {
    let srv = Srv::start().await;
    let data = std::sync::Arc::new(pattern((12 << 20) + 5, 13));
    std::fs::write(srv.path("m.bin"), &*data).unwrap();
    for lowat in [1 << 20, 0] {
        let mut settings = ClientSettings { reply_lowat_max: lowat, ..Default::default() };
        settings.read_cache.max_bytes = 0;
        settings.readahead.max_window = 0;
        for url in [srv.url_v3(), format!("{}?version=4.1", srv.url())] {
            let c = Client::connect(&url, settings.clone()).await.unwrap();
            let mut tasks = Vec::new();
            for t in 0..4u64 {
                let (c, data) = (c.clone(), data.clone());
                tasks.push(tokio::spawn(async move {
                    let mut f = c.open("m.bin", OpenOptions { read: true, ..Default::default() }).await.unwrap();
                    let mut buf = vec![0u8; 1 << 20];
                    // Chunks t, t+4, t+8, ...: the four tasks cover the file.
                    let mut at = t << 20;
                    while (at as usize) < data.len() {
                        let n = f.read(at, &mut buf).await.unwrap();
                        let end = (at as usize + (1 << 20)).min(data.len());
                        assert!(buf[..n] == data[at as usize..end], "chunk at {at} differs");
                        at += 4 << 20;
                    }
                    f.close().await.unwrap();
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            assert!(c.stats().ops["READ"].count >= 13, "{url}: every chunk went to the server");
        }
    }
}

/// A server that restarts between a direct write and its COMMIT may have
/// lost it; the client keeps no copy to send again, so close says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_writes_across_a_server_restart_are_reported_at_close() {
    let mut srv = Srv::start().await;
    let settings = ClientSettings { direct_writes: true, reconnect_timeout_ms: 20_000, ..Default::default() };
    let c = Client::connect(&srv.url_v3(), settings).await.unwrap();
    let mut f = c.open("r.bin", create()).await.unwrap();
    f.write(0, &pattern(8192, 5)).await.unwrap();
    srv.restart().await;
    let err = f.close().await.expect_err("a COMMIT with another verifier fails the close");
    assert!(err.to_string().contains("restarted"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_export_is_a_clear_error() {
    let srv = Srv::start().await;
    let port = srv.addr.port();
    let err = Client::connect(&format!("nfs://127.0.0.1:{port}/no/such/export"), ClientSettings::default())
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("mount of /no/such/export refused"), "{err}");
    let err = Client::connect("nfs://127.0.0.1:1/x", ClientSettings::default()).await.err().unwrap();
    assert!(err.to_string().contains("cannot reach"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_gone_mid_run_fails_calls_without_hanging() {
    let mut srv = Srv::start().await;
    let settings = ClientSettings { reconnect_timeout_ms: 500, ..Default::default() };
    let c = Client::connect(&srv.url_v3(), settings).await.unwrap();
    let mut f = c.open("f", create()).await.unwrap();
    f.write(0, &pattern(1 << 20, 3)).await.unwrap();
    srv.kill();
    let r = tokio::time::timeout(Duration::from_secs(20), async {
        f.write(1 << 20, &pattern(1 << 20, 4)).await?;
        f.flush().await
    })
    .await
    .expect("no hang");
    assert!(r.is_err(), "the lost server is reported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readahead_grows_on_sequential_and_stays_off_on_random_reads() {
    let srv = Srv::start().await;
    let data = pattern(8 << 20, 5);
    std::fs::write(srv.path("r.bin"), &data).unwrap();
    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    assert_eq!(read_file(&c, "r.bin").await, data);
    let reads = c.stats().ops["READ"].count;
    assert!(reads < 40, "64 KiB reads served by large prefetches, got {reads} READs for 128 calls");

    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    let mut f = c.open("r.bin", OpenOptions { read: true, ..Default::default() }).await.unwrap();
    let mut buf = vec![0u8; 4096];
    for i in 0..50u64 {
        let off = (i * 7919 % 2000) * 4096;
        assert_eq!(f.read(off, &mut buf).await.unwrap(), 4096);
        assert_eq!(&buf[..], &data[off as usize..off as usize + 4096]);
    }
    let r = c.stats().ops["READ"];
    assert_eq!(r.count, 50, "random reads fetch exactly what is asked");
    assert!(r.bytes_received < 50 * (4096 + 200), "no wasted readahead: {} bytes", r.bytes_received);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ls_l_after_readdir_is_served_from_the_caches() {
    let srv = Srv::start().await;
    std::fs::create_dir(srv.path("t")).unwrap();
    for i in 0..100 {
        std::fs::write(srv.path(&format!("t/{i}")), b"abc").unwrap();
    }
    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    let entries = c.readdir("t").await.unwrap();
    assert_eq!(entries.len(), 100);
    let before = c.stats();
    for e in &entries {
        assert_eq!(c.stat(&format!("t/{}", e.name)).await.unwrap().size, 3);
    }
    let after = c.stats();
    let calls = |s: &client_core::stats::Stats| s.ops.values().map(|c| c.count).sum::<u64>();
    assert_eq!(calls(&after), calls(&before), "stat of every entry after READDIRPLUS costs no call");
}

/// Stats of the files of one deep directory walk its path once; a rename
/// or removal of a directory on that path by this client ends the kept
/// walk at once, so the old path stops working and the new one works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_walk_ends_when_this_client_changes_its_path() {
    let srv = Srv::start().await;
    std::fs::create_dir_all(srv.path("a/b/c/d")).unwrap();
    for i in 0..20 {
        std::fs::write(srv.path(&format!("a/b/c/d/{i}")), b"abc").unwrap();
    }
    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    let calls = |c: &Client| c.stats().ops.values().map(|c| c.count).sum::<u64>();
    for dir in ["a", "a/b", "a/b/c", "a/b/c/d"] {
        c.readdir(dir).await.unwrap();
    }
    let before = calls(&c);
    for _ in 0..3 {
        for i in 0..20 {
            assert_eq!(c.stat(&format!("a/b/c/d/{i}")).await.unwrap().size, 3);
        }
    }
    assert_eq!(calls(&c), before, "every stat answered from the caches");
    c.rename("a/b/c", "a/b/moved").await.unwrap();
    assert!(c.stat("a/b/c/d/0").await.is_err(), "the old path still led somewhere");
    assert_eq!(c.stat("a/b/moved/d/7").await.unwrap().size, 3);
    c.remove("a/b/moved/d/7").await.unwrap();
    assert!(c.stat("a/b/moved/d/7").await.is_err(), "a removed file was still found");
    assert_eq!(c.stat("a/b/moved/d/8").await.unwrap().size, 3);
    c.rename("a/b/moved/d", "a/d2").await.unwrap();
    assert!(c.stat("a/b/moved/d/8").await.is_err());
    assert_eq!(c.stat("a/d2/8").await.unwrap().size, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rereads_of_an_unchanged_file_are_served_from_the_data_cache() {
    let srv = Srv::start().await;
    let data = pattern(100_000, 8);
    std::fs::write(srv.path("d"), &data).unwrap();
    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    assert_eq!(read_file(&c, "d").await, data);
    // A READ read ahead may still be on its way back after the close.
    let mut reads = c.stats().ops["READ"].count;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = c.stats().ops["READ"].count;
        if now == reads {
            break;
        }
        reads = now;
    }
    let getattrs = c.stats().ops["GETATTR"].count;
    for _ in 0..10 {
        assert_eq!(read_file(&c, "d").await, data);
    }
    // Close-to-open: one GETATTR per open finds the file unchanged, and
    // its data comes from the cache.
    assert_eq!(c.stats().ops["READ"].count, reads);
    assert_eq!(c.stats().ops["GETATTR"].count, getattrs + 10);
    // Changed behind the client's back: the next open drops the data.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(srv.path("d"), b"changed").unwrap();
    assert_eq!(read_file(&c, "d").await, b"changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_range_locks_over_nfsv3_go_through_the_lock_manager() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("locked"), pattern(4096, 1)).unwrap();
    let a = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    let b = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    assert!(a.locks_at_server());
    locks_exclude_other_clients(&a, &b).await;
    let s = a.stats();
    assert!(s.ops["NLM_LOCK"].count >= 1 && s.ops["NLM_UNLOCK"].count >= 1, "{:?}", s.ops.keys());
    assert!(b.stats().ops["NLM_TEST"].count >= 1);
    // Unlocking what an owner never locked sends nothing.
    let before = a.stats().ops["NLM_UNLOCK"].count;
    a.unlock_handle(&a.lookup("locked").await.unwrap().0, 99, (0, u64::MAX)).await.unwrap();
    assert_eq!(a.stats().ops["NLM_UNLOCK"].count, before);
}

/// Without `version` in the URL the client speaks NFSv4.2 where the server
/// offers it, then NFSv4.1, then NFSv3 (no NFS version 4 program, or
/// neither minor version 1 nor 2), as the Linux client negotiates; a
/// version asked for by name is not negotiated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_version_the_highest_offered_is_spoken() {
    use server_core::NfsVersion::{V3, V40, V41, V42};
    let cases = [
        (vec![V3, V40, V41, V42], "4.2"),
        (vec![V3, V40, V41], "4.1"),
        (vec![V41], "4.1"),
        (vec![V42], "4.2"),
        (vec![V3, V40], "3"),
        (vec![V3], "3"),
    ];
    for (offered, spoken) in cases {
        let srv = Srv::start_offering(&offered).await;
        let c = Client::connect(&srv.url(), ClientSettings::default()).await.unwrap();
        assert_eq!(c.version(), spoken, "server offering {offered:?}");
        write_file(&c, "f", b"negotiated").await;
        assert_eq!(read_file(&c, "f").await, b"negotiated");
        c.shutdown().await;
    }
    let srv = Srv::start_offering(&[V3]).await;
    let err = Client::connect(&format!("{}?version=4.1", srv.url()), ClientSettings::default()).await.err().unwrap();
    assert!(err.to_string().contains("version not available"), "{err}");
    let srv = Srv::start_offering(&[V41]).await;
    assert!(Client::connect(&srv.url_v3(), ClientSettings::default()).await.is_err());
    let err = Client::connect(&format!("{}?version=4.2", srv.url()), ClientSettings::default()).await.err().unwrap();
    assert!(err.to_string().contains("MINOR_VERS_MISMATCH"), "{err}");
}

/// Over NFSv3 the attributes come from a GETATTR after the NLM LOCK: an
/// unchanged file keeps its cached data, a changed one is read again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_over_nfsv3_keeps_the_cache_of_an_unchanged_file() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("f"), pattern(4096, 3)).unwrap();
    let c = Client::connect(&srv.url_v3(), ClientSettings::default()).await.unwrap();
    let count = |op: &str| c.stats().ops.get(op).map_or(0, |o| o.count);
    let mut f = c.open("f", OpenOptions::read_write()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    f.read(0, &mut buf).await.unwrap();
    let reads = count("READ");
    for _ in 0..5 {
        f.lock(1, 0, u64::MAX, false, false).await.unwrap();
        f.read(0, &mut buf).await.unwrap();
        f.unlock(1, 0, u64::MAX).await.unwrap();
    }
    assert_eq!(count("READ"), reads);
    std::thread::sleep(Duration::from_millis(5));
    std::fs::write(srv.path("f"), pattern(4096, 9)).unwrap();
    f.lock(1, 0, u64::MAX, false, false).await.unwrap();
    f.read(0, &mut buf).await.unwrap();
    assert_eq!(buf, pattern(4096, 9));
    f.unlock(1, 0, u64::MAX).await.unwrap();
    // keep_after_lock = false: every lock drops the data.
    let mut s = ClientSettings::default();
    s.read_cache.keep_after_lock = false;
    let c2 = Client::connect(&srv.url_v3(), s).await.unwrap();
    let mut g = c2.open("f", OpenOptions::read_write()).await.unwrap();
    g.read(0, &mut buf).await.unwrap();
    let before = c2.stats().ops["READ"].count;
    g.lock(2, 0, u64::MAX, false, false).await.unwrap();
    g.read(0, &mut buf).await.unwrap();
    assert!(c2.stats().ops["READ"].count > before);
    g.unlock(2, 0, u64::MAX).await.unwrap();
    g.close().await.unwrap();
    f.close().await.unwrap();
}

/// A blocked NFSv3 lock waits for the server's NLM_GRANTED rather than
/// asking again: the waiter is woken within a round trip of the unlock,
/// with one LOCK sent (`block` set) and one GRANTED received. The clients
/// register their lock service with the server's own portmapper, which
/// keeps registrations from this host aside for its calls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_nfsv3_lock_is_granted_by_callback() {
    // A GRANTED not acknowledged is given up at once, the lock released:
    // B must still hold it after that time.
    let srv = Srv::start_tuned(&server_core::NfsVersion::ALL, |s| {
        s.core.nlm.callback_timeout_ms = 200;
        s.core.nlm.grant_retries = 1;
    })
    .await;
    std::fs::write(srv.path("locked"), b"x").unwrap();
    let mut settings = ClientSettings::default();
    settings.nlm.portmap = srv.addr;
    let a = Client::connect(&srv.url_v3(), settings.clone()).await.unwrap();
    let b = Client::connect(&srv.url_v3(), settings.clone()).await.unwrap();
    let mut fa = a.open("locked", OpenOptions::read_write()).await.unwrap();
    let mut fb = b.open("locked", OpenOptions::read_write()).await.unwrap();
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None);
    let service = client::lockd::LockService::get(settings.nlm.listen).unwrap();
    let grants = service.counts().0;
    let (woken_tx, woken_rx) = tokio::sync::oneshot::channel();
    let waiter = tokio::spawn(async move {
        let r = fb.lock(7, 0, 100, true, true).await.unwrap();
        let _ = woken_tx.send(Instant::now());
        (r, fb)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let locks_before = b.stats().ops["NLM_LOCK"].count;
    let unlocked = Instant::now();
    fa.unlock(1, 0, 100).await.unwrap();
    let woken = tokio::time::timeout(Duration::from_secs(5), woken_rx).await.unwrap().unwrap();
    let (r, mut fb) = waiter.await.unwrap();
    assert_eq!(r, None);
    let latency = woken.duration_since(unlocked);
    assert!(latency < Duration::from_millis(50), "woken {latency:?} after the unlock");
    // One blocked LOCK in all: nothing asked again while waiting.
    assert_eq!(b.stats().ops["NLM_LOCK"].count, 1, "b asked again");
    assert_eq!(locks_before, 1);
    // (The service is the process's: other tests' grants count too.)
    assert!(service.counts().0 > grants);
    // B holds it, its GRANTED acknowledged: A's try is refused.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(fa.lock(1, 0, 1, true, false).await.unwrap().is_some());
    fb.unlock(7, 0, u64::MAX).await.unwrap();
    fb.close().await.unwrap();
    fa.close().await.unwrap();
}

/// A blocked NFSv3 lock whose caller gives up (an interrupted F_SETLKW:
/// the future dropped) sends NLM CANCEL: the server forgets the request,
/// so the unlock grants nothing to B, and A can lock again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_nfsv3_lock_given_up_is_cancelled() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("locked"), b"x").unwrap();
    let mut settings = ClientSettings::default();
    settings.nlm.portmap = srv.addr;
    let a = Client::connect(&srv.url_v3(), settings.clone()).await.unwrap();
    let b = Client::connect(&srv.url_v3(), settings.clone()).await.unwrap();
    let mut fa = a.open("locked", OpenOptions::read_write()).await.unwrap();
    let mut fb = b.open("locked", OpenOptions::read_write()).await.unwrap();
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None);
    let gave_up = tokio::time::timeout(Duration::from_millis(300), fb.lock(7, 0, 100, true, true)).await;
    assert!(gave_up.is_err(), "B was not made to wait");
    let cancels = |c: &Client| c.stats().ops.get("NLM_CANCEL").map_or(0, |s| s.count);
    let t = Instant::now();
    while cancels(&b) == 0 {
        assert!(t.elapsed() < Duration::from_secs(5), "no CANCEL sent");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Had the server kept B's request, the unlock would hand the lock to
    // B first, and A's lock right after it would be refused.
    fa.unlock(1, 0, 100).await.unwrap();
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None, "the lock went to B");
    assert!(fb.lock(7, 0, 1, true, false).await.unwrap().is_some());
    fa.unlock(1, 0, 100).await.unwrap();
    fb.close().await.unwrap();
    fa.close().await.unwrap();
}

/// NFSv3 locks survive a server restart: the restarted server's status
/// monitor tells the client (SM_NOTIFY, to the lock service registered
/// with the server's portmapper, which keeps that registration in its
/// state directory), the client reclaims in the grace period, and
/// another client finds the lock held, during the grace period and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfsv3_locks_are_reclaimed_after_a_server_restart() {
    let mut srv = Srv::start().await;
    std::fs::write(srv.path("locked"), b"x").unwrap();
    let mut settings = ClientSettings::default();
    settings.nlm.portmap = srv.addr;
    let a = Client::connect(&srv.url_v3(), settings.clone()).await.unwrap();
    let mut fa = a.open("locked", OpenOptions::read_write()).await.unwrap();
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None);
    let service = client::lockd::LockService::get(settings.nlm.listen).unwrap();
    let notifies = service.counts().1;
    srv.restart().await;
    let b = Client::connect(&srv.url_v3(), settings.clone()).await.unwrap();
    let mut fb = b.open("locked", OpenOptions::read_write()).await.unwrap();
    let t = Instant::now();
    while service.counts().1 == notifies {
        assert!(t.elapsed() < Duration::from_secs(10), "no SM_NOTIFY from the restarted server");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // B's try waits out the grace period (3 s here), then finds A's
    // reclaimed lock in its way.
    let c = fb.lock(7, 0, 1, true, false).await.unwrap().expect("A's lock, reclaimed");
    assert_eq!((c.offset, c.length, c.write), (0, 100, true));
    fa.unlock(1, 0, 100).await.unwrap();
    assert_eq!(fb.lock(7, 0, 1, true, false).await.unwrap(), None);
    fb.unlock(7, 0, u64::MAX).await.unwrap();
}

/// Blocked locks granted one after another, owners coming back: each
/// grant reaches the client while the unlock that freed it is still on
/// its way back, and the client must record the new lock all the same,
/// or its unlock is never sent and the next lock waits for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_nfsv3_locks_handed_on_in_a_row() {
    let srv = Srv::start().await;
    std::fs::write(srv.path("locked"), b"x").unwrap();
    let mut settings = ClientSettings::default();
    settings.nlm.portmap = srv.addr;
    let c = std::sync::Arc::new(Client::connect(&srv.url_v3(), settings).await.unwrap());
    let fh = c.lookup("locked").await.unwrap().0;
    for i in 0..20u64 {
        let (holder, waiter) = (1000, 2000 + i % 2);
        assert_eq!(within(c.lock_handle(&fh, holder, (0, u64::MAX), true, true)).await.unwrap(), None);
        let (c2, fh2) = (c.clone(), fh.clone());
        let w = tokio::spawn(async move { c2.lock_handle(&fh2, waiter, (0, u64::MAX), true, true).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        within(c.unlock_handle(&fh, holder, (0, u64::MAX))).await.unwrap();
        assert_eq!(within(w).await.unwrap().unwrap(), None, "round {i}");
        within(c.unlock_handle(&fh, waiter, (0, u64::MAX))).await.unwrap();
    }
}

/// `f`, which must end within 5 s.
async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), f).await.expect("ended in time")
}

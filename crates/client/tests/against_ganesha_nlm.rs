//! NFSv3 blocking locks against NFS-Ganesha's lock manager, which grants a
//! blocked lock by calling the client's lock service back (NLM4
//! GRANTED_MSG). Needs Ganesha running with NLM (scripts/ganesha.sh start,
//! which the test suite does); hence ignored in a plain `cargo test` and run
//! with `--ignored`.
//!
//! Ganesha looks a lock client's service up by its caller name, at port 111
//! of that host. On Ganesha's own host that port's portmapper holds
//! Ganesha's NLM, so the client calls itself by a second loopback address
//! with a portmapper of its own, as scripts/ganesha.sh sets up:
//! NFSX_GANESHA_NLM_CLIENT (default 127.0.0.2). NFSX_GANESHA_URL overrides
//! the export URL.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use client::{Client, ClientSettings, OpenOptions};

fn url_v3() -> String {
    let url = std::env::var("NFSX_GANESHA_URL").unwrap_or_else(|_| "nfs://127.0.0.1/export".into());
    format!("{url}?version=3")
}

/// A client on the lock clients' host: it calls itself by that address and
/// registers its lock service with that host's portmapper.
fn settings() -> ClientSettings {
    let host = std::env::var("NFSX_GANESHA_NLM_CLIENT").unwrap_or_else(|_| "127.0.0.2".into());
    let ip: IpAddr = host.parse().expect("NFSX_GANESHA_NLM_CLIENT is an address");
    let mut s = ClientSettings { machine_name: Some(host), ..Default::default() };
    s.nlm.portmap = SocketAddr::new(ip, 111);
    // Ganesha calls the caller name back as a host: the address itself.
    s.nlm.process_names = false;
    s
}

/// The tests one at a time: the lock service, and its counts, are the
/// process's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scratch(name: &str) -> String {
    format!("nfsx-client-test-{}-{name}", std::process::id())
}

fn locks(c: &Client) -> u64 {
    c.stats().ops.get("NLM_LOCK").map_or(0, |s| s.count)
}

fn cancels(c: &Client) -> u64 {
    c.stats().ops.get("NLM_CANCEL").map_or(0, |s| s.count)
}

/// A waits for nothing; B's F_SETLKW blocks behind A's lock and is woken
/// by Ganesha's GRANTED within 50 ms of A's unlock, having sent one LOCK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha running with NLM (scripts/ganesha.sh start)"]
async fn ganesha_grants_a_blocked_lock_by_callback() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let settings = settings();
    let a = Client::connect(&url_v3(), settings.clone()).await.unwrap();
    let b = Client::connect(&url_v3(), settings.clone()).await.unwrap();
    let path = scratch("granted");
    a.write_file(&path, b"x").await.unwrap();
    let mut fa = a.open(&path, OpenOptions::read_write()).await.unwrap();
    let mut fb = b.open(&path, OpenOptions::read_write()).await.unwrap();
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
    assert!(!waiter.is_finished(), "B was not made to wait");
    assert_eq!(locks(&b), 1, "B's one blocked LOCK");
    let unlocked = Instant::now();
    fa.unlock(1, 0, 100).await.unwrap();
    let woken = tokio::time::timeout(Duration::from_secs(5), woken_rx).await.expect("B woken").unwrap();
    let (r, mut fb) = waiter.await.unwrap();
    assert_eq!(r, None);
    let latency = woken.duration_since(unlocked);
    assert!(latency < Duration::from_millis(50), "woken {latency:?} after the unlock");
    assert_eq!(locks(&b), 1, "B asked again");
    assert!(service.counts().0 > grants, "not woken by a GRANTED");
    // B holds it now: A's try is refused; A's wait is granted when B
    // unlocks, at once again: the client answered the first grant (Ganesha
    // grants by GRANTED_MSG and makes no other call until its GRANTED_RES
    // comes, or 5 s pass).
    assert!(fa.lock(1, 0, 1, true, false).await.unwrap().is_some());
    let a_locks = locks(&a);
    let waiter = tokio::spawn(async move {
        fa.lock(1, 0, 100, true, true).await.unwrap();
        (Instant::now(), fa)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "A was not made to wait");
    let unlocked = Instant::now();
    fb.unlock(7, 0, 100).await.unwrap();
    let (woken, mut fa) = tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("A woken").unwrap();
    let latency = woken.duration_since(unlocked);
    assert!(latency < Duration::from_millis(50), "A woken {latency:?} after the unlock");
    assert_eq!(locks(&a), a_locks + 1, "A asked again");
    fa.unlock(1, 0, 100).await.unwrap();
    fb.close().await.unwrap();
    fa.close().await.unwrap();
    a.remove(&path).await.unwrap();
}

/// A waiter that gives up (its F_SETLKW interrupted: the future dropped)
/// sends CANCEL; after A's unlock the lock is free for A again, and B is
/// not granted it behind its back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha running with NLM (scripts/ganesha.sh start)"]
async fn ganesha_forgets_a_cancelled_wait() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let settings = settings();
    let a = Client::connect(&url_v3(), settings.clone()).await.unwrap();
    let b = Client::connect(&url_v3(), settings.clone()).await.unwrap();
    let path = scratch("cancelled");
    a.write_file(&path, b"x").await.unwrap();
    let mut fa = a.open(&path, OpenOptions::read_write()).await.unwrap();
    let mut fb = b.open(&path, OpenOptions::read_write()).await.unwrap();
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None);
    let service = client::lockd::LockService::get(settings.nlm.listen).unwrap();
    // B gives up after 300 ms.
    let gave_up = tokio::time::timeout(Duration::from_millis(300), fb.lock(7, 0, 100, true, true)).await;
    assert!(gave_up.is_err(), "B was not made to wait");
    assert_eq!(locks(&b), 1);
    let t = Instant::now();
    while cancels(&b) == 0 {
        assert!(t.elapsed() < Duration::from_secs(5), "no CANCEL sent");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The count is taken as the CANCEL goes out: give it time to arrive
    // before the unlock (a grant racing a CANCEL is another test).
    tokio::time::sleep(Duration::from_millis(200)).await;
    // B, asking without waiting, is told A holds it.
    assert!(fb.lock(7, 0, 1, true, false).await.unwrap().is_some());
    let grants = service.counts().0;
    fa.unlock(1, 0, 100).await.unwrap();
    // Time for a grant to B, had the server kept B's request.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fa.lock(1, 0, 100, true, false).await.unwrap(), None, "the lock went to B");
    assert_eq!(service.counts().0, grants, "B was granted a lock it no longer waits for");
    assert!(fb.lock(7, 0, 1, true, false).await.unwrap().is_some());
    fa.unlock(1, 0, 100).await.unwrap();
    fb.close().await.unwrap();
    fa.close().await.unwrap();
    a.remove(&path).await.unwrap();
}

//! The client against NFS-Ganesha, a server it shares no code with. Needs
//! a running Ganesha (scripts/ganesha.sh start, which the test suite does);
//! hence ignored in a plain `cargo test` and run with `--ignored`.
//! NFSX_GANESHA_URL overrides the export URL.

mod common;

use client::{Client, ClientSettings};
use common::*;

fn url() -> String {
    std::env::var("NFSX_GANESHA_URL").unwrap_or_else(|_| "nfs://127.0.0.1/export".into())
}

fn url_v3() -> String {
    format!("{}?version=3", url())
}

fn scratch(name: &str) -> String {
    format!("nfsx-client-test-{}-{name}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
async fn ganesha_write_behind_and_read_back() {
    let c = Client::connect(&url_v3(), ClientSettings::default()).await.unwrap();
    let data = pattern(16 << 20, 9);
    let path = scratch("big");
    write_file(&c, &path, &data).await;
    assert_eq!(read_file(&c, &path).await, data);
    let s = c.stats();
    assert!(s.ops["WRITE"].count <= 64, "coalesced: {:?}", s.ops["WRITE"]);
    assert!(s.ops["COMMIT"].count >= 1);
    c.remove(&path).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
async fn ganesha_metadata() {
    let c = Client::connect(&url_v3(), ClientSettings { nconnect: 2, ..Default::default() }).await.unwrap();
    metadata_round(&c, &scratch("meta")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
async fn ganesha_wrong_export() {
    let bad = format!("{}/no-such-export-here?version=3", url().trim_end_matches('/'));
    let err = Client::connect(&bad, ClientSettings::default()).await.err().unwrap();
    assert!(err.to_string().contains("refused"), "{err}");
}

fn url41() -> String {
    format!("{}?version=4.1", url())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
async fn ganesha_over_nfsv41() {
    let c = Client::connect(&url41(), ClientSettings::default()).await.unwrap();
    assert_eq!(c.version(), "4.1");
    let data = pattern(4 << 20, 5);
    let path = scratch("v41");
    write_file(&c, &path, &data).await;
    assert_eq!(read_file(&c, &path).await, data);
    metadata_round(&c, &scratch("v41meta")).await;
    c.remove(&path).await.unwrap();
    // OPEN, WRITE and CLOSE in one compound (the current stateid).
    let whole = scratch("v41whole");
    c.write_file(&whole, b"one compound").await.unwrap();
    assert_eq!(read_file(&c, &whole).await, b"one compound");
    c.write_file(&whole, b"trunc").await.unwrap();
    assert_eq!(c.stat(&whole).await.unwrap().size, 5);
    // The last writer's close downgrades the open readers still hold.
    c.write_file(&whole, b"0123").await.unwrap();
    let mut reader = c.open(&whole, client::OpenOptions::read()).await.unwrap();
    let mut writer = c.open(&whole, client::OpenOptions::read_write()).await.unwrap();
    writer.write(0, b"W").await.unwrap();
    writer.close().await.unwrap();
    let mut buf = [0u8; 4];
    reader.read(0, &mut buf).await.unwrap();
    assert_eq!(&buf, b"W123");
    // Byte-range locks (stateids named with seqid 0, the current one).
    reader = c.open(&whole, client::OpenOptions::read_write()).await.unwrap();
    assert_eq!(reader.lock(1, 0, 2, true, false).await.unwrap(), None);
    reader.unlock(1, 0, 2).await.unwrap();
    assert_eq!(reader.lock(1, 0, u64::MAX, false, false).await.unwrap(), None);
    reader.unlock(1, 0, u64::MAX).await.unwrap();
    reader.close().await.unwrap();
    c.remove(&whole).await.unwrap();
    c.shutdown().await;
}

/// Ganesha offers NFSv4.2: a URL without a version speaks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha running (scripts/ganesha.sh start)"]
async fn ganesha_without_a_version_speaks_nfsv42() {
    let c = Client::connect(&url(), ClientSettings::default()).await.unwrap();
    assert_eq!(c.version(), "4.2");
    c.shutdown().await;
}

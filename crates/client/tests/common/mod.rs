//! Checks shared by the tests against each server.

use client::{Client, OpenOptions};

pub fn create() -> OpenOptions {
    OpenOptions { write: true, create: true, truncate: true, ..Default::default() }
}

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8).collect()
}

/// Writes `data` in 8 KiB calls (the Lever & Honeyman pattern) and closes.
pub async fn write_file(c: &Client, path: &str, data: &[u8]) {
    let mut f = c.open(path, create()).await.unwrap();
    for (i, chunk) in data.chunks(8192).enumerate() {
        f.write((i * 8192) as u64, chunk).await.unwrap();
    }
    f.close().await.unwrap();
}

/// Reads a whole file in 64 KiB calls.
pub async fn read_file(c: &Client, path: &str) -> Vec<u8> {
    let mut f = c.open(path, OpenOptions { read: true, ..Default::default() }).await.unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let n = f.read(out.len() as u64, &mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    f.close().await.unwrap();
    out
}

/// Creates, lists, stats, renames and removes under `dir`.
pub async fn metadata_round(c: &Client, dir: &str) {
    c.mkdir(dir).await.unwrap();
    c.mkdir(&format!("{dir}/e")).await.unwrap();
    for i in 0..50 {
        write_file(c, &format!("{dir}/f{i}"), b"x").await;
    }
    let names: Vec<String> = c.readdir(dir).await.unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names.len(), 51, "{names:?}");
    assert!(names.iter().any(|n| n == "e"));
    assert_eq!(c.stat(&format!("{dir}/f3")).await.unwrap().size, 1);
    c.rename(&format!("{dir}/f3"), &format!("{dir}/e/moved")).await.unwrap();
    assert!(c.stat(&format!("{dir}/f3")).await.is_err());
    assert_eq!(c.stat(&format!("{dir}/e/moved")).await.unwrap().size, 1);
    c.remove(&format!("{dir}/e/moved")).await.unwrap();
    c.rmdir(&format!("{dir}/e")).await.unwrap();
    let err = c.rmdir(dir).await.unwrap_err();
    assert!(err.to_string().contains("NOTEMPTY"), "{err}");
    for i in (0..50).filter(|i| *i != 3) {
        c.remove(&format!("{dir}/f{i}")).await.unwrap();
    }
    c.rmdir(dir).await.unwrap();
}

//! The client over NFSv4.2 against the nfsx server in process: server-side
//! COPY within the request and in the background (CB_OFFLOAD), a copy
//! interrupted by a server restart, CLONE where the file system cannot
//! reflink, SEEK, ALLOCATE, DEALLOCATE, READ_PLUS and extended attributes;
//! and the same calls refused without a call over NFSv4.1.

mod common;

use client::{Client, ClientSettings, XattrHow};
use common::*;
use proto::nfs3::nfsstat3;

async fn connect42(srv: &Srv) -> Client {
    let c = Client::connect(&format!("{}?version=4.2", srv.url()), ClientSettings::default()).await.unwrap();
    assert_eq!(c.version(), "4.2");
    c
}

fn small_copies(s: &mut server::Settings) {
    // Every copy past 256 KiB runs in the background, in 256 KiB chunks.
    s.core.nfs4.copy_sync_max = 256 << 10;
}

fn ops(c: &Client, name: &str) -> u64 {
    c.stats().ops.get(name).map_or(0, |o| o.count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_inside_the_server() {
    let srv = Srv::start().await;
    let c = Client::connect(&srv.url(), ClientSettings::default()).await.unwrap();
    assert_eq!(c.version(), "4.2", "negotiated without asking");
    let data = pattern(3 << 20, 11);
    // Written through the client and not yet flushed: the copy writes it
    // back first.
    let mut f = c.open("src", create()).await.unwrap();
    f.write(0, &data).await.unwrap();
    write_file(&c, "dst", b"").await;
    let (reads, writes) = (ops(&c, "READ"), ops(&c, "WRITE"));
    let copied = c.copy_file("src", "dst").await.unwrap();
    assert_eq!(copied, data.len() as u64);
    assert!(ops(&c, "COPY") >= 1);
    assert_eq!(ops(&c, "READ"), reads, "no data came to the client");
    f.close().await.unwrap();
    assert!(ops(&c, "WRITE") - writes <= 4, "only the source's own write-back");
    assert_eq!(std::fs::read(srv.path("dst")).unwrap(), data);
    assert_eq!(read_file(&c, "dst").await, data, "nothing stale cached");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_copy_ends_with_cb_offload() {
    let srv = Srv::start_tuned(&server_core::NfsVersion::ALL, small_copies).await;
    let c = connect42(&srv).await;
    let data = pattern(4 << 20, 3);
    std::fs::write(srv.path("src"), &data).unwrap();
    std::fs::write(srv.path("dst"), b"").unwrap();
    let started = std::time::Instant::now();
    assert_eq!(c.copy_file("src", "dst").await.unwrap(), data.len() as u64);
    // CB_OFFLOAD ended the wait: no OFFLOAD_STATUS poll was needed.
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(ops(&c, "COPY"), 1, "one COPY, done in the background");
    assert_eq!(ops(&c, "OFFLOAD_STATUS"), 0);
    assert_eq!(std::fs::read(srv.path("dst")).unwrap(), data);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_interrupted_by_a_server_restart_is_made_again() {
    // 64 KiB chunks: the copy is still running when the server dies.
    let mut srv = Srv::start_tuned(&server_core::NfsVersion::ALL, |s| s.core.nfs4.copy_sync_max = 64 << 10).await;
    let c = connect42(&srv).await;
    let data = pattern(64 << 20, 5);
    std::fs::write(srv.path("src"), &data).unwrap();
    std::fs::write(srv.path("dst"), b"").unwrap();
    let copier = {
        let c = c.clone();
        tokio::spawn(async move { c.copy_file("src", "dst").await })
    };
    // The server is copying (the destination grows): it dies now.
    let dst = srv.path("dst");
    while std::fs::metadata(&dst).map_or(0, |m| m.len()) == 0 {
        tokio::time::sleep(std::time::Duration::from_micros(200)).await;
    }
    srv.restart().await;
    let copied = copier.await.unwrap().unwrap();
    assert_eq!(copied, data.len() as u64);
    // The first copy died with the server: OFFLOAD_STATUS found it gone
    // and the copy was made again.
    assert!(ops(&c, "COPY") >= 2 && ops(&c, "OFFLOAD_STATUS") >= 1, "{:?}", c.stats().ops.keys());
    assert_eq!(std::fs::read(srv.path("dst")).unwrap(), data);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sparse_files_and_space() {
    let srv = Srv::start().await;
    let c = connect42(&srv).await;
    write_file(&c, "sparse", &pattern(1 << 20, 9)).await;
    let (fh, _) = c.lookup("sparse").await.unwrap();
    // Reserve past the end: the file grows, the new range reads zeros.
    c.allocate_handle(&fh, 0, 4 << 20, false).await.unwrap();
    assert_eq!(c.stat("sparse").await.unwrap().size, 4 << 20);
    // Punch the first MiB: the size stays, the range is a hole.
    c.allocate_handle(&fh, 0, 1 << 20, true).await.unwrap();
    assert_eq!(c.stat("sparse").await.unwrap().size, 4 << 20);
    let (at, eof) = c.seek_handle(&fh, 0, true).await.unwrap();
    assert!(at >= 1 << 20 || eof, "data at {at}");
    let (hole, _) = c.seek_handle(&fh, 0, false).await.unwrap();
    assert_eq!(hole, 0);
    let (bytes, holes, _) = c.read_plus_handle(&fh, 0, 256 << 10).await.unwrap();
    assert_eq!(bytes.len(), 256 << 10);
    assert!(bytes.iter().all(|b| *b == 0));
    assert_eq!(holes, 256 << 10, "the punched range came as a hole");
    let e = c.seek_handle(&fh, 5 << 20, true).await.err().unwrap();
    assert_eq!(e.status(), Some(nfsstat3::NFS3ERR_NXIO));
    // No reflinks on this file system: CLONE is refused, cleanly.
    write_file(&c, "other", b"").await;
    let (dst, _) = c.lookup("other").await.unwrap();
    match c.clone_range_handle(&fh, 0, &dst, 0, 0).await {
        Ok(()) => assert_eq!(std::fs::read(srv.path("other")).unwrap().len(), 4 << 20),
        Err(e) => assert_eq!(e.status(), Some(nfsstat3::NFS3ERR_NOTSUPP), "{e}"),
    }
    c.shutdown().await;
}

/// With `[v41] read_plus`, file reads go as READ_PLUS, as a Linux NFSv4.2
/// mount sends them: a dense file (its ranges sent from the page cache
/// as one data segment each) and a sparse one (holes as holes) read back
/// as they are on disk, the last partial word and padding included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_as_read_plus_arrive_whole() {
    let srv = Srv::start().await;
    let dense = pattern((3 << 20) + 5, 13);
    std::fs::write(srv.path("dense"), &dense).unwrap();
    // Data, a 2 MiB hole, data up to an odd end.
    let sparse_file = std::fs::File::create(srv.path("sparse")).unwrap();
    let mut sparse = vec![0u8; (3 << 20) + 7];
    sparse[..(512 << 10)].copy_from_slice(&pattern(512 << 10, 5));
    let tail = sparse.len() - (2560 << 10);
    sparse[2560 << 10..].copy_from_slice(&pattern(tail, 6));
    use std::os::unix::fs::FileExt;
    sparse_file.write_all_at(&sparse[..512 << 10], 0).unwrap();
    sparse_file.write_all_at(&sparse[2560 << 10..], 2560 << 10).unwrap();
    drop(sparse_file);
    let mut settings = ClientSettings::default();
    settings.read_cache.max_bytes = 0;
    settings.readahead.max_window = 0;
    settings.v41.read_plus = true;
    let c = Client::connect(&format!("{}?version=4.2", srv.url()), settings).await.unwrap();
    for (name, want) in [("dense", &dense), ("sparse", &sparse)] {
        let back = read_file_in(&c, name, 1 << 20).await;
        assert!(&back == want, "{name}: {} bytes read back differ from the file's {}", back.len(), want.len());
    }
    assert!(ops(&c, "READ_PLUS") >= 8, "reads went as READ_PLUS");
    assert_eq!(ops(&c, "READ"), 0);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_attributes() {
    let srv = Srv::start().await;
    let c = connect42(&srv).await;
    write_file(&c, "x", b"data").await;
    let (fh, _) = c.lookup("x").await.unwrap();
    c.setxattr_handle(&fh, "colour", b"blue", XattrHow::Create).await.unwrap();
    c.setxattr_handle(&fh, "shape", b"round", XattrHow::Either).await.unwrap();
    assert!(c.setxattr_handle(&fh, "colour", b"red", XattrHow::Create).await.is_err());
    assert!(c.setxattr_handle(&fh, "size", b"9", XattrHow::Replace).await.is_err());
    assert_eq!(&c.getxattr_handle(&fh, "colour").await.unwrap()[..], b"blue");
    // On the host they are in the user namespace.
    let host = host_getxattr(&srv.path("x"), "user.colour");
    assert_eq!(host.as_deref(), Some(&b"blue"[..]));
    let names = c.listxattrs_handle(&fh).await.unwrap();
    assert_eq!(names, vec![bytes::Bytes::from_static(b"colour"), bytes::Bytes::from_static(b"shape")]);
    c.removexattr_handle(&fh, "colour").await.unwrap();
    assert!(c.getxattr_handle(&fh, "colour").await.is_err());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfsv41_sessions_refuse_them_without_a_call() {
    let srv = Srv::start().await;
    let c = Client::connect(&format!("{}?version=4.1", srv.url()), ClientSettings::default()).await.unwrap();
    write_file(&c, "a", b"1").await;
    write_file(&c, "b", b"").await;
    let calls = c.stats().ops.values().map(|o| o.count).sum::<u64>();
    let e = c.copy_file("a", "b").await.err().unwrap();
    assert_eq!(e.status(), Some(nfsstat3::NFS3ERR_NOTSUPP));
    assert!(!c.has_v42());
    // Only the lookups and the flush of the copy's preparation went out.
    assert!(c.stats().ops.values().map(|o| o.count).sum::<u64>() - calls <= 4);
    c.shutdown().await;
}

fn host_getxattr(path: &std::path::Path, name: &str) -> Option<Vec<u8>> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let p = CString::new(path.as_os_str().as_bytes()).ok()?;
    let n = CString::new(name).ok()?;
    let mut buf = vec![0u8; 65536];
    // SAFETY: both strings are NUL-terminated and the buffer is as long as
    // the length given.
    let r = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if r < 0 {
        return None;
    }
    buf.truncate(r as usize);
    Some(buf)
}

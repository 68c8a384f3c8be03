//! Connections cannot lock clients out or take the server's memory: at the
//! connection limit the idlest connection makes room, and records that
//! arrive only in part are bounded as a whole.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use proto::nfs3::NFS3_NULL;
use support::rpc::RpcClient;
use support::*;

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Whether the server has closed `s` (EOF or reset within `wait`).
fn closed_by_server(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 16];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

/// With every connection slot held by idle sockets, a new client is still
/// served: the connection idle the longest is closed for it.
#[test]
fn idle_connections_never_lock_clients_out() {
    let srv = TestServer::start(ServerOpts { extra_config: "max_connections = 8", ..Default::default() });
    let mut idle: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(("127.0.0.1", srv.port)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    for round in 0..3 {
        let t = Instant::now();
        let mut c = RpcClient::connect(srv.port).unwrap();
        let _: () = c.nfs(NFS3_NULL, &());
        assert!(t.elapsed() < Duration::from_secs(5), "round {round}: new client waited {:?}", t.elapsed());
    }
    let closed = idle.iter_mut().map(|s| closed_by_server(s, Duration::from_secs(2))).filter(|c| *c).count();
    assert!(closed >= 1, "no idle connection was closed to make room");
}

/// Many clients that send most of a large record and stop: past
/// max_partial_record_bytes they stop being read and are closed after
/// record_stall_secs; memory stays bounded and other clients are served.
#[test]
fn stalled_partial_records_are_bounded_as_a_whole() {
    let srv = TestServer::start(ServerOpts {
        extra_config: "max_partial_record_bytes = 4194304\nrecord_stall_secs = 1",
        ..Default::default()
    });
    let pid = srv.child.id();
    let before = rss_kib(pid);
    let record = 3u32 << 20;
    let body = vec![0x5au8; (5 << 19) as usize]; // 2.5 MiB of a 3 MiB record
    let mut conns = Vec::new();
    for _ in 0..12 {
        let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
        s.write_all(&(record | 0x8000_0000).to_be_bytes()).unwrap();
        // The server may stop reading: a write that cannot finish is fine.
        let _ = s.write_all(&body);
        conns.push(s);
    }
    std::thread::sleep(Duration::from_secs(4));
    let grown = rss_kib(pid).saturating_sub(before);
    let closed = conns.iter_mut().map(|s| closed_by_server(s, Duration::from_secs(2))).filter(|c| *c).count();
    assert!(closed >= 8, "only {closed} of 12 stalled connections were closed");
    // 12 x 2.5 MiB would be 30 MiB; the budget is 4 MiB plus one read
    // buffer per connection still reading.
    assert!(grown < 24 * 1024, "RSS grew by {grown} KiB");
    let mut c = RpcClient::connect(srv.port).unwrap();
    let _: () = c.nfs(NFS3_NULL, &());
}

/// Clients that send many large READs and never read the replies: the
/// replies wait as file regions once a connection's queue is past what
/// its small READs could hold, so they do not pin a copy each
/// (`read_sendfile_alone_only` copies large READs only beside a short
/// queue). Four connections x 128 READs of 1 MiB would be 512 MiB copied.
#[test]
fn unread_large_replies_do_not_pin_copies() {
    use proto::nfs3::*;
    let srv = TestServer::start(ServerOpts::default());
    random_file(&srv.export.join("big"), 1 << 20, 7);
    let mut c = RpcClient::connect(srv.port).unwrap();
    let root = c.mount(&srv.export.display().to_string());
    let res: LOOKUP3res =
        c.nfs(NFS3_LOOKUP, &LOOKUP3args { what: diropargs3 { dir: root, name: bytes::Bytes::from_static(b"big") } });
    let LOOKUP3res::NFS3_OK(found) = res else { panic!("LOOKUP big: {res:?}") };
    let pid = srv.child.id();
    let before = rss_kib(pid);
    let read = READ3args { file: found.object, offset: 0, count: 1 << 20 };
    let mut conns = Vec::new();
    for n in 0..4u32 {
        let mut s = RpcClient::connect(srv.port).unwrap();
        s.stream.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
        for i in 0..128u32 {
            let call = support::rpc::call_bytes(
                n << 16 | i,
                NFS_PROGRAM,
                NFS_V3,
                NFS3_READ,
                support::rpc::auth_sys(0, 0),
                &read,
            );
            // The server stops reading at its in-flight limit: fine.
            if s.send_record(&call).is_err() {
                break;
            }
        }
        conns.push(s);
    }
    std::thread::sleep(Duration::from_secs(3));
    let grown = rss_kib(pid).saturating_sub(before);
    // Per connection: the 8 MiB of copies its queue may hold, and what
    // the socket took.
    assert!(grown < 128 * 1024, "RSS grew by {grown} KiB with 512 replies of 1 MiB unread");
    // The server still answers.
    let mut c = RpcClient::connect(srv.port).unwrap();
    let _: () = c.nfs(NFS3_NULL, &());
}

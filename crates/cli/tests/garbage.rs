//! Bad input gets an error or a closed connection, never a crash, a hang or
//! unbounded memory; afterwards the server still serves a normal client.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs3::*;
use proto::{mount3, portmap};
use rand::{Rng, SeedableRng};
use support::rpc::{auth_none, auth_sys, call_bytes, RpcClient};
use support::*;

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Sum of `nfsx_requests_total` over all procedures.
fn requests_total(port: u16) -> u64 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body.lines()
        .filter(|l| l.starts_with("nfsx_requests_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Valid calls of many shapes, to be mutated.
fn seeds(root: &nfs_fh3) -> Vec<Bytes> {
    let name = |n: &'static str| diropargs3 { dir: root.clone(), name: Bytes::from_static(n.as_bytes()) };
    vec![
        call_bytes(1, NFS_PROGRAM, NFS_V3, NFS3_NULL, auth_none(), &()),
        call_bytes(2, NFS_PROGRAM, NFS_V3, NFS3_GETATTR, auth_sys(0, 0), &GETATTR3args { object: root.clone() }),
        call_bytes(3, NFS_PROGRAM, NFS_V3, NFS3_LOOKUP, auth_sys(0, 0), &LOOKUP3args { what: name("f") }),
        call_bytes(
            4,
            NFS_PROGRAM,
            NFS_V3,
            NFS3_WRITE,
            auth_sys(1000, 1000),
            &WRITE3args {
                file: root.clone(),
                offset: 0,
                count: 8,
                stable: stable_how::UNSTABLE,
                data: Bytes::from_static(b"12345678"),
            },
        ),
        call_bytes(
            5,
            NFS_PROGRAM,
            NFS_V3,
            NFS3_READDIRPLUS,
            auth_sys(0, 0),
            &READDIRPLUS3args { dir: root.clone(), cookie: 0, cookieverf: [0; 8], dircount: 4096, maxcount: 32768 },
        ),
        call_bytes(
            6,
            mount3::MOUNT_PROGRAM,
            mount3::MOUNT_V3,
            mount3::MOUNT3_MNT,
            auth_none(),
            &Bytes::from_static(b"/tmp"),
        ),
        call_bytes(7, mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, mount3::MOUNT3_EXPORT, auth_none(), &()),
        call_bytes(
            8,
            portmap::PMAP_PROGRAM,
            portmap::PMAP_V2,
            portmap::PMAP2_GETPORT,
            auth_none(),
            &portmap::pmap2_mapping { prog: NFS_PROGRAM, vers: 3, prot: 6, port: 0 },
        ),
    ]
}

fn mutate(rng: &mut impl Rng, seed: &Bytes) -> Vec<u8> {
    let mut m = seed.to_vec();
    match rng.gen_range(0..6) {
        0 => {
            // random bytes of random length
            let mut v = vec![0u8; rng.gen_range(0..512)];
            rng.fill_bytes(&mut v);
            v
        }
        1 => {
            for _ in 0..rng.gen_range(1..8) {
                let i = rng.gen_range(0..m.len());
                m[i] = rng.gen();
            }
            m
        }
        2 => {
            m.truncate(rng.gen_range(0..m.len()));
            m
        }
        3 => {
            // a huge length or count in a random aligned word
            let i = rng.gen_range(0..m.len() / 4) * 4;
            m[i..i + 4].copy_from_slice(&[0xff, 0xff, 0xff, rng.gen()]);
            m
        }
        4 => {
            let mut tail = vec![0u8; rng.gen_range(1..256)];
            rng.fill_bytes(&mut tail);
            m.extend(tail);
            m
        }
        _ => {
            // keep the header, vary program/version/procedure
            let w = [12, 16, 20][rng.gen_range(0..3)];
            m[w..w + 4].copy_from_slice(&rng.gen::<u32>().to_be_bytes());
            m
        }
    }
}

#[test]
fn ten_thousand_bad_messages_then_a_normal_client() {
    let metrics_port = free_port();
    let cfg = format!("metrics = \"127.0.0.1:{metrics_port}\"");
    let srv = TestServer::start(ServerOpts { extra_config: &cfg, ..Default::default() });
    std::fs::write(srv.export.join("f"), b"hello").unwrap();
    let mut c = RpcClient::connect(srv.port).unwrap();
    let root = c.mount(&srv.export.display().to_string());
    let seeds = seeds(&root);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let rss_start = rss_kib(srv.child.id());

    let started = Instant::now();
    let mut sent = 0;
    // Records whose framing is intact, so the server must have handled each.
    let mut framed = 0u64;
    let mut connections = 0;
    while sent < 10_000 {
        let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        connections += 1;
        // A drain thread reads whatever comes back so the server is never
        // blocked on a full socket.
        let mut r = s.try_clone().unwrap();
        let drain = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
            }
        });
        loop {
            let pick = rng.gen_range(0..seeds.len());
            let body = mutate(&mut rng, &seeds[pick]);
            let mut rec = Vec::with_capacity(body.len() + 8);
            let mut last_on_connection = false;
            match rng.gen_range(0..100) {
                // a record header that lies about the length, or a huge one:
                // the stream cannot be resynchronised, so it ends the connection
                0 => {
                    rec.extend_from_slice(&rng.gen::<u32>().to_be_bytes());
                    rec.extend_from_slice(&body);
                    last_on_connection = true;
                }
                // split into two fragments
                1 if body.len() > 8 => {
                    let cut = body.len() / 2;
                    rec.extend_from_slice(&(cut as u32).to_be_bytes());
                    rec.extend_from_slice(&body[..cut]);
                    rec.extend_from_slice(&((body.len() - cut) as u32 | 0x8000_0000).to_be_bytes());
                    rec.extend_from_slice(&body[cut..]);
                    framed += 1;
                }
                _ => {
                    rec.extend_from_slice(&(body.len() as u32 | 0x8000_0000).to_be_bytes());
                    rec.extend_from_slice(&body);
                    framed += 1;
                }
            }
            sent += 1;
            s.write_all(&rec).expect("server closed a connection whose framing was intact");
            if last_on_connection || sent >= 10_000 || sent % 500 == 0 {
                break;
            }
        }
        let _ = s.shutdown(std::net::Shutdown::Write);
        drain.join().unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(240), "bad input took too long: {:?}", started.elapsed());
    assert!(srv.child.id() > 0);

    // Still serving a normal client.
    let mut c = RpcClient::connect(srv.port).unwrap();
    let _: () = c.nfs(NFS3_NULL, &());
    let res: LOOKUP3res =
        c.nfs(NFS3_LOOKUP, &LOOKUP3args { what: diropargs3 { dir: root.clone(), name: Bytes::from_static(b"f") } });
    assert!(matches!(res, LOOKUP3res::NFS3_OK(_)), "{res:?}");
    let rss_end = rss_kib(srv.child.id());
    assert!(
        rss_end < rss_start + 256 * 1024,
        "server memory grew from {rss_start} KiB to {rss_end} KiB over {connections} connections"
    );
    let handled = requests_total(metrics_port);
    assert!(handled >= framed, "server handled {handled} records, {framed} well-framed ones were sent");
    let log = srv.log_text();
    assert!(!log.contains("panicked"), "server panicked:\n{log}");
}

#[test]
fn oversized_record_closes_the_connection() {
    let srv = TestServer::start(ServerOpts::default());
    let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Claims a 2 GiB record: refused at once, nothing buffered.
    s.write_all(&0xffff_fff0u32.to_be_bytes()).unwrap();
    let _ = s.write_all(&[0u8; 1024]);
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "connection should be closed");
    // And many small non-final fragments adding up past the limit.
    let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let frag = vec![0u8; 1 << 20];
    let mut closed = false;
    for _ in 0..16 {
        let mut rec = ((1u32 << 20).to_be_bytes()).to_vec();
        rec.extend_from_slice(&frag);
        if s.write_all(&rec).is_err() {
            closed = true;
            break;
        }
    }
    if !closed {
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "connection should be closed after the record limit");
    }
    let mut c = RpcClient::connect(srv.port).unwrap();
    let _: () = c.nfs(NFS3_NULL, &());
}

#[test]
fn client_vanishing_mid_request_is_harmless() {
    let srv = TestServer::start(ServerOpts::default());
    for _ in 0..50 {
        let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        // Half a record header, or a header and half a body, then gone.
        let _ = s.write_all(&[0x80, 0x00]);
        drop(s);
        let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        let _ = s.write_all(&[0x80, 0x00, 0x01, 0x00, 1, 2, 3]);
        drop(s);
    }
    let mut c = RpcClient::connect(srv.port).unwrap();
    let _: () = c.nfs(NFS3_NULL, &());
}

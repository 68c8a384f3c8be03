//! A server that accepts every connection and drops it at once (a service
//! crashed behind a live listener, a proxy whose backend is gone): the
//! client redials with pauses that grow rather than in a loop at full CPU,
//! and the call ends in an error.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::{Client, ClientSettings, NfsUrl, ServerAddrs};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;

use common::Srv;

/// Passes bytes both ways until `dropping` is set; then the connection
/// closes at the client's next request.
async fn pipe(mut client: TcpStream, server: std::net::SocketAddr, dropping: Arc<AtomicBool>) {
    let Ok(upstream) = TcpStream::connect(server).await else { return };
    let (mut up_rd, mut up_wr) = upstream.into_split();
    let (mut rd, mut wr) = client.split();
    let to_client = async {
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n @ 1..) = up_rd.read(&mut buf).await {
            if wr.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let to_server = async {
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n @ 1..) = rd.read(&mut buf).await {
            if dropping.load(Ordering::SeqCst) || up_wr.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        _ = to_client => {}
        _ = to_server => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_drops_every_connection_is_not_redialled_in_a_loop() {
    let srv = Srv::start().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dropping = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let (dropping, dropped, server) = (dropping.clone(), dropped.clone(), srv.addr);
        async move {
            while let Ok((c, _)) = listener.accept().await {
                if dropping.load(Ordering::SeqCst) {
                    dropped.fetch_add(1, Ordering::SeqCst);
                    drop(c);
                } else {
                    tokio::spawn(pipe(c, server, dropping.clone()));
                }
            }
        }
    });
    let mut settings = ClientSettings::default();
    settings.rpc.timeout_ms = 500;
    settings.rpc.max_timeout_ms = 1000;
    settings.rpc.retrans = 2;
    settings.reconnect_max_pause_ms = 200;
    let url = NfsUrl::parse(&format!("nfs://127.0.0.1:{}{}?version=3", addr.port(), srv.dir.path().display())).unwrap();
    let addrs = ServerAddrs { mount: addr, nfs: addr, nlm: Some(addr) };
    let c = Client::connect_to(&url, addrs, settings).await.unwrap();
    c.stat("/").await.unwrap();

    dropping.store(true, Ordering::SeqCst);
    // A name the client has not seen: its stat must ask the server.
    std::fs::write(srv.path("fresh"), b"x").unwrap();
    let started = Instant::now();
    let res = tokio::time::timeout(Duration::from_secs(60), c.stat("/fresh")).await;
    let took = started.elapsed();
    let redials = dropped.load(Ordering::SeqCst);
    assert!(res.is_ok(), "the call still waits after 60 s ({redials} connections dropped)");
    assert!(res.unwrap().is_err(), "a call through a server that drops every connection succeeded");
    // With pauses growing to 200 ms, about five dials a second; a client
    // that redials at once makes thousands.
    let per_sec = redials as f64 / took.as_secs_f64().max(0.5);
    assert!(per_sec < 20.0, "{redials} connections in {took:?}: the client redials in a loop");
    // With no call waiting, the client does not dial at all.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_from = dropped.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = dropped.load(Ordering::SeqCst) - idle_from;
    assert!(idle <= 1, "{idle} connections in a second with no call waiting");
    // A server that answers again is used again.
    dropping.store(false, Ordering::SeqCst);
    assert_eq!(c.stat("/fresh").await.unwrap().size, 1);
}

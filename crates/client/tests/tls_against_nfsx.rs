//! RPC-with-TLS (RFC 9289) between nfsx's client and server in process:
//! NFSv4.2 and NFSv3 (MOUNT, NFS) through TLS, exports that refuse clear
//! text (`xprtsec=tls`) or demand a client certificate (`xprtsec=mtls`),
//! and handshakes that must fail: an unknown authority, an expired
//! certificate, a server without TLS.

mod common;

use std::path::{Path, PathBuf};

use client::{Client, ClientSettings};
use common::{pattern, read_file, write_file};
use test_support::pki::Pki;

/// An nfsx server with TLS (certificate `cert`, client authorities from
/// the PKI), exporting a temporary directory with `options`.
struct TlsSrv {
    rt: Option<tokio::runtime::Runtime>,
    port: u16,
    dir: tempfile::TempDir,
    _state: tempfile::TempDir,
}

impl Drop for TlsSrv {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl TlsSrv {
    async fn start(pki: Option<&Pki>, cert: &str, options: &str) -> TlsSrv {
        let dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let exports = state.path().join("test.exports");
        std::fs::write(&exports, format!("{} 127.0.0.1({options})\n", dir.path().display())).unwrap();
        let mut settings =
            server::Settings { listen: "127.0.0.1:0".parse().unwrap(), portmap_port: Some(0), ..Default::default() };
        settings.state_dir = Some(state.path().to_path_buf());
        if let Some(pki) = pki {
            settings.tls.cert_file = Some(pki.path(&format!("{cert}.pem")));
            settings.tls.key_file = Some(pki.path(&format!("{cert}.key")));
            settings.tls.client_ca_file = Some(pki.path("ca.pem"));
        }
        let cfg =
            server::ServeConfig { dir: None, backend: server::Backend::Local, exports_file: Some(exports), settings };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let server = rt.spawn(server::Server::start(cfg)).await.unwrap().unwrap();
        TlsSrv { rt: Some(rt), port: server.local_addr.port(), dir, _state: state }
    }

    fn url(&self, query: &str) -> String {
        format!("nfs://127.0.0.1:{}{}?{query}", self.port, self.dir.path().display())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn settings(ca: &Path, client_cert: bool, pki: &Pki) -> ClientSettings {
    let mut s = ClientSettings::default();
    s.tls.ca_file = Some(ca.to_path_buf());
    if client_cert {
        s.tls.cert_file = Some(pki.path("client.pem"));
        s.tls.key_file = Some(pki.path("client.key"));
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfsv42_and_nfsv3_through_tls() {
    let pki = Pki::new();
    let srv = TlsSrv::start(Some(&pki), "server", "rw,insecure,no_root_squash,xprtsec=tls:mtls").await;
    let s = settings(&pki.path("ca.pem"), false, &pki);
    let data = pattern(3 << 20, 4);
    let c = Client::connect(&srv.url("version=4.2&tls=1"), s.clone()).await.unwrap();
    assert_eq!(c.version(), "4.2");
    write_file(&c, "f", &data).await;
    assert_eq!(read_file(&c, "f").await, data);
    c.shutdown().await;
    assert_eq!(std::fs::read(srv.path("f")).unwrap(), data);
    // NFSv3: MOUNT and NFS each on a TLS connection of their own.
    let c = Client::connect(&srv.url("version=3&tls=1"), s.clone()).await.unwrap();
    assert_eq!(read_file(&c, "f").await, data);
    write_file(&c, "g", b"over v3").await;
    assert_eq!(std::fs::read(srv.path("g")).unwrap(), b"over v3");
    c.shutdown().await;
    // With a client certificate the connection is mutual TLS, also admitted.
    let c = Client::connect(&srv.url("version=4.2&tls=1"), settings(&pki.path("ca.pem"), true, &pki)).await.unwrap();
    assert_eq!(read_file(&c, "g").await, b"over v3");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_text_is_refused_where_tls_is_required() {
    let pki = Pki::new();
    let srv = TlsSrv::start(Some(&pki), "server", "rw,insecure,no_root_squash,xprtsec=tls").await;
    std::fs::write(srv.path("f"), b"secret").unwrap();
    let e = Client::connect(&srv.url("version=4.2"), ClientSettings::default()).await.err().unwrap();
    assert!(e.to_string().contains("WRONGSEC"), "{e}");
    let e = Client::connect(&srv.url("version=3"), ClientSettings::default()).await.err().unwrap();
    assert!(e.to_string().contains("ACCES"), "{e}");
    // xprtsec=mtls: TLS without a client certificate is not enough.
    let srv = TlsSrv::start(Some(&pki), "server", "rw,insecure,no_root_squash,xprtsec=mtls").await;
    let plain_tls = settings(&pki.path("ca.pem"), false, &pki);
    let e = Client::connect(&srv.url("version=4.2&tls=1"), plain_tls).await.err().unwrap();
    assert!(e.to_string().contains("WRONGSEC"), "{e}");
    let mutual = settings(&pki.path("ca.pem"), true, &pki);
    Client::connect(&srv.url("version=4.2&tls=1"), mutual).await.unwrap().shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_certificates_and_servers_without_tls_fail_clearly() {
    let pki = Pki::new();
    let srv = TlsSrv::start(Some(&pki), "server", "rw,insecure").await;
    let e = Client::connect(&srv.url("version=4.2&tls=1"), settings(&pki.path("other-ca.pem"), false, &pki))
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("invalid peer certificate"), "{e}");
    let expired = TlsSrv::start(Some(&pki), "expired", "rw,insecure").await;
    let e = Client::connect(&expired.url("version=4.2&tls=1"), settings(&pki.path("ca.pem"), false, &pki))
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("certificate expired"), "{e}");
    let clear = TlsSrv::start(None, "", "rw,insecure").await;
    let e = Client::connect(&clear.url("version=4.2&tls=1"), settings(&pki.path("ca.pem"), false, &pki))
        .await
        .err()
        .unwrap();
    assert!(e.to_string().contains("does not offer RPC-with-TLS"), "{e}");
    // Without a CA file, asking for TLS is a settings error.
    let e = Client::connect(&srv.url("version=4.2&tls=1"), ClientSettings::default()).await.err().unwrap();
    assert!(e.to_string().contains("ca_file"), "{e}");
}

/// The AUTH_TLS probe as a client sends it: NULL, credential AUTH_TLS.
fn probe(xid: u32) -> Vec<u8> {
    let mut body = Vec::new();
    for v in [xid, 0, 2, 100_003, 4, 0, 7, 0, 0, 0] {
        body.extend_from_slice(&u32::to_be_bytes(v));
    }
    let mut rec = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
    rec.extend(body);
    rec
}

/// Garbage around the probe and the handshake: the connection is dropped
/// (RFC 9289 section 5.1.1), nothing else happens, and the server goes on
/// serving TLS clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_before_and_after_the_handshake_drops_only_that_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pki = Pki::new();
    let srv = TlsSrv::start(Some(&pki), "server", "rw,insecure,no_root_squash").await;
    let addr = format!("127.0.0.1:{}", srv.port);
    let closed = |mut s: tokio::net::TcpStream| async move {
        let mut buf = vec![0u8; 4096];
        let mut got = Vec::new();
        loop {
            match tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return got,
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                Err(_) => panic!("the server kept the connection open"),
            }
        }
    };
    // Data right behind the probe, before any handshake: no STARTTLS.
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut bytes = probe(1);
    bytes.extend_from_slice(b"not a ClientHello");
    s.write_all(&bytes).await.unwrap();
    assert!(closed(s).await.is_empty(), "nothing answered");
    // A probe answered, then garbage instead of a ClientHello.
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(&probe(2)).await.unwrap();
    let mut reply = [0u8; 36];
    s.read_exact(&mut reply).await.unwrap();
    assert_eq!(&reply[24..32], b"STARTTLS");
    s.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 1, 2, 3, 4, 5]).await.unwrap();
    closed(s).await;
    // A record of random bytes first: a clear-text connection whose
    // garbage the RPC layer deals with; the server is still there.
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(&[0x80, 0, 0, 8, 9, 9, 9, 9, 9, 9, 9, 9]).await.unwrap();
    drop(s);
    let c = Client::connect(&srv.url("version=4.2&tls=1"), settings(&pki.path("ca.pem"), false, &pki)).await.unwrap();
    write_file(&c, "after", b"still serving").await;
    c.shutdown().await;
}

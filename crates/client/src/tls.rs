//! RPC-with-TLS (RFC 9289) on the client: every connection to the server
//! (NFS, MOUNT, NLM) opens with the AUTH_TLS probe, a NULL call that the
//! server answers with "STARTTLS" when it speaks TLS, then makes a TLS 1.3
//! handshake (ALPN "sunrpc") on the same connection, checking the
//! server's certificate against `[tls] ca_file` and the URL's host name or
//! address. A server that does not answer "STARTTLS" is refused: asking
//! for TLS (`?tls=1`) means the client never falls back to clear text.
//! With `cert_file` and `key_file` the client presents a certificate
//! (mutual TLS).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use xdr::{Decoder, Encoder};

use crate::error::{Error, Result};

const ALPN_SUNRPC: &[u8] = b"sunrpc";
const AUTH_TLS: u32 = 7;
/// Longest probe reply read (it is a few dozen bytes).
const MAX_PROBE_REPLY: usize = 4096;

/// `[tls]` in the client's settings file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSettings {
    /// PEM certificates of the authorities the server's certificate must
    /// chain to. Required for `?tls=1`.
    pub ca_file: Option<PathBuf>,
    /// PEM certificate chain and key the client presents (mutual TLS).
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

/// A client's TLS side for one server.
pub struct ClientTls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls").field("name", &self.name).finish_non_exhaustive()
    }
}

fn bad(why: String) -> Error {
    Error::Invalid(why)
}

fn pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut &pem[..])
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(format!("{}: not PEM certificates: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(bad(format!("{}: no certificate in it", path.display())));
    }
    Ok(certs)
}

fn pem_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|e| bad(format!("{}: not a PEM key: {e}", path.display())))?
        .ok_or_else(|| bad(format!("{}: no private key in it", path.display())))
}

impl ClientTls {
    /// The TLS configuration for the server named `host` (a DNS name or an
    /// address, as in the URL).
    pub fn new(s: &TlsSettings, host: &str) -> Result<Arc<ClientTls>> {
        let ca = s.ca_file.as_ref().ok_or_else(|| bad("?tls=1 needs [tls] ca_file in the client settings".into()))?;
        let mut roots = rustls::RootCertStore::empty();
        for c in pem_certs(ca)? {
            roots.add(c).map_err(|e| bad(format!("{}: unusable authority certificate: {e}", ca.display())))?;
        }
        // AES-128-GCM first: the cheapest TLS 1.3 suite with AES
        // instructions, and every byte goes through it in user space.
        let mut provider = rustls::crypto::ring::default_provider();
        {
            use rustls::crypto::ring::cipher_suite::*;
            provider.cipher_suites =
                vec![TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384, TLS13_CHACHA20_POLY1305_SHA256];
        }
        let provider = Arc::new(provider);
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| bad(format!("TLS 1.3: {e}")))?
            .with_root_certificates(roots);
        let mut config = match (&s.cert_file, &s.key_file) {
            (Some(c), Some(k)) => builder
                .with_client_auth_cert(pem_certs(c)?, pem_key(k)?)
                .map_err(|e| bad(format!("client certificate {}: {e}", c.display())))?,
            (None, None) => builder.with_no_client_auth(),
            _ => return Err(bad("[tls] needs both cert_file and key_file, or neither".into())),
        };
        config.alpn_protocols = vec![ALPN_SUNRPC.to_vec()];
        let name = ServerName::try_from(host.to_string()).map_err(|e| bad(format!("TLS server name {host:?}: {e}")))?;
        Ok(Arc::new(ClientTls { connector: TlsConnector::from(Arc::new(config)), name }))
    }

    /// The probe, then the handshake, on a fresh connection.
    pub async fn start(&self, mut stream: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        let xid = rand_xid();
        stream.write_all(&probe_record(xid)).await?;
        let reply = read_record(&mut stream).await?;
        if !says_starttls(&reply, xid) {
            return Err(std::io::Error::other(
                "the server does not offer RPC-with-TLS (no STARTTLS to the AUTH_TLS probe)",
            ));
        }
        let tls = self
            .connector
            .connect(self.name.clone(), stream)
            .await
            .map_err(|e| std::io::Error::other(format!("TLS handshake failed: {e}")))?;
        if tls.get_ref().1.alpn_protocol() != Some(ALPN_SUNRPC) {
            return Err(std::io::Error::other("the server did not agree to ALPN \"sunrpc\""));
        }
        Ok(tls)
    }
}

fn rand_xid() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (t.as_nanos() as u32).rotate_left(7) ^ std::process::id()
}

/// NULL of the NFS program with the AUTH_TLS credential and an AUTH_NONE
/// verifier, record-marked (RFC 9289 section 4.1).
fn probe_record(xid: u32) -> Vec<u8> {
    let mut e = Encoder::with_capacity(48);
    for v in [xid, 0, 2, 100_003, 4, 0, AUTH_TLS, 0, 0, 0] {
        e.u32(v);
    }
    let body = e.into_bytes();
    let mut out = proto::framer::record_header(body.len(), true).to_vec();
    out.extend_from_slice(&body);
    out
}

/// Reads one whole (single-fragment) record.
async fn read_record(stream: &mut TcpStream) -> std::io::Result<Bytes> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).await?;
    let len = (u32::from_be_bytes(header) & 0x7fff_ffff) as usize;
    if len > MAX_PROBE_REPLY {
        return Err(std::io::Error::other(format!("{len}-byte reply to the AUTH_TLS probe")));
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await?;
    Ok(Bytes::from(body))
}

/// Whether `reply` accepts probe `xid` with the "STARTTLS" verifier.
fn says_starttls(reply: &Bytes, xid: u32) -> bool {
    let mut d = Decoder::new(reply.clone());
    let head = (|| -> xdr::Result<_> { Ok((d.u32()?, d.u32()?, d.u32()?, d.u32()?, d.opaque_var(400)?)) })();
    matches!(head, Ok((x, 1, 0, 0, verf)) if x == xid && &verf[..] == b"STARTTLS")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_is_what_the_server_recognises() {
        let rec = probe_record(42);
        assert_eq!(server_core_probe(&rec[4..]), Some(42));
        let yes = {
            let mut e = Encoder::new();
            for v in [42, 1, 0, 0] {
                e.u32(v);
            }
            e.opaque_var(b"STARTTLS");
            e.u32(0);
            e.into_bytes()
        };
        assert!(says_starttls(&yes, 42));
        assert!(!says_starttls(&yes, 43));
    }

    /// The probe's fields as RFC 9289 lays them out: CALL, RPC 2, NULL,
    /// AUTH_TLS.
    fn server_core_probe(body: &[u8]) -> Option<u32> {
        let w = |i: usize| u32::from_be_bytes(body[i * 4..i * 4 + 4].try_into().unwrap());
        (w(1) == 0 && w(2) == 2 && w(5) == 0 && w(6) == AUTH_TLS && w(7) == 0).then(|| w(0))
    }
}

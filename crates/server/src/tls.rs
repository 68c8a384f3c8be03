//! RPC-with-TLS (RFC 9289) on the server: the rustls configuration from
//! the `[tls]` settings, and the start of a connection. A client that
//! wants TLS sends, as its first record, a NULL call with the AUTH_TLS
//! credential; the server answers "STARTTLS" in clear text and the TLS 1.3
//! handshake follows on the same connection (ALPN "sunrpc"). Any other
//! first record makes a clear-text connection, as before.
//!
//! A client certificate is asked for when `client_ca_file` is set, and
//! the connection is then mutual TLS (exports may demand it with
//! `xprtsec=mtls`); without one it is plain TLS. The kernel here has no
//! TLS offload (kTLS), so records are encrypted in user space and READ
//! data is copied through it (no sendfile on TLS connections).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use server_core::TransportSecurity;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use proto::framer::RecordDecoder;

/// The ALPN protocol RPC-with-TLS peers must agree on (RFC 9289 section 7.2).
pub const ALPN_SUNRPC: &[u8] = b"sunrpc";

/// `[tls]` in the settings file.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSettings {
    /// PEM certificate chain the server presents (leaf first). With
    /// `key_file`, turns RPC-with-TLS on; unset, clients asking for TLS
    /// are answered without "STARTTLS" and stay in clear text.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of the certificate (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
    /// PEM certificates of the authorities whose client certificates are
    /// accepted. Set: clients are asked for a certificate, and one that
    /// presents a valid one is on mutual TLS (`xprtsec=mtls`); one that
    /// presents none is on plain TLS; an invalid one is refused.
    pub client_ca_file: Option<PathBuf>,
    /// How long the probe and the TLS handshake may take before the
    /// connection is dropped.
    pub handshake_timeout_ms: u64,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings { cert_file: None, key_file: None, client_ca_file: None, handshake_timeout_ms: 10_000 }
    }
}

/// The server's TLS side, when configured.
pub struct Tls {
    acceptor: TlsAcceptor,
    timeout: Duration,
}

/// A `[tls]` configuration that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("[tls] needs both cert_file and key_file")]
    Incomplete,
    #[error("cannot read certificate file {}", path.display())]
    ReadCerts {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not PEM certificates", path.display())]
    NotPemCerts {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: no certificate in it", path.display())]
    NoCert { path: PathBuf },
    #[error("cannot read key file {}", path.display())]
    ReadKey {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a PEM private key", path.display())]
    NotPemKey {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: no private key in it", path.display())]
    NoKey { path: PathBuf },
    #[error("{}: unusable authority certificate", path.display())]
    Authority {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("client certificate verifier")]
    Verifier(#[source] rustls::server::VerifierBuilderError),
    #[error("{} and {} do not make a usable certificate", cert.display(), key.display())]
    Certificate {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("TLS 1.3 with the ring provider")]
    Provider(#[source] rustls::Error),
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = std::fs::read(path).map_err(|source| TlsError::ReadCerts { path: path.to_path_buf(), source })?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut &pem[..])
        .collect::<Result<_, _>>()
        .map_err(|source| TlsError::NotPemCerts { path: path.to_path_buf(), source })?;
    if certs.is_empty() {
        return Err(TlsError::NoCert { path: path.to_path_buf() });
    }
    Ok(certs)
}

fn key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = std::fs::read(path).map_err(|source| TlsError::ReadKey { path: path.to_path_buf(), source })?;
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|source| TlsError::NotPemKey { path: path.to_path_buf(), source })?
        .ok_or_else(|| TlsError::NoKey { path: path.to_path_buf() })
}

/// The crypto provider: ring, with AES-128-GCM first, the cheapest of
/// the TLS 1.3 suites where the CPU has AES instructions (every byte of
/// an RPC-with-TLS connection is encrypted in user space here).
pub fn tls13() -> Arc<rustls::crypto::CryptoProvider> {
    use rustls::crypto::ring::cipher_suite::*;
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites = vec![TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384, TLS13_CHACHA20_POLY1305_SHA256];
    Arc::new(p)
}

impl Tls {
    /// The server's TLS configuration, `None` when no certificate is set.
    pub fn from_settings(s: &TlsSettings) -> Result<Option<Tls>, TlsError> {
        let (cert, key_path) = match (&s.cert_file, &s.key_file) {
            (None, None) => return Ok(None),
            (Some(c), Some(k)) => (c, k),
            _ => return Err(TlsError::Incomplete),
        };
        let builder = rustls::ServerConfig::builder_with_provider(tls13())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(TlsError::Provider)?;
        let builder = match &s.client_ca_file {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in certs(ca)? {
                    roots.add(c).map_err(|source| TlsError::Authority { path: ca.clone(), source })?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), tls13())
                    .allow_unauthenticated()
                    .build()
                    .map_err(TlsError::Verifier)?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(certs(cert)?, key(key_path)?)
            .map_err(|source| TlsError::Certificate { cert: cert.clone(), key: key_path.clone(), source })?;
        config.alpn_protocols = vec![ALPN_SUNRPC.to_vec()];
        config.ignore_client_order = true;
        // RPC connections live long and reconnect rarely: no resumption.
        config.send_tls13_tickets = 0;
        Ok(Some(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            timeout: Duration::from_millis(s.handshake_timeout_ms.max(1)),
        }))
    }
}

/// How a connection goes on after its start.
pub enum Start {
    /// Clear text; `decoder` holds what was read so far.
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>, TransportSecurity),
}

/// What the first bytes of a connection are.
enum First {
    /// Not enough bytes yet to tell.
    Unknown,
    Probe,
    Other,
}

/// Looks at the first record in `buf` (with its record marking): enough
/// of it to tell the probe (a NULL call with AUTH_TLS) from anything else.
fn first_record(buf: &[u8]) -> First {
    let Some(header) = buf.get(..4) else { return First::Unknown };
    let len = (u32::from_be_bytes([header[0], header[1], header[2], header[3]]) & 0x7fff_ffff) as usize;
    match buf.get(4..4 + len.min(32)) {
        Some(body) if body.len() == 32 => {
            if server_core::tls_probe_xid(body).is_some() {
                First::Probe
            } else {
                First::Other
            }
        }
        // A record too short to be a probe is something else.
        _ if buf.len() >= 4 + len => First::Other,
        _ => First::Unknown,
    }
}

/// The start of a connection on a server with TLS: reads until the first
/// record shows whether it is the AUTH_TLS probe; if it is, answers it and
/// makes the TLS handshake. Err: the connection is to be dropped (the
/// reason is logged by the caller).
pub async fn start(tls: &Tls, mut stream: TcpStream, decoder: &mut RecordDecoder) -> Result<Start, String> {
    let peeked = tokio::time::timeout(tls.timeout, async {
        loop {
            match first_record(decoder.buffer_mut()) {
                First::Unknown => {}
                First::Probe => return Ok(true),
                First::Other => return Ok(false),
            }
            decoder.buffer_mut().reserve(512);
            match stream.read_buf(decoder.buffer_mut()).await {
                Ok(0) => return Err("closed before its first record".to_string()),
                Ok(_) => {}
                Err(e) => return Err(format!("read failed: {e}")),
            }
        }
    })
    .await;
    let probe = match peeked {
        Ok(r) => r?,
        // A client that says nothing: clear text, the idle timeout
        // deals with it.
        Err(_) => false,
    };
    if !probe {
        return Ok(Start::Plain(stream));
    }
    let record = match decoder.next_record() {
        Ok(Some(r)) => r,
        Ok(None) => {
            // The probe's header came, its body is still arriving.
            match tokio::time::timeout(tls.timeout, read_record(&mut stream, decoder)).await {
                Ok(r) => r?,
                Err(_) => return Err("probe not completed in time".into()),
            }
        }
        Err(e) => return Err(e.to_string()),
    };
    let Some(xid) = server_core::tls_probe_xid(&record) else { return Err("garbled probe".into()) };
    if decoder.buffered() != 0 {
        // RFC 9289 section 5.1.1: nothing may come between the probe and
        // the handshake.
        return Err("data after the AUTH_TLS probe before the TLS handshake".into());
    }
    let reply = proto::framer::frame_segments(server_core::starttls_reply(xid)).concat();
    stream.write_all(&reply).await.map_err(|e| format!("STARTTLS reply not sent: {e}"))?;
    let tls_stream = match tokio::time::timeout(tls.timeout, tls.acceptor.accept(stream)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
        Err(_) => return Err("TLS handshake not completed in time".into()),
    };
    let (_, conn) = tls_stream.get_ref();
    if conn.alpn_protocol() != Some(ALPN_SUNRPC) {
        return Err("TLS client did not offer ALPN \"sunrpc\" (RFC 9289 section 5.2)".into());
    }
    let security = match conn.peer_certificates().and_then(|c| c.first()) {
        Some(cert) => TransportSecurity::Mtls { identity: identity(cert) },
        None => TransportSecurity::Tls,
    };
    Ok(Start::Tls(Box::new(tls_stream), security))
}

async fn read_record(stream: &mut TcpStream, decoder: &mut RecordDecoder) -> Result<bytes::Bytes, String> {
    loop {
        decoder.buffer_mut().reserve(512);
        match stream.read_buf(decoder.buffer_mut()).await {
            Ok(0) => return Err("closed during the probe".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("read failed: {e}")),
        }
        if let Some(r) = decoder.next_record().map_err(|e| e.to_string())? {
            return Ok(r);
        }
    }
}

/// A client certificate's name for logs: the SHA-256 of its DER, which
/// names exactly one certificate (`openssl x509 -fingerprint -sha256`
/// prints the same digits).
fn identity(cert: &CertificateDer) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(cert.as_ref());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

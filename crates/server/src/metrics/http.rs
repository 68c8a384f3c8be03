//! The metrics endpoint: `GET /metrics` over HTTP/1.1 (hyper), anything
//! else 404.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

/// How long a scraper may take to send its request head; a connection that
/// sends nothing is closed after it rather than held.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The exposition format the encoder writes.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves the registry until the task is dropped.
pub async fn serve(addr: SocketAddr, registry: Registry) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "metrics endpoint listening");
    let registry = Arc::new(registry);
    loop {
        let (sock, peer) = listener.accept().await?;
        let registry = registry.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let registry = registry.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(&req, &registry)) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(sock), service);
            if let Err(e) = conn.await {
                tracing::debug!(%peer, "metrics connection ended: {e}");
            }
        });
    }
}

fn answer(req: &Request<Incoming>, registry: &Registry) -> Response<Full<Bytes>> {
    let reply = |status, content_type, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
        r
    };
    if req.uri().path() != "/metrics" {
        return reply(StatusCode::NOT_FOUND, "text/plain", "see /metrics\n".into());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET /metrics\n".into());
    }
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, registry) {
        Ok(()) => reply(StatusCode::OK, CONTENT_TYPE, body),
        Err(_) => reply(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", "encoding failed\n".into()),
    }
}

//! Per-procedure counters and latency histograms, served in the Prometheus
//! text exposition format.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Upper bounds of the latency buckets, in seconds: from a memory-backend
/// GETATTR (~10 µs) to a slow fsync (seconds).
const LATENCY_BUCKETS_S: [f64; 16] =
    [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

#[derive(Default)]
struct ProcStats {
    count: AtomicU64,
    errors: AtomicU64,
    sum_ns: AtomicU64,
    buckets: [AtomicU64; LATENCY_BUCKETS_S.len()],
}

#[derive(Default)]
pub struct Metrics {
    procs: RwLock<HashMap<&'static str, Arc<ProcStats>>>,
    pub connections_open: AtomicI64,
    pub connections_total: AtomicU64,
    pub connections_rejected: AtomicU64,
    /// Connections closed to make room at the connection limit.
    pub connections_evicted: AtomicU64,
    /// Connections closed because their partial record stalled over the
    /// global partial-record budget.
    pub connections_over_budget: AtomicU64,
    /// Bytes held in records still arriving (all connections).
    pub partial_record_bytes: AtomicI64,
    pub bytes_received: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub bad_records: AtomicU64,
    pub in_flight: AtomicI64,
    /// Requests run on the connection's own thread.
    pub requests_inline: AtomicU64,
    /// Requests handed to a worker thread.
    pub requests_worker: AtomicU64,
    /// Requests tried on the connection's thread that would have had to
    /// wait, and went to a worker (also counted there).
    pub requests_inline_fallback: AtomicU64,
    /// Replies the socket could not take at once, finished later by the
    /// connection's flusher.
    pub replies_deferred: AtomicU64,
}

impl Metrics {
    pub fn record(&self, label: &'static str, ok: bool, elapsed: Duration) {
        let stats = {
            let map = self.procs.read();
            map.get(label).cloned()
        };
        let stats = match stats {
            Some(s) => s,
            None => self.procs.write().entry(label).or_default().clone(),
        };
        stats.count.fetch_add(1, Relaxed);
        if !ok {
            stats.errors.fetch_add(1, Relaxed);
        }
        stats.sum_ns.fetch_add(elapsed.as_nanos() as u64, Relaxed);
        let secs = elapsed.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS_S.iter().position(|&b| secs <= b) {
            stats.buckets[i].fetch_add(1, Relaxed);
        }
    }

    /// The metrics in Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let gauges: [(&str, &str, i64); 5] = [
            (
                "nfsx_partial_record_bytes",
                "Bytes held in records still arriving, all connections.",
                self.partial_record_bytes.load(Relaxed),
            ),
            ("nfsx_resident_memory_bytes", "The server's resident memory (VmRSS).", rss_bytes()),
            ("nfsx_connections_open", "Client connections currently open.", self.connections_open.load(Relaxed)),
            ("nfsx_requests_in_flight", "Requests being processed.", self.in_flight.load(Relaxed)),
            ("nfsx_up", "1 while the server runs.", 1),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let counters: [(&str, &str, u64); 11] = [
            (
                "nfsx_connections_evicted_total",
                "Idle connections closed to make room for a new one at max_connections.",
                self.connections_evicted.load(Relaxed),
            ),
            (
                "nfsx_connections_over_budget_total",
                "Connections closed because their partial record stalled over max_partial_record_bytes.",
                self.connections_over_budget.load(Relaxed),
            ),
            ("nfsx_connections_total", "Client connections accepted.", self.connections_total.load(Relaxed)),
            (
                "nfsx_connections_rejected_total",
                "Connections refused at the connection limit.",
                self.connections_rejected.load(Relaxed),
            ),
            ("nfsx_received_bytes_total", "Bytes read from clients.", self.bytes_received.load(Relaxed)),
            ("nfsx_sent_bytes_total", "Bytes written to clients.", self.bytes_sent.load(Relaxed)),
            ("nfsx_bad_records_total", "Records that could not be framed or parsed.", self.bad_records.load(Relaxed)),
            (
                "nfsx_requests_inline_total",
                "Requests run on the thread that read them (no hand-off).",
                self.requests_inline.load(Relaxed),
            ),
            (
                "nfsx_requests_worker_total",
                "Requests handed to a worker thread (may block).",
                self.requests_worker.load(Relaxed),
            ),
            (
                "nfsx_requests_inline_fallback_total",
                "Requests tried inline (small READs) that would have waited and went to a worker.",
                self.requests_inline_fallback.load(Relaxed),
            ),
            (
                "nfsx_replies_deferred_total",
                "Replies the socket could not take at once (sent when it drained).",
                self.replies_deferred.load(Relaxed),
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        }
        let mut procs: Vec<(&'static str, Arc<ProcStats>)> =
            self.procs.read().iter().map(|(k, v)| (*k, v.clone())).collect();
        procs.sort_by_key(|(k, _)| *k);
        out.push_str(
            "# HELP nfsx_requests_total RPC requests answered, by procedure.\n# TYPE nfsx_requests_total counter\n",
        );
        for (label, s) in &procs {
            let _ = writeln!(out, "nfsx_requests_total{{proc=\"{label}\"}} {}", s.count.load(Relaxed));
        }
        out.push_str("# HELP nfsx_request_errors_total Requests answered with an error status.\n# TYPE nfsx_request_errors_total counter\n");
        for (label, s) in &procs {
            let _ = writeln!(out, "nfsx_request_errors_total{{proc=\"{label}\"}} {}", s.errors.load(Relaxed));
        }
        out.push_str("# HELP nfsx_request_duration_seconds Time from a decoded request to its encoded reply.\n# TYPE nfsx_request_duration_seconds histogram\n");
        for (label, s) in &procs {
            let mut cum = 0;
            for (i, b) in LATENCY_BUCKETS_S.iter().enumerate() {
                cum += s.buckets[i].load(Relaxed);
                let _ = writeln!(out, "nfsx_request_duration_seconds_bucket{{proc=\"{label}\",le=\"{b}\"}} {cum}");
            }
            let count = s.count.load(Relaxed);
            let _ = writeln!(out, "nfsx_request_duration_seconds_bucket{{proc=\"{label}\",le=\"+Inf\"}} {count}");
            let sum = s.sum_ns.load(Relaxed) as f64 / 1e9;
            let _ = writeln!(out, "nfsx_request_duration_seconds_sum{{proc=\"{label}\"}} {sum}");
            let _ = writeln!(out, "nfsx_request_duration_seconds_count{{proc=\"{label}\"}} {count}");
        }
        out
    }
}

/// The process's resident memory from /proc (0 where there is none).
fn rss_bytes() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: i64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    kib * 1024
}

/// Largest HTTP request head read before answering; the endpoint only
/// needs the request line.
const MAX_HTTP_REQUEST: usize = 8192;

/// The backends' own counters (handle cache, flushes), one series per
/// export, appended to the exposition.
pub fn render_backends(exports: &[server_core::Export]) -> String {
    let mut by_name: std::collections::BTreeMap<&'static str, (vfs::Counter, Vec<(String, u64)>)> = Default::default();
    for x in exports {
        for c in x.fs.counters() {
            let e = by_name.entry(c.name).or_insert_with(|| (c.clone(), Vec::new()));
            e.1.push((x.path.clone(), c.value));
        }
    }
    let mut out = String::new();
    for (name, (c, series)) in by_name {
        let (full, kind) = if c.gauge {
            (format!("nfsx_backend_{name}"), "gauge")
        } else {
            (format!("nfsx_backend_{name}_total"), "counter")
        };
        let _ = writeln!(out, "# HELP {full} {}\n# TYPE {full} {kind}", c.help);
        for (path, v) in series {
            let path = path.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(out, "{full}{{export=\"{path}\"}} {v}");
        }
    }
    out
}

/// Serves `GET /metrics` (anything else is 404) until the task is dropped.
pub async fn serve(addr: SocketAddr, metrics: Arc<Metrics>, core: Arc<server_core::Core>) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "metrics endpoint listening");
    loop {
        let (mut sock, _) = listener.accept().await?;
        let metrics = metrics.clone();
        let core = core.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; MAX_HTTP_REQUEST];
            let n = match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await {
                Ok(Ok(n)) => n,
                _ => return,
            };
            let head = String::from_utf8_lossy(&buf[..n]);
            let (status, body) = if head.starts_with("GET /metrics") {
                ("200 OK", metrics.render() + &render_backends(core.exports()))
            } else {
                ("404 Not Found", "see /metrics\n".to_string())
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        });
    }
}

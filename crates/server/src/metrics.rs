//! The server's metrics: counters and gauges kept on the request path,
//! exposed in the OpenMetrics text format by the `prometheus-client` crate
//! (see [`http`] for the endpoint).
//!
//! Connection, byte and placement counts are the crate's own `Counter` and
//! `Gauge` (one relaxed atomic add each). Per-procedure counts and latency
//! are kept in plain atomics and handed to the encoder by a collector at
//! scrape time: the crate's `Histogram` takes a mutex on every observation,
//! and every RPC makes one, so the request path keeps its lock-free buckets.

mod dir_delegs;
pub mod http;
mod nlm;
mod shares;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

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

/// Counters updated by the transport; cloned handles of each are
/// registered with the exposition in [`Metrics::registry`].
#[derive(Default)]
pub struct Metrics {
    procs: RwLock<HashMap<&'static str, Arc<ProcStats>>>,
    pub connections_open: Gauge,
    pub connections_total: Counter,
    pub connections_rejected: Counter,
    /// Connections closed to make room at the connection limit.
    pub connections_evicted: Counter,
    /// Connections closed because their partial record stalled over the
    /// global partial-record budget.
    pub connections_over_budget: Counter,
    /// Bytes held in records still arriving (all connections).
    pub partial_record_bytes: Gauge,
    pub bytes_received: Counter,
    pub bytes_sent: Counter,
    /// Replies whose data went from the page cache (sendfile): READs and
    /// READ_PLUS that took the file-region path.
    pub replies_from_files: Counter,
    /// Replies that could have gone by sendfile, read into memory instead
    /// as their connection had other requests in flight.
    pub replies_from_files_busy: Counter,
    pub bad_records: Counter,
    pub in_flight: Gauge,
    /// Requests run on the connection's own thread.
    pub requests_inline: Counter,
    /// Requests handed to a worker thread.
    pub requests_worker: Counter,
    /// Of those, UNSTABLE WRITEs queued behind a running one to the same
    /// file and run next by its worker, with no wake-up of their own.
    pub requests_chained: Counter,
    /// Requests that may block run on their connection's thread, the
    /// connection having had one request at a time.
    pub requests_in_place: Counter,
    /// Of those, the ones run without `block_in_place`.
    pub requests_in_place_direct: Counter,
    /// Polls for a lone client's next request that found it (`lone_poll_us`).
    pub lone_polls_ready: Counter,
    /// Polls that ran out of time, after which the thread slept.
    pub lone_polls_quiet: Counter,
    /// Lone waits not polled for: the connection's recent polls ran out
    /// (`lone_poll_max_quiet`).
    pub lone_polls_skipped: Counter,
    /// Time threads spent polling, found or not: CPU the polls cost.
    pub lone_poll_microseconds: Counter,
    /// Requests tried on the connection's thread that would have had to
    /// wait, and went to a worker (also counted there).
    pub requests_inline_fallback: Counter,
    /// Requests the core parked to wait for a client's answer to a
    /// callback (a GETATTR waiting on CB_GETATTR), and those of them
    /// resumed by the answer rather than by their timeout.
    pub requests_parked: Counter,
    pub requests_woken: Counter,
    /// Replies the socket could not take at once, finished later by the
    /// connection's flusher.
    pub replies_deferred: Counter,
    /// Connections that became RPC-with-TLS sessions.
    pub tls_sessions: Counter,
    /// Connections dropped while starting TLS (bad certificate, no ALPN,
    /// a failed or timed-out handshake, data before it).
    pub tls_failures: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
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

    /// Everything the endpoint shows: this transport's counters, the
    /// per-procedure series, the process's memory and each export's backend
    /// counters. Names are given without `_total`; the encoder adds it to
    /// counters.
    /// `cluster`: a head's part in a cluster (`[cluster] node`), if any.
    pub fn registry(
        self: &Arc<Self>,
        core: Arc<server_core::Core>,
        cluster: Option<Arc<crate::cluster::stats::Stats>>,
    ) -> Registry {
        let mut r = Registry::default();
        r.register("nfsx_up", "1 while the server runs", ConstGauge::new(1i64));
        let gauges = [
            ("nfsx_connections_open", "Client connections currently open", &self.connections_open),
            ("nfsx_requests_in_flight", "Requests being processed", &self.in_flight),
            (
                "nfsx_partial_record_bytes",
                "Bytes held in records still arriving, all connections",
                &self.partial_record_bytes,
            ),
        ];
        for (name, help, g) in gauges {
            r.register(name, help, g.clone());
        }
        let counters = [
            ("nfsx_connections", "Client connections accepted", &self.connections_total),
            ("nfsx_connections_rejected", "Connections refused at the connection limit", &self.connections_rejected),
            (
                "nfsx_connections_evicted",
                "Idle connections closed to make room for a new one at max_connections",
                &self.connections_evicted,
            ),
            (
                "nfsx_connections_over_budget",
                "Connections closed because their partial record stalled over max_partial_record_bytes",
                &self.connections_over_budget,
            ),
            ("nfsx_received_bytes", "Bytes read from clients", &self.bytes_received),
            ("nfsx_sent_bytes", "Bytes written to clients", &self.bytes_sent),
            (
                "nfsx_replies_from_files",
                "Replies whose data was sent from the page cache (sendfile) rather than from memory",
                &self.replies_from_files,
            ),
            (
                "nfsx_replies_from_files_busy",
                "Replies that could have been sent from the page cache, read into memory as their connection had other requests in flight (read_sendfile_alone_only)",
                &self.replies_from_files_busy,
            ),
            ("nfsx_bad_records", "Records that could not be framed or parsed", &self.bad_records),
            ("nfsx_requests_inline", "Requests run on the thread that read them (no hand-off)", &self.requests_inline),
            ("nfsx_requests_worker", "Requests handed to a worker thread (may block)", &self.requests_worker),
            (
                "nfsx_requests_chained",
                "UNSTABLE WRITEs run next by the worker writing the same file (also counted as worker requests)",
                &self.requests_chained,
            ),
            (
                "nfsx_requests_in_place",
                "Requests that may block run on their connection's thread (one request at a time on it)",
                &self.requests_in_place,
            ),
            (
                "nfsx_requests_in_place_direct",
                "Requests run in place without handing the thread's other connections away (max_requests_in_place_direct)",
                &self.requests_in_place_direct,
            ),
            (
                "nfsx_lone_polls_ready",
                "Polls for a lone client's next request that found it without sleeping (lone_poll_us)",
                &self.lone_polls_ready,
            ),
            (
                "nfsx_lone_polls_quiet",
                "Polls for a lone client's next request that ran out of time before the thread slept",
                &self.lone_polls_quiet,
            ),
            (
                "nfsx_lone_polls_skipped",
                "Lone connections' waits not polled for, their recent polls having run out (lone_poll_max_quiet)",
                &self.lone_polls_skipped,
            ),
            (
                "nfsx_lone_poll_microseconds",
                "Time spent polling for lone clients' next requests, found or not (CPU the polls cost)",
                &self.lone_poll_microseconds,
            ),
            (
                "nfsx_requests_inline_fallback",
                "Requests tried inline (small READs) that would have waited and went to a worker",
                &self.requests_inline_fallback,
            ),
            (
                "nfsx_requests_parked",
                "Requests that waited for a client's answer to a callback without holding a thread",
                &self.requests_parked,
            ),
            (
                "nfsx_requests_woken",
                "Parked requests resumed by the answer they waited for (the others by their timeout)",
                &self.requests_woken,
            ),
            (
                "nfsx_replies_deferred",
                "Replies the socket could not take at once (sent when it drained)",
                &self.replies_deferred,
            ),
            ("nfsx_tls_sessions", "Connections that started RPC-with-TLS", &self.tls_sessions),
            (
                "nfsx_tls_failures",
                "Connections dropped while starting TLS (handshake, certificate, ALPN)",
                &self.tls_failures,
            ),
        ];
        for (name, help, c) in counters {
            r.register(name, help, c.clone());
        }
        r.register_collector(Box::new(ProcCollector(self.clone())));
        r.register_collector(Box::new(ProcessCollector));
        r.register_collector(Box::new(PnfsCollector(core.clone())));
        r.register_collector(Box::new(GssCollector(core.clone())));
        r.register_collector(Box::new(shares::SharesCollector(core.clone())));
        r.register_collector(Box::new(nlm::NlmCollector(core.clone())));
        r.register_collector(Box::new(dir_delegs::DirDelegCollector(core.clone())));
        r.register_collector(Box::new(BackendCollector(core)));
        if let Some(c) = cluster {
            r.register_collector(Box::new(crate::cluster::stats::StatsCollector(c)));
        }
        r
    }
}

/// Per-procedure request counts, errors and latency histograms.
#[derive(Debug)]
struct ProcCollector(Arc<Metrics>);

impl Collector for ProcCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut procs: Vec<(&'static str, Arc<ProcStats>)> =
            self.0.procs.read().iter().map(|(k, v)| (*k, v.clone())).collect();
        procs.sort_by_key(|(k, _)| *k);
        let counts: [(&str, &str, fn(&ProcStats) -> u64); 2] = [
            ("nfsx_requests", "RPC requests answered, by procedure", |s| s.count.load(Relaxed)),
            ("nfsx_request_errors", "Requests answered with an error status", |s| s.errors.load(Relaxed)),
        ];
        for (name, help, get) in counts {
            let mut m = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (label, s) in &procs {
                ConstCounter::new(get(s)).encode(m.encode_family(&[("proc", *label)])?)?;
            }
        }
        let mut m = encoder.encode_descriptor(
            "nfsx_request_duration_seconds",
            "Time from a decoded request to its encoded reply",
            None,
            MetricType::Histogram,
        )?;
        for (label, s) in &procs {
            let count = s.count.load(Relaxed);
            let mut buckets: Vec<(f64, u64)> =
                LATENCY_BUCKETS_S.iter().zip(&s.buckets).map(|(b, n)| (*b, n.load(Relaxed))).collect();
            // The encoder sums the buckets; the last one holds what exceeded
            // every bound.
            let bounded: u64 = buckets.iter().map(|(_, n)| n).sum();
            buckets.push((f64::INFINITY, count.saturating_sub(bounded)));
            let sum = s.sum_ns.load(Relaxed) as f64 / 1e9;
            m.encode_family(&[("proc", *label)])?.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        Ok(())
    }
}

/// The process's resident memory, read at scrape time.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rss = ConstGauge::new(rss_bytes());
        rss.encode(encoder.encode_descriptor(
            "nfsx_resident_memory_bytes",
            "The server's resident memory (VmRSS)",
            None,
            rss.metric_type(),
        )?)
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

/// RPCSEC_GSS contexts established, read at scrape time. Their refusals
/// are counted per kind as requests (`proc="rpcsec_gss.credproblem"`, ...).
struct GssCollector(Arc<server_core::Core>);

impl std::fmt::Debug for GssCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GssCollector")
    }
}

impl Collector for GssCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let n = ConstGauge::new(self.0.gss_contexts() as i64);
        n.encode(encoder.encode_descriptor(
            "nfsx_gss_contexts",
            "RPCSEC_GSS (Kerberos) contexts established",
            None,
            n.metric_type(),
        )?)
    }
}

/// pNFS data servers as clients report them (LAYOUTERROR, LAYOUTRETURN
/// error reports), one series per data server address.
struct PnfsCollector(Arc<server_core::Core>);

impl std::fmt::Debug for PnfsCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PnfsCollector")
    }
}

impl Collector for PnfsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let reports = self.0.pnfs_devices();
        if reports.is_empty() {
            return Ok(());
        }
        let addrs = &self.0.settings().pnfs_data_servers;
        let label = |i: usize| addrs.get(i).map(|a| a.to_string()).unwrap_or_default();
        let mut m = encoder.encode_descriptor(
            "nfsx_pnfs_device_errors",
            "I/O errors clients reported at each pNFS data server",
            None,
            MetricType::Counter,
        )?;
        for r in &reports {
            let device = label(r.index);
            ConstCounter::new(r.errors).encode(m.encode_family(&[("device", device.as_str())])?)?;
        }
        let mut m = encoder.encode_descriptor(
            "nfsx_pnfs_device_held",
            "1 while a pNFS data server reported failing is named in no new layout (pnfs_error_hold_secs)",
            None,
            MetricType::Gauge,
        )?;
        for r in &reports {
            let device = label(r.index);
            ConstGauge::new(i64::from(r.held)).encode(m.encode_family(&[("device", device.as_str())])?)?;
        }
        Ok(())
    }
}

/// The backends' own counters (handle cache, flushes), one series per
/// export, named `nfsx_backend_<name>`.
struct BackendCollector(Arc<server_core::Core>);

impl std::fmt::Debug for BackendCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BackendCollector")
    }
}

impl Collector for BackendCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut by_name: std::collections::BTreeMap<&'static str, (vfs::Counter, Vec<(String, u64)>)> =
            Default::default();
        for x in self.0.exports() {
            for c in x.fs.counters() {
                let e = by_name.entry(c.name).or_insert_with(|| (c.clone(), Vec::new()));
                e.1.push((x.path.clone(), c.value));
            }
        }
        // The transport reads each record's RPC header once, for every
        // question it asks before running it: this equals the requests
        // answered (nfsx_requests_total summed over procedures).
        let parsed = encoder.encode_descriptor(
            "nfsx_rpc_headers_decoded",
            "RPC records whose header was decoded (once per record received)",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.0.records_parsed()).encode(parsed)?;
        let locked = encoder.encode_descriptor(
            "nfsx_nfs4_state_locked",
            "Times the NFSv4 state's lock was taken",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(self.0.nfs4_state_locked()).encode(locked)?;
        for (name, (c, series)) in by_name {
            let full = format!("nfsx_backend_{name}");
            let kind = if c.gauge { MetricType::Gauge } else { MetricType::Counter };
            let mut m = encoder.encode_descriptor(&full, c.help, None, kind)?;
            for (path, v) in &series {
                let labels = [("export", path.as_str())];
                if c.gauge {
                    ConstGauge::new(*v as i64).encode(m.encode_family(&labels)?)?;
                } else {
                    ConstCounter::new(*v).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        Ok(())
    }
}

//! What a head's following of the shared record shows on the metrics
//! endpoint: whether the cluster is in grace, how long each other head has
//! been silent (what an automatic takeover acts on), the takeovers this
//! head made, and the looks at the record that failed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

#[derive(Debug, Default)]
pub struct Stats {
    /// Set while any head's clients reclaim (this head's view).
    pub in_grace: AtomicBool,
    /// Dead heads this head took over by itself.
    pub takeovers: AtomicU64,
    /// Reads or updates of the shared record that failed.
    pub record_failures: AtomicU64,
    /// Other heads -> milliseconds since their entry last changed.
    pub silent_ms: Mutex<BTreeMap<String, u64>>,
}

/// The [`Stats`] of a head, as a Prometheus collector.
#[derive(Debug)]
pub struct StatsCollector(pub Arc<Stats>);

impl Collector for StatsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let grace = ConstGauge::new(i64::from(s.in_grace.load(Relaxed)));
        grace.encode(encoder.encode_descriptor(
            "nfsx_cluster_in_grace",
            "1 while some head's NFSv4 clients reclaim and every head grants no new state",
            None,
            grace.metric_type(),
        )?)?;
        let counters = [
            ("nfsx_cluster_takeovers", "Silent heads this head took over by itself", &s.takeovers),
            ("nfsx_cluster_record_failures", "Looks at the shared record in RADOS that failed", &s.record_failures),
        ];
        for (name, help, c) in counters {
            let c = ConstCounter::new(c.load(Relaxed));
            c.encode(encoder.encode_descriptor(name, help, None, c.metric_type())?)?;
        }
        let silent = s.silent_ms.lock().clone();
        let mut m = encoder.encode_descriptor(
            "nfsx_cluster_head_silent_seconds",
            "Time since each other head's entry in the shared record changed (takeover_after_secs acts on it)",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (head, ms) in silent {
            ConstGauge::new(ms as f64 / 1000.0).encode(m.encode_family(&[("head", head.as_str())])?)?;
        }
        Ok(())
    }
}

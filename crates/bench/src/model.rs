//! The result model: what `--json FILE` writes and what the terminal summary
//! and the HTML report are made from. Scripts rely on these keys; extend,
//! never rename.
//!
//! Every run of every target is kept, failed ones included (`ok: false`,
//! with the error), so a partial result is still a result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::stats::Summary;
use crate::target::OpStat;

/// One invocation of `nfsx bench`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BenchReport {
    /// `seqwrite`, `data`, `metadata`, `macro`, `multi-client`, `recall`,
    /// `locked-read`, `copy`.
    pub workload: String,
    /// The command line, for rerunning.
    pub command: Vec<String>,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    pub host: HostInfo,
    /// Targets in command-line order; the first is the ratio denominator.
    pub targets: Vec<String>,
    /// The workload's parameters after defaults (sizes in bytes).
    pub params: BTreeMap<String, Value>,
    /// The headline metrics of this workload, most important first; each is
    /// a key present in every successful run's `metrics`.
    pub metrics: Vec<String>,
    /// Every repetition of every point on every target, in execution order.
    pub runs: Vec<RunRecord>,
    /// Mean and confidence interval per (target, point, metric).
    pub summary: Vec<PointSummary>,
    /// Ratio of each later target's mean to the first target's, per point
    /// and headline metric.
    pub ratios: Vec<Ratio>,
    /// True when some run failed or the bench was interrupted.
    pub partial: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpus: usize,
    pub kernel: String,
    /// Version of nfsx that ran the bench.
    pub nfsx_version: String,
}

/// One repetition at one point of the parameter space, on one target.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunRecord {
    pub target: String,
    /// Repetition number, from 1.
    pub run: usize,
    /// The coordinates of this point when the workload sweeps parameters,
    /// e.g. {"io_size": 4096, "threads": 8, "delay_ms": 10}.
    pub point: BTreeMap<String, Value>,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// The protocol the client spoke ("NFSv3", "NFSv4.1", "NFSv4.2") on an NFS target.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub protocol: Option<String>,
    /// Wall-clock seconds of the measured part.
    pub elapsed_s: f64,
    /// The workload's measurements, at the top level of the run object:
    /// for `seqwrite` `write_mbps`, `flush_mbps`, `close_mbps` and
    /// `call_latency_us` (one entry per write call, in order).
    #[serde(flatten)]
    pub metrics: BTreeMap<String, Value>,
    /// Per-operation counters of this run (deltas), Table 1 style; for
    /// several clients, the sum over clients.
    pub op_stats: Vec<OpStat>,
    /// Per-client counters when the run had more than one client.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub client_op_stats: Vec<Vec<OpStat>>,
}

impl RunRecord {
    /// A headline metric as a number, if present.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).and_then(Value::as_f64)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PointSummary {
    pub target: String,
    pub point: BTreeMap<String, Value>,
    pub metric: String,
    #[serde(flatten)]
    pub summary: Summary,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ratio {
    pub point: BTreeMap<String, Value>,
    pub metric: String,
    /// `target` mean divided by `baseline` mean.
    pub target: String,
    pub baseline: String,
    pub ratio: f64,
}

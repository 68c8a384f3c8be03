//! The papers' own numbers for the workloads that reproduce one of their
//! figures, kept in this one table so the report can print them beside
//! what was measured. Only numbers the papers state (see
//! `shared/papers/`) are here; a workload that reproduces none has no row.

use serde_json::Value;

use crate::stats::Point;

/// One number of one paper, for one workload (and `op`) and metric.
pub(crate) struct PaperNumber {
    pub workload: &'static str,
    /// The `op` coordinate of the point, for workloads that run several.
    pub op: Option<&'static str>,
    pub metric: &'static str,
    /// Paper and figure or table.
    pub source: &'static str,
    /// The number as the paper gives it.
    pub number: &'static str,
    /// What the number is, and under which conditions it was measured.
    pub what: &'static str,
}

const CHEN_2015: &str = "Chen et al. 2015";

pub(crate) const PAPER_NUMBERS: &[PaperNumber] = &[
    PaperNumber {
        workload: "metadata",
        op: Some("read-small"),
        metric: "steady_ops_per_sec",
        source: "Fig. 7",
        number: "172×",
        what: "NFSv4.1 with read delegations over NFSv3, files read per second once every file is \
               cached (16 threads, 10 ms network delay)",
    },
    PaperNumber {
        workload: "locked-read",
        op: None,
        metric: "calls_per_client",
        source: "Table 1",
        number: "3,009 vs 60,008",
        what: "RPCs per client, NFSv4.1 with delegations vs NFSv3 (88,009 for NFSv4.1 without \
               delegations): 1,000 files each opened, read-locked and read ten times, so about \
               3 vs 60 per file",
    },
    PaperNumber {
        workload: "recall",
        op: None,
        metric: "recall_ms",
        source: "Fig. 13",
        number: "~100 ms",
        what: "per conflicting open of a delegated file: the Linux client's hard-coded first \
               wait before it retries after NFS4ERR_DELAY",
    },
];

impl PaperNumber {
    /// "Chen et al. 2015, Fig. 7".
    pub fn cite(&self) -> String {
        format!("{CHEN_2015}, {}", self.source)
    }
}

/// The paper's number for `metric` at `point` of `workload`, if the
/// workload reproduces a figure that states one.
pub(crate) fn paper_number(workload: &str, point: &Point, metric: &str) -> Option<&'static PaperNumber> {
    let op = point.get("op").and_then(Value::as_str);
    PAPER_NUMBERS.iter().find(|p| p.workload == workload && p.metric == metric && (p.op.is_none() || p.op == op))
}

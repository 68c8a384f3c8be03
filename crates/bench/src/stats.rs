//! Sample statistics for repeated runs: mean and a 95% confidence interval
//! from Student's t, percentiles and latency histograms. The moments, the
//! median and the t quantile come from `statrs`; percentiles other than the
//! median are computed here (see `percentile`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::statistics::{Data, OrderStatistics, Statistics};

use crate::model::{BenchReport, PointSummary, Ratio};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub stddev: f64,
    /// Half-width of the 95% confidence interval of the mean (Student's t,
    /// n-1 degrees of freedom); 0 when n < 2.
    pub ci95: f64,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Summary {
        let n = samples.len();
        if n == 0 {
            return Summary::default();
        }
        let mean = samples.mean();
        // The sample (n - 1) deviation; one run has no spread to speak of.
        let stddev = if n > 1 { samples.std_dev() } else { 0.0 };
        let ci95 = if n > 1 { student_t_975(n - 1) * stddev / (n as f64).sqrt() } else { 0.0 };
        let mut data = Data::new(samples.to_vec());
        Summary { n, mean, stddev, ci95, min: samples.min(), median: data.median(), max: samples.max() }
    }
}

/// The upper tail of a two-sided 95% interval.
const T_QUANTILE: f64 = 0.975;

/// The 97.5% quantile of Student's t with `df` degrees of freedom (two-sided
/// 95% interval); NaN for no degree of freedom.
pub fn student_t_975(df: usize) -> f64 {
    match StudentsT::new(0.0, 1.0, df as f64) {
        Ok(t) if df > 0 => t.inverse_cdf(T_QUANTILE),
        _ => f64::NAN,
    }
}

/// The `p`th percentile (0..=100) of sorted samples, by linear interpolation
/// between closest ranks (Hyndman & Fan's type 7, as numpy and R default
/// to). Not statrs' `quantile`: that is type 8, which would move every
/// reported p99 of a few hundred calls.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// One bucket of a log-spaced histogram: samples in `[lo, hi)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
}

/// The smallest range of whole decades holding every positive sample, so
/// histograms of several series can share their buckets.
pub fn decade_range(samples: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for x in samples.into_iter().filter(|x| *x > 0.0 && x.is_finite()) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if hi == 0.0 {
        return None;
    }
    let lo = 10f64.powf(lo.log10().floor());
    let mut hi = 10f64.powf(hi.log10().ceil());
    if hi <= lo {
        hi = lo * 10.0;
    }
    Some((lo, hi))
}

/// Counts samples in `per_decade` log-spaced buckets per decade from `lo` to
/// `hi`; samples outside the range land in the first or last bucket, so the
/// counts always add up to the number of samples.
pub fn log_histogram(samples: &[f64], lo: f64, hi: f64, per_decade: usize) -> Vec<Bucket> {
    let per_decade = per_decade.max(1) as f64;
    let (llo, lhi) = (lo.log10(), hi.log10());
    let n = (((lhi - llo) * per_decade).round() as usize).max(1);
    let mut buckets: Vec<Bucket> = (0..n)
        .map(|i| Bucket {
            lo: 10f64.powf(llo + i as f64 / per_decade),
            hi: 10f64.powf(llo + (i + 1) as f64 / per_decade),
            count: 0,
        })
        .collect();
    for &x in samples {
        // The epsilon keeps exact edges such as 1000 in the bucket they start.
        let i = if x > 0.0 { ((x.log10() - llo) * per_decade + 1e-9).floor() } else { 0.0 };
        buckets[(i.max(0.0) as usize).min(n - 1)].count += 1;
    }
    buckets
}

/// What matters about per-call latencies (in µs) for write-behind: how many
/// calls stalled past a millisecond and how long the worst ones took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencyStats {
    pub n: usize,
    /// Share (0..=1) of calls that took more than 1 ms.
    pub over_1ms: f64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

pub fn latency_stats(us: &[f64]) -> LatencyStats {
    if us.is_empty() {
        return LatencyStats::default();
    }
    let mut sorted = us.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    LatencyStats {
        n,
        over_1ms: sorted.iter().filter(|x| **x > 1000.0).count() as f64 / n as f64,
        mean: sorted.iter().mean(),
        p50: percentile(&sorted, 50.0),
        p99: percentile(&sorted, 99.0),
        max: sorted[n - 1],
    }
}

/// Targets in command-line order, then any that only the runs name.
pub fn targets_of(report: &BenchReport) -> Vec<String> {
    let mut out = report.targets.clone();
    for r in &report.runs {
        if !out.contains(&r.target) {
            out.push(r.target.clone());
        }
    }
    out
}

/// Distinct points in the order they were first run.
pub fn points_of(report: &BenchReport) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for r in &report.runs {
        if !out.contains(&r.point) {
            out.push(r.point.clone());
        }
    }
    out
}

pub type Point = BTreeMap<String, Value>;

/// Fills `summary` and `ratios` from the successful runs, replacing what was
/// there; failed runs are reported, never averaged.
pub fn summarize(report: &mut BenchReport) {
    let targets = targets_of(report);
    let points = points_of(report);
    let mut summary = Vec::new();
    for target in &targets {
        for point in &points {
            for metric in &report.metrics {
                let samples: Vec<f64> = report
                    .runs
                    .iter()
                    .filter(|r| r.ok && &r.target == target && &r.point == point)
                    .filter_map(|r| r.metric(metric))
                    .collect();
                if !samples.is_empty() {
                    summary.push(PointSummary {
                        target: target.clone(),
                        point: point.clone(),
                        metric: metric.clone(),
                        summary: Summary::of(&samples),
                    });
                }
            }
        }
    }
    let find = |t: &str, p: &Point, m: &str| {
        summary.iter().find(|s| s.target == t && &s.point == p && s.metric == m).map(|s| s.summary.mean)
    };
    let mut ratios = Vec::new();
    if let Some((baseline, others)) = targets.split_first() {
        for point in &points {
            for metric in &report.metrics {
                let Some(base) = find(baseline, point, metric) else { continue };
                for target in others {
                    match find(target, point, metric) {
                        Some(mean) if base != 0.0 && base.is_finite() => ratios.push(Ratio {
                            point: point.clone(),
                            metric: metric.clone(),
                            target: target.clone(),
                            baseline: baseline.clone(),
                            ratio: mean / base,
                        }),
                        _ => {}
                    }
                }
            }
        }
    }
    report.summary = summary;
    report.ratios = ratios;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RunRecord;
    use serde_json::json;

    /// Equal to the printed tables' three decimals.
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn t_quantiles() {
        for (df, t) in [(1, 12.706), (2, 4.303), (4, 2.776), (5, 2.571), (30, 2.042), (40, 2.021), (120, 1.980)] {
            assert!(close(student_t_975(df), t), "t({df}) = {} not {t}", student_t_975(df));
        }
        // Towards the normal distribution's 1.96 (--runs is at most 10,000).
        assert!((student_t_975(10_000) - 1.960201).abs() < 1e-5);
        assert!((student_t_975(100_000) - 1.96).abs() < 1e-3);
        assert!(student_t_975(0).is_nan());
    }

    #[test]
    fn ci_of_known_samples() {
        // mean 3, sample stddev sqrt(2.5), t(4) = 2.776.
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!((s.n, s.mean, s.min, s.median, s.max), (5, 3.0, 1.0, 3.0, 5.0));
        assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12);
        assert!((s.ci95 - 2.776 * 2.5f64.sqrt() / 5f64.sqrt()).abs() < 1e-3);
        assert_eq!(Summary::of(&[4.0, 1.0, 3.0, 2.0]).median, 2.5, "the mean of the middle two");
        assert_eq!(Summary::of(&[7.0]).ci95, 0.0);
        assert_eq!(Summary::of(&[]).n, 0);
    }

    #[test]
    fn histogram_counts_every_sample() {
        let samples = [0.0, 1.0, 9.9, 10.0, 99.0, 100.0, 5000.0];
        let (lo, hi) = decade_range(samples.iter().copied()).unwrap();
        assert_eq!((lo, hi), (1.0, 10000.0));
        let h = log_histogram(&samples, lo, hi, 1);
        assert_eq!(h.iter().map(|b| b.count).collect::<Vec<_>>(), vec![3, 2, 1, 1]);
        let h = log_histogram(&samples, lo, hi, 5);
        assert_eq!(h.len(), 20);
        assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), samples.len() as u64);
        assert!((h[5].lo - 10.0).abs() < 1e-9);
        assert_eq!(decade_range([0.0]), None);
    }

    #[test]
    fn latency_share_and_percentiles() {
        let us: Vec<f64> = (1..=100).map(|i| i as f64 * 20.0).collect();
        let l = latency_stats(&us);
        assert_eq!(l.n, 100);
        assert!((l.over_1ms - 0.5).abs() < 1e-12);
        assert_eq!(l.max, 2000.0);
        assert!((l.p50 - 1010.0).abs() < 1e-9);
    }

    fn run(target: &str, io: u64, ok: bool, v: f64) -> RunRecord {
        let mut r = RunRecord { target: target.into(), ok, ..Default::default() };
        r.point.insert("io_size".into(), json!(io));
        r.metrics.insert("mbps".into(), json!(v));
        r
    }

    #[test]
    fn summarize_fills_summary_and_ratios() {
        let mut rep = BenchReport {
            targets: vec!["a".into(), "b".into()],
            metrics: vec!["mbps".into()],
            runs: vec![
                run("a", 4096, true, 10.0),
                run("a", 4096, true, 20.0),
                run("b", 4096, true, 30.0),
                run("b", 4096, false, 1000.0),
                run("a", 8192, true, 40.0),
                run("b", 8192, false, 5.0),
            ],
            ..Default::default()
        };
        summarize(&mut rep);
        assert_eq!(rep.summary.len(), 3);
        let s = &rep.summary[0];
        assert_eq!((s.target.as_str(), s.summary.n, s.summary.mean), ("a", 2, 15.0));
        assert_eq!(rep.summary[2].summary.mean, 30.0, "the failed run must not count");
        assert_eq!(rep.ratios.len(), 1, "no ratio where b has no successful run");
        let r = &rep.ratios[0];
        assert_eq!((r.target.as_str(), r.baseline.as_str(), r.ratio), ("b", "a", 2.0));
        assert_eq!(r.point["io_size"], json!(4096));
        summarize(&mut rep);
        assert_eq!(rep.summary.len(), 3, "summarizing twice replaces");
    }
}

//! `metadata --op read-small --duration D`: files read per second over the
//! run, as Chen et al. 2015 Fig. 7 plots it. The first pass over the files
//! goes to the server; after it a client that holds delegations (or trusts
//! its attribute cache) reads from memory, and every revalidation shows as
//! a dip. The workload records the rate per bucket of time in
//! `series_ops_per_sec` and the bucket's length in `series_bucket_s`.

use super::axis::Axis;
use super::draw::{line, Figure, Mark};
use super::{point_label, Plot, Unit};
use crate::model::{BenchReport, RunRecord};
use crate::stats::{points_of, targets_of};

const SERIES: &str = "series_ops_per_sec";
const BUCKET: &str = "series_bucket_s";
const FILE: &str = "files-over-time.svg";
/// Several runs of one target share its colour; each is drawn a little
/// transparent so where they overlap reads darker, not as one line.
const RUN_OPACITY: f64 = 0.75;
const LINE_PX: u32 = 2;

/// (seconds since the start, files per second) of one run.
type Series = Vec<(f64, f64)>;

/// The rate in each bucket of a run, at the middle of the bucket.
fn series(run: &RunRecord) -> Option<Series> {
    let bucket = run.metric(BUCKET).filter(|b| *b > 0.0)?;
    let rates = run.metrics.get(SERIES)?.as_array()?;
    let pts: Series =
        rates.iter().enumerate().filter_map(|(i, v)| Some(((i as f64 + 0.5) * bucket, v.as_f64()?))).collect();
    (!pts.is_empty()).then_some(pts)
}

/// One line per successful run, coloured by target (and point, when the
/// report has several); none when no run recorded a series.
pub(crate) fn files_over_time(report: &BenchReport) -> Option<Plot> {
    let points = points_of(report);
    let mut groups: Vec<(String, Vec<Series>)> = Vec::new();
    for target in targets_of(report) {
        for point in &points {
            let runs = report.runs.iter().filter(|r| r.ok && r.target == target && &r.point == point);
            let lines: Vec<_> = runs.filter_map(series).collect();
            if !lines.is_empty() {
                let name = if points.len() > 1 { format!("{target}, {}", point_label(point)) } else { target.clone() };
                groups.push((name, lines));
            }
        }
    }
    let all = || groups.iter().flat_map(|(_, runs)| runs.iter().flatten());
    let end = all().map(|p| p.0).fold(f64::NAN, f64::max);
    if !end.is_finite() {
        return None;
    }
    // Half a bucket after the last middle is the end of the run.
    let bucket = report.runs.iter().find_map(|r| r.metric(BUCKET)).unwrap_or(0.0);
    let x = Axis::linear([0.0, end + bucket / 2.0], Unit::Plain, "seconds since the run started", true);
    // A log scale, as the paper's: targets differ by orders of magnitude.
    let y = Axis::log(all().map(|p| p.1), Unit::Rate, "files read per second");
    let title = "Files read per second over time, every successful run (Chen 2015 Fig. 7)";
    let names: Vec<String> = groups.iter().map(|(n, _)| n.clone()).collect();
    let figure = Figure { title, x, y, legend: &names, mark: Mark::Line, groups: None };
    let floor = figure.y.lo;
    let svg = figure.render(|chart| {
        for (i, (_, runs)) in groups.iter().enumerate() {
            for run in runs {
                // A bucket with no file read sits on the foot of the log axis.
                let pts = run.iter().map(|&(t, r)| (t, r.max(floor))).collect();
                line(chart, i, pts, LINE_PX, RUN_OPACITY)?;
            }
        }
        Ok(())
    })?;
    Some(Plot { file: FILE.into(), title: title.into(), svg })
}

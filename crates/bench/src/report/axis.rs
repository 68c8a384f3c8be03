//! The one thing about the plots that plotters does not decide well for
//! this report: where the ticks go. Sizes are swept in powers of two, so
//! their ticks are 4 KiB, 8 KiB, ...; times, shares and rates read in
//! decades; linear axes end on a round 1-2-5 step. `Axis` is a plotters
//! coordinate (`Ranged`), linear or logarithmic, whose grid lines are
//! exactly those ticks.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

use super::Unit;

/// How far past either end of an axis a value may be drawn before it is
/// pinned there, as a share of the axis: a spike above the top shows as
/// touching the frame rather than vanishing.
const OVERSHOOT: f64 = 0.02;
/// Linear axes get about this many intervals.
const LINEAR_INTERVALS: f64 = 5.0;
/// At most this many ticks on a log axis before every other power is
/// skipped.
const MAX_LOG_TICKS: usize = 10;
/// Margin of a log axis of sizes or counts, as a factor on either end, so
/// the end points of a sweep are not drawn on the frame.
const LOG_MARGIN: f64 = 1.25;
/// A log axis over values closer than this ratio is widened to a factor
/// of two either way.
const NARROW_RATIO: f64 = 1.01;
/// Tolerance of the tick arithmetic, so that 1000 counts as a power of 10.
const EPS: f64 = 1e-9;

/// One axis: its range, scale and how tick values read.
#[derive(Debug, Clone)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub unit: Unit,
    pub label: String,
}

impl Axis {
    /// A linear axis over `values`, from zero when `from_zero` (throughputs
    /// and counts read wrong on a truncated axis), ending on a round tick.
    pub fn linear(values: impl IntoIterator<Item = f64>, unit: Unit, label: &str, from_zero: bool) -> Axis {
        let (mut lo, mut hi) = bounds(values).unwrap_or((0.0, 1.0));
        if from_zero {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        if hi <= lo {
            // A flat series still needs an axis: a tenth of its value around it.
            hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        }
        let step = nice_step((hi - lo) / LINEAR_INTERVALS);
        Axis { lo: (lo / step).floor() * step, hi: (hi / step).ceil() * step, log: false, unit, label: label.into() }
    }

    /// A log axis over the positive `values`: whole decades for latencies,
    /// shares and rates, a little margin for swept sizes so end points are
    /// not on the frame.
    pub fn log(values: impl IntoIterator<Item = f64>, unit: Unit, label: &str) -> Axis {
        let (lo, hi) = bounds(values.into_iter().filter(|v| *v > 0.0)).unwrap_or((1.0, 10.0));
        let (lo, hi) = if unit.in_decades() {
            let lo = 10f64.powf(lo.log10().floor());
            (lo, 10f64.powf(hi.log10().ceil()).max(lo * 10.0))
        } else if hi / lo < NARROW_RATIO {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo / LOG_MARGIN, hi * LOG_MARGIN)
        };
        Axis { lo, hi, log: true, unit, label: label.into() }
    }

    /// Where `v` falls, 0 at `lo` and 1 at `hi`.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            // Zero and below sit far under the axis, to be pinned at its foot.
            let v = v.max(self.lo * 1e-3);
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// The value at `frac` of the axis: `frac`'s inverse, to move a point
    /// by a share of the axis whatever its scale.
    pub fn at(&self, frac: f64) -> f64 {
        if self.log {
            (self.lo.ln() + frac * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + frac * (self.hi - self.lo)
        }
    }

    pub fn ticks(&self) -> Vec<f64> {
        if !self.log {
            let step = nice_step((self.hi - self.lo) / LINEAR_INTERVALS);
            let first = (self.lo / step).ceil() as i64;
            let last = (self.hi / step + EPS).floor() as i64;
            return (first..=last).map(|i| i as f64 * step).collect();
        }
        // Sizes and counts are swept in powers of two.
        let base: f64 = if self.unit.in_decades() { 10.0 } else { 2.0 };
        let first = (self.lo.log(base) - EPS).ceil() as i32;
        let last = (self.hi.log(base) + EPS).floor() as i32;
        let every = ((last - first + 1) as usize).div_ceil(MAX_LOG_TICKS).max(1);
        let mut ticks: Vec<f64> = (first..=last).step_by(every).map(|e| base.powi(e)).collect();
        if base == 10.0 && last - first <= 2 {
            // Two decades or less: 2 and 5 between the decades help reading.
            let more: Vec<f64> = (first - 1..=last)
                .flat_map(|e| [2.0, 5.0].map(|m| m * base.powi(e)))
                .filter(|v| *v >= self.lo && *v <= self.hi)
                .collect();
            ticks.extend(more);
            ticks.sort_by(f64::total_cmp);
        }
        ticks
    }
}

/// The axis as a plotters coordinate: values map through `frac`, and the
/// bold grid lines (the labelled ones) are `ticks`; there are no light ones.
impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, (from, to): (i32, i32)) -> i32 {
        let f = self.frac(*value);
        let f = if f.is_nan() { 0.0 } else { f.clamp(-OVERSHOOT, 1.0 + OVERSHOOT) };
        (from as f64 + f * (to - from) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() || hint.max_num_points() == 0 {
            return Vec::new();
        }
        self.ticks()
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

fn bounds(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().filter(|v| v.is_finite()).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw * (1.0 - EPS)).unwrap_or(10.0 * mag)
}

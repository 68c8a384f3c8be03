//! Just enough SVG to draw the bench's plots by hand: a canvas, axes with
//! human-readable ticks, and a legend. Every piece of text goes through
//! `esc`, so the output is well-formed XML whatever the target names are.

use std::fmt::Write;

use super::{esc, Unit};

/// Colours that stay apart for the usual handful of targets (Tableau 10).
const PALETTE: [&str; 10] =
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];

/// The colour and dash pattern of series `i`: past ten series the colours
/// repeat, so the dashes keep them apart.
pub fn style(i: usize) -> (&'static str, &'static str) {
    const DASHES: [&str; 3] = ["", "6 3", "2 2"];
    (PALETTE[i % PALETTE.len()], DASHES[(i / PALETTE.len()) % DASHES.len()])
}

pub struct Canvas {
    width: f64,
    height: f64,
    body: String,
}

impl Canvas {
    pub fn new(width: f64, height: f64) -> Canvas {
        Canvas { width, height, body: String::new() }
    }

    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64, dash: &str) {
        let _ = write!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width}"{}/>"#,
            dash_attr(dash)
        );
        self.body.push('\n');
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = writeln!(self.body, r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}"/>"#);
    }

    pub fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str) {
        let _ = writeln!(self.body, r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{fill}"/>"#);
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64, dash: &str, opacity: f64) {
        if points.is_empty() {
            return;
        }
        let mut pts = String::with_capacity(points.len() * 12);
        for (x, y) in points {
            let _ = write!(pts, "{x:.1},{y:.1} ");
        }
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="{width}" stroke-opacity="{opacity}" stroke-linejoin="round"{}/>"#,
            pts.trim_end(),
            dash_attr(dash)
        );
    }

    /// Text at (x, y); `anchor` is start, middle or end, `rotate` in degrees
    /// about the anchor point.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, size: f64, rotate: f64, text: &str) {
        let transform =
            if rotate != 0.0 { format!(r#" transform="rotate({rotate} {x:.1} {y:.1})""#) } else { String::new() };
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" font-size="{size}"{transform}>{}</text>"#,
            esc(text)
        );
    }

    pub fn finish(self) -> String {
        format!(
            concat!(
                r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" "#,
                r##"font-family="sans-serif" fill="#222">"##,
                "\n",
                r#"<rect width="100%" height="100%" fill="white"/>"#,
                "\n{body}</svg>\n"
            ),
            w = self.width,
            h = self.height,
            body = self.body
        )
    }
}

fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    }
}

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
            hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        }
        let step = nice_step((hi - lo) / 5.0);
        Axis { lo: (lo / step).floor() * step, hi: (hi / step).ceil() * step, log: false, unit, label: label.into() }
    }

    /// A log axis over the positive `values`: whole decades for latencies,
    /// a little margin for swept sizes so end points are not on the frame.
    pub fn log(values: impl IntoIterator<Item = f64>, unit: Unit, label: &str) -> Axis {
        let (lo, hi) = bounds(values.into_iter().filter(|v| *v > 0.0)).unwrap_or((1.0, 10.0));
        let (lo, hi) = if matches!(unit, Unit::Micros | Unit::Millis | Unit::Percent) {
            let lo = 10f64.powf(lo.log10().floor());
            (lo, 10f64.powf(hi.log10().ceil()).max(lo * 10.0))
        } else if hi / lo < 1.01 {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo / 1.25, hi * 1.25)
        };
        Axis { lo, hi, log: true, unit, label: label.into() }
    }

    /// Where `v` falls, 0 at `lo` and 1 at `hi`.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            let v = v.max(self.lo * 1e-3);
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    pub fn ticks(&self) -> Vec<f64> {
        if !self.log {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let first = (self.lo / step).ceil() as i64;
            let last = (self.hi / step + 1e-9).floor() as i64;
            return (first..=last).map(|i| i as f64 * step).collect();
        }
        // Time and shares read in decades; sizes and counts are swept in powers of two.
        let base: f64 = if matches!(self.unit, Unit::Micros | Unit::Millis | Unit::Percent) { 10.0 } else { 2.0 };
        let first = (self.lo.log(base) - 1e-9).ceil() as i32;
        let last = (self.hi.log(base) + 1e-9).floor() as i32;
        let every = ((last - first + 1) as usize).div_ceil(10).max(1);
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
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw * (1.0 - 1e-9)).unwrap_or(10.0 * mag)
}

/// The plot area of a chart and its two axes.
pub struct Frame {
    pub x: Axis,
    pub y: Axis,
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
}

impl Frame {
    pub fn px(&self, x: f64) -> f64 {
        self.left + self.x.frac(x).clamp(-0.02, 1.02) * self.width
    }

    pub fn py(&self, y: f64) -> f64 {
        self.top + (1.0 - self.y.frac(y).clamp(-0.02, 1.02)) * self.height
    }

    /// Title, grid, frame, ticks and axis labels; `x_ticks: false` for bar
    /// charts, whose x axis is labelled by group.
    pub fn draw(&self, c: &mut Canvas, title: &str, x_ticks: bool) {
        let (l, t, w, h) = (self.left, self.top, self.width, self.height);
        c.text(l + w / 2.0, 22.0, "middle", 15.0, 0.0, title);
        for v in self.y.ticks() {
            let y = self.py(v);
            c.line((l, y), (l + w, y), "#e4e4e4", 1.0, "");
            c.text(l - 6.0, y + 4.0, "end", 11.0, 0.0, &self.y.unit.fmt(v));
        }
        if x_ticks {
            for v in self.x.ticks() {
                let x = self.px(v);
                c.line((x, t), (x, t + h), "#efefef", 1.0, "");
                c.line((x, t + h), (x, t + h + 4.0), "#444", 1.0, "");
                c.text(x, t + h + 17.0, "middle", 11.0, 0.0, &self.x.unit.fmt(v));
            }
            c.text(l + w / 2.0, t + h + 36.0, "middle", 12.0, 0.0, &self.x.label);
        }
        c.line((l, t + h), (l + w, t + h), "#444", 1.0, "");
        c.line((l, t), (l, t + h), "#444", 1.0, "");
        c.text(16.0, t + h / 2.0, "middle", 12.0, -90.0, &self.y.label);
    }
}

/// Legend entries listed right of the plot area, names shortened so that a
/// long target URL cannot push the legend off the canvas.
pub fn legend(c: &mut Canvas, x: f64, y: f64, names: &[String]) {
    for (i, name) in names.iter().enumerate() {
        let (colour, dash) = style(i);
        let yy = y + i as f64 * 18.0;
        c.line((x, yy), (x + 22.0, yy), colour, 3.0, dash);
        c.text(x + 28.0, yy + 4.0, "start", 11.0, 0.0, &shorten(name, 34));
    }
}

pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{keep}…")
}

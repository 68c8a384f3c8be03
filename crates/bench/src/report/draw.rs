//! The frame every plot shares, drawn with plotters' SVG backend into a
//! string: a title, the plot with its grid and axis labels, labels of the
//! groups under a bar chart, and below the plot a legend as wide as the
//! picture, so a target's full URL fits (wrapped when it cannot).
//!
//! The SVG backend leaves text layout to whatever shows the picture, so no
//! font is needed here; plotters' size estimates only place labels, and
//! the wrapping below uses a conservative width per character.

use std::error::Error;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::Axis;
use super::{num, sanitize, Unit};

pub(crate) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>;
pub(crate) type Drawn = Result<(), Box<dyn Error>>;
type Area<'b> = DrawingArea<SVGBackend<'b>, Shift>;

const WIDTH: u32 = 840;
/// Height of the plot area proper, inside the axes.
const PLOT_H: u32 = 280;
/// Room for the y tick labels and the rotated y axis label.
const Y_LABEL_AREA: u32 = 80;
/// Room for the x tick labels and the x axis label.
const X_LABEL_AREA: u32 = 44;
const CAPTION_AREA: u32 = 34;
const MARGIN: u32 = 14;
/// Wider on the right, where half of the last x tick label sticks out.
const MARGIN_RIGHT: u32 = 30;
const TITLE_PX: f64 = 15.0;
const TICK_PX: f64 = 11.0;
const DESC_PX: f64 = 12.0;
const LEGEND_PX: f64 = 12.0;
const LINE_H: u32 = 17;
/// Any number of ticks but 0 (none): `Axis` picks its ticks itself, so
/// plotters' count only switches them on.
const ALL_TICKS: usize = 100;
/// Length of the line (or side of the box) that shows a series' style.
const SWATCH: i32 = 22;
const SWATCH_GAP: i32 = 6;
/// Average advance of a character over the font size: generous for sans
/// serif, so wrapped text never runs off the picture.
const CHAR_EM: f64 = 0.6;
/// plotters' SVG backend writes `font-size` as the size it is given
/// divided by this (its `TextStyle` sizes are in its own units).
const PLOTTERS_FONT_SCALE: f64 = 1.24;

const TEXT: RGBColor = RGBColor(0x22, 0x22, 0x22);
const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);
const FRAME: RGBColor = RGBColor(0x44, 0x44, 0x44);

/// Colours that stay apart for the usual handful of targets (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
];
/// Past ten series the colours repeat, so dashes (dash, gap in pixels)
/// keep them apart.
const DASHES: [Option<(u32, u32)>; 3] = [None, Some((6, 3)), Some((2, 2))];

pub(crate) fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn dash(i: usize) -> Option<(u32, u32)> {
    DASHES[(i / PALETTE.len()) % DASHES.len()]
}

/// A font of `px` pixels as the SVG will state it.
fn font(px: f64) -> FontDesc<'static> {
    ("sans-serif", px * PLOTTERS_FONT_SCALE).into_font()
}

fn text_style(px: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    font(px).color(&TEXT).pos(Pos::new(h, v))
}

/// A note on the plot, right-aligned on `at` and just above it.
pub(crate) fn note(chart: &Chart, text: &str, at: (f64, f64)) -> Drawn {
    let style = text_style(TICK_PX, HPos::Right, VPos::Bottom);
    chart.plotting_area().draw(&Text::new(sanitize(text), at, style))?;
    Ok(())
}

/// How series are shown in the legend.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Mark {
    Line,
    Bar,
}

/// What a plot shows, apart from its data.
pub(crate) struct Figure<'a> {
    pub title: &'a str,
    pub x: Axis,
    pub y: Axis,
    /// One name per series, in series order: its colour is `colour(i)`.
    pub legend: &'a [String],
    pub mark: Mark,
    /// Bar charts: a label under each of these groups, which sit at x in
    /// `i..i + 1`, instead of x ticks.
    pub groups: Option<&'a [String]>,
}

impl Figure<'_> {
    /// The SVG document: the frame, then `draw` puts the data on it.
    pub fn render(&self, draw: impl FnOnce(&mut Chart) -> Drawn) -> Option<String> {
        let mut svg = String::new();
        match self.render_into(&mut svg, draw) {
            Ok(()) => Some(svg),
            Err(e) => {
                tracing::warn!("plot {:?} not drawn: {e}", self.title);
                None
            }
        }
    }

    fn render_into(&self, svg: &mut String, draw: impl FnOnce(&mut Chart) -> Drawn) -> Drawn {
        let legend_x = (MARGIN + Y_LABEL_AREA) as i32;
        let legend_chars = chars_in(WIDTH as i32 - legend_x - SWATCH - SWATCH_GAP - MARGIN as i32, LEGEND_PX);
        let legend: Vec<Vec<String>> = self.legend.iter().map(|n| wrap(&sanitize(n), legend_chars)).collect();
        let legend_lines: usize = legend.iter().map(Vec::len).sum();
        let legend_h = if legend_lines == 0 { 0 } else { legend_lines as u32 * LINE_H + MARGIN };
        let group_chars = self.groups.map(|g| chars_in(plot_width() / g.len().max(1) as i32, TICK_PX));
        let groups: Vec<Vec<String>> = match (self.groups, group_chars) {
            (Some(g), Some(chars)) => g.iter().map(|l| wrap(&sanitize(l), chars)).collect(),
            _ => Vec::new(),
        };
        let x_area = match groups.iter().map(Vec::len).max() {
            Some(lines) => MARGIN / 2 + lines as u32 * LINE_H,
            None => X_LABEL_AREA,
        };
        let chart_h = CAPTION_AREA + MARGIN + PLOT_H + x_area;

        let root = SVGBackend::with_string(svg, (WIDTH, chart_h + legend_h)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(chart_h);
        let mut chart = ChartBuilder::on(&top)
            .caption(sanitize(self.title), font(TITLE_PX).color(&TEXT))
            .margin(MARGIN)
            .margin_right(MARGIN_RIGHT)
            .x_label_area_size(x_area)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(self.x.clone(), self.y.clone())?;
        let (xu, yu) = (self.x.unit, self.y.unit);
        let (fx, fy) = (move |v: &f64| tick(xu, *v), move |v: &f64| tick(yu, *v));
        chart
            .configure_mesh()
            .bold_line_style(GRID)
            .axis_style(FRAME)
            .label_style(font(TICK_PX).color(&TEXT))
            .axis_desc_style(font(DESC_PX).color(&TEXT))
            .x_desc(sanitize(&self.x.label))
            .y_desc(sanitize(&self.y.label))
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .x_labels(if self.groups.is_some() { 0 } else { ALL_TICKS })
            .y_labels(ALL_TICKS)
            .draw()?;
        draw(&mut chart)?;
        let (xs, ys) = chart.plotting_area().get_pixel_range();
        if !groups.is_empty() {
            let each = (xs.end - xs.start) as f64 / groups.len() as f64;
            for (g, lines) in groups.iter().enumerate() {
                let cx = xs.start + ((g as f64 + 0.5) * each).round() as i32;
                for (k, line) in lines.iter().enumerate() {
                    let y = ys.end + (MARGIN / 2 + k as u32 * LINE_H) as i32;
                    root.draw(&Text::new(line.clone(), (cx, y), text_style(TICK_PX, HPos::Center, VPos::Top)))?;
                }
            }
        }
        draw_legend(&bottom, legend_x, &legend, self.mark)?;
        root.present()?;
        Ok(())
    }
}

/// Width of the plot area, as `render` lays it out.
fn plot_width() -> i32 {
    (WIDTH - MARGIN - MARGIN_RIGHT - Y_LABEL_AREA) as i32
}

/// A tick label: plain numbers of five digits and more with an SI prefix,
/// as 250k reads faster than 250000.
fn tick(unit: Unit, v: f64) -> String {
    const PREFIXES: [(f64, &str); 3] = [(1e9, "G"), (1e6, "M"), (1e3, "k")];
    const FROM: f64 = 1e4;
    if matches!(unit, Unit::Plain | Unit::Rate) && v.abs() >= FROM {
        if let Some((scale, prefix)) = PREFIXES.iter().find(|(scale, _)| v.abs() >= *scale) {
            return format!("{}{prefix}", num(v / scale));
        }
    }
    unit.fmt(v)
}

/// Characters of `px` pixel text that surely fit in `width` pixels.
fn chars_in(width: i32, px: f64) -> usize {
    ((width.max(0) as f64 / (px * CHAR_EM)) as usize).max(1)
}

fn draw_legend(area: &Area, x: i32, entries: &[Vec<String>], mark: Mark) -> Drawn {
    let mut y = (MARGIN / 2) as i32 + LINE_H as i32 / 2;
    for (i, lines) in entries.iter().enumerate() {
        let c = colour(i);
        match mark {
            Mark::Bar => {
                let half = LINE_H as i32 / 3;
                area.draw(&Rectangle::new([(x, y - half), (x + SWATCH, y + half)], c.filled()))?;
            }
            Mark::Line => {
                let pts = vec![(x, y), (x + SWATCH, y)];
                match dash(i) {
                    None => area.draw(&PathElement::new(pts, c.stroke_width(3)))?,
                    Some((d, g)) => area.draw(&DashedPathElement::new(pts, d, g, c.stroke_width(3)))?,
                }
            }
        }
        for line in lines {
            let at = (x + SWATCH + SWATCH_GAP, y);
            area.draw(&Text::new(line.clone(), at, text_style(LEGEND_PX, HPos::Left, VPos::Center)))?;
            y += LINE_H as i32;
        }
    }
    Ok(())
}

/// A line through `pts` in series `i`'s colour and dash.
pub(crate) fn line(chart: &mut Chart, i: usize, pts: Vec<(f64, f64)>, width: u32, opacity: f64) -> Drawn {
    let style = colour(i).mix(opacity).stroke_width(width);
    match dash(i) {
        None => chart.draw_series(LineSeries::new(pts, style))?,
        Some((d, g)) => chart.draw_series(DashedLineSeries::new(pts, d, g, style))?,
    };
    Ok(())
}

/// `text` in lines of at most `max` characters, broken after a separator
/// of URLs and point labels where there is one, else anywhere; nothing is
/// dropped but the spaces at the breaks.
pub(crate) fn wrap(text: &str, max: usize) -> Vec<String> {
    const BREAK_AFTER: &[char] = &[' ', ',', '/', '?', '&', ';', '-', '_', '.', ':', '='];
    let max = max.max(1);
    let mut lines = Vec::new();
    let mut line: Vec<char> = Vec::new();
    for c in text.chars() {
        if line.len() == max {
            // Break after the last separator, if it leaves something on the line.
            let at = line.iter().rposition(|c| BREAK_AFTER.contains(c)).map_or(max, |i| i + 1);
            let rest = line.split_off(at);
            lines.push(line.iter().collect::<String>().trim_end().to_string());
            line = rest;
        }
        if !(line.is_empty() && c == ' ' && !lines.is_empty()) {
            line.push(c);
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line.into_iter().collect());
    }
    lines
}

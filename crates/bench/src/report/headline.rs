//! The section the HTML page opens with: per point and headline metric,
//! each target's mean, its ratio to the baseline (the first target), and
//! where the workload reproduces a paper's figure, the paper's number
//! beside it, so the one comparison a reader came for is on top.

use std::fmt::Write;

use super::papers::{paper_number, PaperNumber};
use super::{esc, num, point_label, ratio_of};
use crate::model::BenchReport;
use crate::stats::{points_of, targets_of, Point};

/// One point and metric: its targets' cells and the paper's number.
struct Group {
    point: Point,
    metric: String,
    /// target, mean ± CI (n), ratio to the baseline
    rows: Vec<[String; 3]>,
    paper: Option<&'static PaperNumber>,
}

pub(crate) fn headline(h: &mut String, r: &BenchReport, failed: usize) {
    let targets = targets_of(r);
    h.push_str("<section id=\"headline\">\n<h2>Headline</h2>\n");
    if r.partial {
        let _ = writeln!(
            h,
            "<p class=\"partial\">Partial result: {failed} run(s) failed or the bench was interrupted; \
             statistics use the successful runs only.</p>"
        );
    }
    let groups = groups(r, &targets);
    if groups.is_empty() {
        h.push_str("<p>No run succeeded: there is nothing to compare.</p>\n</section>\n");
        return;
    }
    let compare = targets.len() > 1;
    if compare {
        let _ = writeln!(
            h,
            "<p>Ratios to {} (the baseline): each target's mean divided by the baseline's mean.</p>",
            esc(&targets[0])
        );
    }
    let papers = groups.iter().any(|g| g.paper.is_some());
    h.push_str("<table class=\"headline\"><tr><th>point</th><th>metric</th><th>target</th><th>mean ± 95% CI (n)</th>");
    if compare {
        h.push_str("<th>× baseline</th>");
    }
    if papers {
        h.push_str("<th>paper</th>");
    }
    h.push_str("</tr>\n");
    for g in &groups {
        let span = g.rows.len();
        for (i, [target, mean, ratio]) in g.rows.iter().enumerate() {
            h.push_str("<tr>");
            if i == 0 {
                let (p, m) = (esc(&point_label(&g.point)), esc(&g.metric));
                let _ =
                    write!(h, "<td class=\"t\" rowspan=\"{span}\">{p}</td><td class=\"t\" rowspan=\"{span}\">{m}</td>");
            }
            let _ = write!(h, "<td class=\"t\">{target}</td><td>{mean}</td>");
            if compare {
                let _ = write!(h, "<td>{ratio}</td>");
            }
            if papers && i == 0 {
                let cell = g.paper.map_or(String::new(), |p| {
                    format!("<b>{}</b> {}<br><small>{}</small>", esc(p.number), esc(&p.cite()), esc(p.what))
                });
                let _ = write!(h, "<td class=\"paper\" rowspan=\"{span}\">{cell}</td>");
            }
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</table>\n</section>\n");
}

fn groups(r: &BenchReport, targets: &[String]) -> Vec<Group> {
    let mut out = Vec::new();
    for point in points_of(r) {
        for metric in &r.metrics {
            let mut rows = Vec::new();
            for (i, target) in targets.iter().enumerate() {
                let found = r.summary.iter().find(|s| &s.target == target && s.point == point && &s.metric == metric);
                let Some(s) = found.map(|s| &s.summary) else { continue };
                let mean = format!("{} ± {} ({})", num(s.mean), num(s.ci95), s.n);
                let ratio = if i == 0 {
                    "baseline".to_string()
                } else {
                    ratio_of(r, target, &point, metric).map_or("–".into(), |x| format!("<b>{}×</b>", num(x)))
                };
                rows.push([esc(target), mean, ratio]);
            }
            if !rows.is_empty() {
                let paper = paper_number(&r.workload, &point, metric);
                out.push(Group { point: point.clone(), metric: metric.clone(), rows, paper });
            }
        }
    }
    out
}

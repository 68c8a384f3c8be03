//! The orchestrator: every point of the sweep, every repetition, every
//! target. Targets alternate within a repetition so that drift (a warming
//! server, a busy neighbour) hits all of them alike. Each run gets fresh
//! clients and a fresh working directory `nfsx-bench-<pid>-<n>`, removed
//! afterwards unless `--keep`. A failed run is recorded and the bench goes
//! on; a target that cannot even connect is not tried again.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::model::{BenchReport, HostInfo, RunRecord};
use crate::target::{BenchError, BenchFs, OpStat, Result, Target};
use crate::workloads::{remove_tree, Ctx, Job, Phase};

/// What to run: built by the command line from the options.
pub struct Plan {
    /// Workload name as on the command line.
    pub workload: String,
    pub targets: Vec<Arc<dyn Target>>,
    pub points: Vec<Point>,
    pub runs: usize,
    /// Headline metrics, most important first.
    pub metrics: Vec<String>,
    /// Parameters after defaults, for the report.
    pub params: BTreeMap<String, Value>,
    pub one_way: bool,
    pub keep: bool,
    pub quiet: bool,
}

/// One point of the sweep.
pub struct Point {
    /// Its coordinates as recorded in each run, e.g. {"io_size": 4096}.
    pub coords: BTreeMap<String, Value>,
    pub job: Job,
    pub clients: usize,
    pub delay: Duration,
}

impl Point {
    /// `io_size=4096 threads=8`, for the progress line and messages.
    pub fn label(&self) -> String {
        let parts: Vec<String> = self
            .coords
            .iter()
            .map(|(k, v)| match (v, v.as_u64()) {
                (Value::String(s), _) => format!("{k}={s}"),
                (_, Some(n)) if k.ends_with("size") => format!("{k}={}", crate::params::fmt_size(n)),
                (v, _) => format!("{k}={v}"),
            })
            .collect();
        parts.join(" ")
    }
}

/// Runs the plan; never fails as a whole: failed runs are in the report.
pub fn execute(plan: &Plan) -> BenchReport {
    let mut report = BenchReport {
        workload: plan.workload.clone(),
        command: std::env::args().collect(),
        started_unix: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        host: host_info(),
        targets: plan.targets.iter().map(|t| t.name().to_string()).collect(),
        params: plan.params.clone(),
        metrics: plan.metrics.clone(),
        ..Default::default()
    };
    let total = plan.points.len() * plan.runs * plan.targets.len();
    let bar = progress_bar(total as u64, plan.quiet);
    // Why a target is given up on: it could not connect.
    let mut dead: Vec<Option<String>> = vec![None; plan.targets.len()];
    let mut n = 0;
    for point in &plan.points {
        for rep in 1..=plan.runs {
            for (ti, target) in plan.targets.iter().enumerate() {
                n += 1;
                bar.set_message(format!(
                    "{} {} [{}] run {rep}/{}",
                    plan.workload,
                    target.name(),
                    point.label(),
                    plan.runs
                ));
                let rec = run_one(plan, target.as_ref(), point, rep, n, &mut dead[ti]);
                if let Some(e) = rec.error.as_ref().filter(|_| !plan.quiet) {
                    bar.suspend(|| eprintln!("run failed: {} [{}] run {rep}: {e}", target.name(), point.label()));
                }
                report.partial |= !rec.ok;
                report.runs.push(rec);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    report
}

/// Summarises, prints the terminal summary, writes the JSON and the HTML
/// report; returns where the report's index went.
pub fn publish(report: &mut BenchReport, json: Option<&Path>, report_dir: Option<&Path>) -> Result<Option<PathBuf>> {
    crate::stats::summarize(report);
    print!("{}", crate::report::terminal_summary(report));
    if let Some(path) = json {
        let write = || -> std::io::Result<()> {
            let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
            serde_json::to_writer_pretty(&mut out, report)?;
            std::io::Write::write_all(&mut out, b"\n")?;
            std::io::Write::flush(&mut out)
        };
        write().map_err(|e| BenchError::Target(format!("--json {}: {e}", path.display())))?;
    }
    match report_dir {
        Some(dir) => crate::report::write_report(dir, report)
            .map(Some)
            .map_err(|e| BenchError::Target(format!("--report {}: {e}", dir.display()))),
        None => Ok(None),
    }
}

fn progress_bar(len: u64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}")
        .expect("valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

fn run_one(
    plan: &Plan,
    target: &dyn Target,
    point: &Point,
    rep: usize,
    n: usize,
    dead: &mut Option<String>,
) -> RunRecord {
    let mut rec =
        RunRecord { target: target.name().to_string(), run: rep, point: point.coords.clone(), ..Default::default() };
    if let Some(why) = dead {
        rec.error = Some(format!("not run: the target failed to connect earlier ({why})"));
        return rec;
    }
    target.set_callers(point.clients * point.job.threads_per_client());
    let connected = target.set_delay(point.delay, plan.one_way).and_then(|()| {
        let clients =
            (0..point.clients).map(|i| target.connect_client(i)).collect::<Result<Vec<Arc<dyn BenchFs>>>>()?;
        let changer = if point.job.wants_changer() { Some(target.connect_client(point.clients)?) } else { None };
        Ok((clients, changer))
    });
    let (clients, changer) = match connected {
        Ok(c) => c,
        Err(e) => {
            if matches!(e, BenchError::Target(_) | BenchError::Timeout(_)) {
                *dead = Some(e.to_string());
            }
            rec.error = Some(e.to_string());
            return rec;
        }
    };
    rec.protocol = clients.first().and_then(|c| c.protocol());
    let workdir = format!("nfsx-bench-{}-{n}", std::process::id());
    let dirs: Vec<String> = (0..clients.len()).map(|i| format!("{workdir}/c{i}")).collect();
    let mut before: Vec<Vec<OpStat>> = Vec::new();
    let mut after: Vec<Vec<OpStat>> = Vec::new();
    let mut started = None;
    let mut elapsed = Duration::ZERO;
    let (mut cpu_before, mut cpu_after) = (None, None);
    let result = clients[0]
        .mkdir(&workdir)
        .and_then(|()| clients.iter().zip(&dirs).try_for_each(|(c, d)| c.mkdir(d)))
        .and_then(|()| {
            let ctx = Ctx { clients: &clients, dirs: &dirs, changer: changer.as_ref() };
            point.job.run(&ctx, &mut |phase| match phase {
                Phase::Begin => {
                    before = clients.iter().map(|c| c.op_stats()).collect();
                    cpu_before = process_cpu_seconds();
                    started = Some(Instant::now());
                }
                Phase::End => {
                    elapsed = started.map(|t| t.elapsed()).unwrap_or_default();
                    cpu_after = process_cpu_seconds();
                    after = clients.iter().map(|c| c.op_stats()).collect();
                }
            })
        });
    if !plan.keep {
        // Cleanup failures must not hide the run's result: warn only.
        if let Err(e) = remove_tree(clients[0].as_ref(), &workdir) {
            if !plan.quiet {
                eprintln!("warning: {}: could not remove {workdir}: {e}", target.name());
            }
        }
    }
    match result {
        Ok(mut metrics) => {
            rec.ok = true;
            // A workload's own elapsed time (from its common start) is the
            // more exact one; it lives in the record, not among the metrics.
            rec.elapsed_s = metrics.remove("elapsed_s").and_then(|v| v.as_f64()).unwrap_or(elapsed.as_secs_f64());
            rec.metrics = metrics;
            let deltas: Vec<Vec<OpStat>> = before.iter().zip(&after).map(|(b, a)| delta(b, a)).collect();
            rec.op_stats = sum(&deltas);
            if let (Some(b), Some(a)) = (cpu_before, cpu_after) {
                // Lever & Honeyman: the client's cost per reply matters, so
                // report the bench process's CPU (the client, for nfs://
                // targets) in total and per RPC.
                let cpu = (a - b).max(0.0);
                rec.metrics.insert("client_cpu_s".into(), cpu.into());
                let rpcs: u64 = rec.op_stats.iter().map(|o| o.count).sum();
                if rpcs > 0 {
                    rec.metrics.insert("client_cpu_us_per_rpc".into(), (cpu * 1e6 / rpcs as f64).into());
                }
            }
            if deltas.len() > 1 && deltas.iter().any(|d| !d.is_empty()) {
                rec.client_op_stats = deltas;
            }
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
    rec
}

/// User plus system CPU time of this process so far, from /proc (Linux);
/// None elsewhere.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / CLOCK_TICKS_PER_SECOND)
}

/// USER_HZ, which Linux fixes at 100 for /proc/<pid>/stat on every
/// architecture it ships.
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Counters gained between two snapshots; operations that did not happen
/// are left out.
pub(crate) fn delta(before: &[OpStat], after: &[OpStat]) -> Vec<OpStat> {
    after
        .iter()
        .map(|a| {
            let b = before.iter().find(|b| b.op == a.op).cloned().unwrap_or_default();
            OpStat {
                op: a.op.clone(),
                count: a.count.saturating_sub(b.count),
                bytes_sent: a.bytes_sent.saturating_sub(b.bytes_sent),
                bytes_received: a.bytes_received.saturating_sub(b.bytes_received),
                retransmissions: a.retransmissions.saturating_sub(b.retransmissions),
                queue_us: a.queue_us.saturating_sub(b.queue_us),
                rtt_us: a.rtt_us.saturating_sub(b.rtt_us),
                execute_us: a.execute_us.saturating_sub(b.execute_us),
            }
        })
        .filter(|d| d.count > 0)
        .collect()
}

/// Per-op sums over clients, in order of first appearance.
fn sum(per_client: &[Vec<OpStat>]) -> Vec<OpStat> {
    let mut out: Vec<OpStat> = Vec::new();
    for s in per_client.iter().flatten() {
        match out.iter_mut().find(|o| o.op == s.op) {
            Some(o) => {
                o.count += s.count;
                o.bytes_sent += s.bytes_sent;
                o.bytes_received += s.bytes_received;
                o.retransmissions += s.retransmissions;
                o.queue_us += s.queue_us;
                o.rtt_us += s.rtt_us;
                o.execute_us += s.execute_us;
            }
            None => out.push(s.clone()),
        }
    }
    out
}

pub fn host_info() -> HostInfo {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: read("/proc/sys/kernel/osrelease"),
        nfsx_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

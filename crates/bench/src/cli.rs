//! `nfsx bench`: the command line. Options that take lists sweep: every
//! combination of the listed values is a point, and each point is run
//! `--runs` times on every target.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::model::BenchReport;
use crate::params::{self, fmt_size};
use crate::run::{self, Plan, Point};
use crate::target::{BenchError, Result, Target};
use crate::workloads::data::Mode;
use crate::workloads::filebench::Personality;
use crate::workloads::metadata::MetaOp;
use crate::workloads::{copy, data, filebench, locked_read, metadata, multi_client, recall, seqwrite, Job};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkloadKind {
    /// Lever & Honeyman: write a fresh file in --io-size calls, fsync,
    /// close; MB/s to the last write, the flush and the close, and every
    /// call's latency.
    Seqwrite,
    /// Chen et al. 2015 §3: sequential/random reads and writes of one file
    /// per client shared by --threads threads.
    Data,
    /// Chen et al. 2015 §4 and Lai: read small files, create files, list a
    /// deep tree, `find -exec ls -l`.
    Metadata,
    /// Chen et al. 2015 §6: filebench's fileserver, webserver and varmail.
    Macro,
    /// Aggregate write then read throughput of 1, 2, 4, 8 clients.
    MultiClient,
    /// Chen et al. 2015 Fig. 13: a conflicting OPEN while another client
    /// holds a delegation of the file, from call to success (2 clients;
    /// --files conflicts per run, default 30).
    Recall,
    /// Chen et al. 2015 §5.2, Table 1: every client opens, read-locks,
    /// reads, unlocks and closes each of --files shared 4 KiB files ten
    /// times (default 100 files, 2 clients); calls per client.
    LockedRead,
    /// NFSv4.2: copy a --size file (default 1GiB) by server-side COPY, by
    /// reading and writing it through the client in --io-size calls
    /// (default 1MiB) and by CLONE; seconds and MB/s of each, and
    /// copy_speedup = read-write seconds / server-copy seconds.
    Copy,
}

impl WorkloadKind {
    fn name(self) -> &'static str {
        match self {
            WorkloadKind::Seqwrite => "seqwrite",
            WorkloadKind::Data => "data",
            WorkloadKind::Metadata => "metadata",
            WorkloadKind::Macro => "macro",
            WorkloadKind::MultiClient => "multi-client",
            WorkloadKind::Recall => "recall",
            WorkloadKind::LockedRead => "locked-read",
            WorkloadKind::Copy => "copy",
        }
    }
}

const LONG_ABOUT: &str = "\
Run one of the NFS papers' workloads against NFS servers (through the nfsx client) \
or directories (plain system calls), repeat it, and compare targets side by side.";

// After the options rather than in the description, so it survives a
// description given where the binary mounts this command.
const AFTER_HELP: &str = "\
Options marked LIST take comma-separated values (e.g. --io-size 4KiB,64KiB,1MiB); every combination \
is a point of the sweep, and every point runs --runs times on every target, the targets taking turns \
within each repetition. Sizes: B, KiB, MiB, GiB (also K, M, G) are powers of 1024; KB, MB, GB powers of \
1000. Durations: us, ms, s, min. Throughputs are in MB/s with MB = 10^6 bytes.

Each run uses fresh clients and a fresh directory nfsx-bench-<pid>-<n> under the target, removed \
afterwards unless --keep; setup (creating the files to read, the tree to list) is not timed. \
A failed run is recorded (ok: false) and the bench goes on.

Exit status: 0 all runs succeeded; 1 nothing could run (bad target, unwritable output); \
2 invalid parameters; 3 some runs failed (the results written are partial).";

/// Run the papers' workloads against NFS servers or directories.
#[derive(clap::Args, Debug, Clone)]
#[command(long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct BenchArgs {
    #[arg(value_enum)]
    pub workload: WorkloadKind,
    /// nfs://host[:port]/export (the nfsx client) or a directory path (must exist and be writable).
    /// Repeat to compare; the first target is the baseline of the ratios. Several servers sharing one
    /// store (heads of a cluster): nfs://host1[:port],host2[:port],.../export puts client i on head
    /// i mod N.
    #[arg(long = "target", value_name = "TARGET", required = true)]
    pub targets: Vec<String>,
    /// Repetitions of every point on every target; 3 or more for a meaningful 95% confidence interval.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = |s: &str| params::parse_count(s, 10_000))]
    pub runs: usize,
    /// Write every run of every target as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write an HTML report, DIR/index.html with its plots beside it.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// LIST. Round-trip delay added between client and server by the built-in proxy (nfs:// targets
    /// only), e.g. 0,1ms,10ms,40ms [default: 0].
    #[arg(long, value_name = "DURATION", value_delimiter = ',', value_parser = params::parse_duration)]
    pub delay: Vec<Duration>,
    /// Put all of --delay on the way to the server instead of half each way.
    #[arg(long)]
    pub one_way: bool,
    /// LIST. Independent clients run together, each in its own subdirectory; throughputs are summed
    /// [default: 1; multi-client: 1,2,4,8]. On a directory target every client shares the kernel's cache.
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = params::parse_clients)]
    pub clients: Vec<usize>,
    /// LIST. File size per client: seqwrite's file [default: 32MiB], data's shared file
    /// [default: 64MiB], multi-client's file [default: 64MiB], copy's source [default: 1GiB].
    #[arg(long, value_name = "SIZE", value_delimiter = ',', value_parser = params::parse_nonzero_size)]
    pub size: Vec<u64>,
    /// LIST. Bytes per read or write call [default: seqwrite 8KiB, data 64KiB, multi-client and
    /// copy's read-write 1MiB].
    #[arg(long, value_name = "SIZE", value_delimiter = ',', value_parser = params::parse_nonzero_size)]
    pub io_size: Vec<u64>,
    /// LIST. Threads per client [default: data and metadata 1; macro: the personality's, 50/100/16].
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = params::parse_threads)]
    pub threads: Vec<usize>,
    /// LIST. data's access patterns [default: all four].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub mode: Vec<Mode>,
    /// Open files for writing with O_SYNC, so every write is stable (seqwrite, data; the paper's
    /// random writes used it).
    #[arg(long)]
    pub sync: bool,
    /// multi-client: compare every byte read back with what its writer wrote; a difference fails
    /// the run (for runs with failures injected, such as a head killed mid-write).
    #[arg(long)]
    pub verify: bool,
    /// LIST. metadata's operations, each its own point [default: all four].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub op: Vec<MetaOp>,
    /// Number of files: metadata read-small and create [default: 10000], list [default: 50000],
    /// stat [default: 10000]; macro [default: the personality's, 10000/1000/1000].
    #[arg(long, value_name = "N", value_parser = |s: &str| params::parse_count(s, 10_000_000))]
    pub files: Option<usize>,
    /// Bytes per file: metadata read-small [default: 4KiB], create, list and stat [default: 0];
    /// macro's mean file size [default: fileserver 128KiB, others 16KiB].
    #[arg(long, value_name = "SIZE", value_parser = params::parse_size)]
    pub file_size: Option<u64>,
    /// LIST. macro's filebench personalities [default: all three].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub personality: Vec<Personality>,
    /// Time limit of a run: macro [default: 60s, as filebench]; data loops over its file until then
    /// [default: move the file once]; metadata read-small reads its files over and over until
    /// then and reports files/s over time, the first pass's rate and the steady state after it
    /// (Chen 2015 Fig. 7) [default: read each file once].
    #[arg(long, value_name = "DURATION", value_parser = params::parse_nonzero_duration)]
    pub duration: Option<Duration>,
    /// metadata list and stat: walk the tree twice, untimed, before the timed walk, so the timed
    /// one measures what the caches serve, as a repeated `find` does (Lai ran his with the
    /// attribute cache warm; the second walk is when an nfsx client asks for directory
    /// delegations); without it the timed walk is the first one after the tree was created,
    /// and reads every directory from the server.
    #[arg(long)]
    pub warm: bool,
    /// metadata list and stat with --warm: after the warm walk, a second client of the same
    /// target changes PCT percent of the tree's files (stat: each rewritten one byte longer;
    /// list: each renamed), then the timed walk checks what it sees and reports `stale`, the
    /// entries it saw as they were before the change, beside `changed`. A client that trusts
    /// its caches for a while sees stale entries; one told of changes (directory delegations)
    /// or one that asks again does not.
    #[arg(long, value_name = "PCT", value_parser = params::parse_percent)]
    pub churn: Option<f64>,
    /// Connections per nfs:// client (like the nconnect mount option).
    #[arg(long, value_name = "N", value_parser = |s: &str| params::parse_count(s, 16))]
    pub nconnect: Option<usize>,
    /// TOML file of nfsx client settings for nfs:// targets (see docs/CONFIGURATION.md).
    #[arg(long, value_name = "FILE")]
    pub client_config: Option<PathBuf>,
    /// nfs:// targets: the client keeps no file data, neither a read cache nor readahead
    /// (over --client-config), so every read the workload makes is one READ at the server,
    /// as fio's direct=1 reads. Without it, a file that fits in the client's data cache (256
    /// MiB by default) is read from the server once and then from the cache, which measures
    /// the client. Writes still go through the client's write-behind cache (see --direct).
    #[arg(long)]
    pub no_data_cache: bool,
    /// nfs:// targets: no data cache for writes either, as fio's direct=1 over an NFS mount:
    /// implies --no-data-cache, and each write the workload makes is sent at once as
    /// UNSTABLE WRITEs of at most wsize, returning with their replies (fsync and close COMMIT
    /// them). Without it, writes are gathered by the client's write-behind cache into 1 MiB
    /// WRITEs, which measures the client's cache more than the server's WRITE path.
    #[arg(long)]
    pub direct: bool,
    /// No progress bar and no per-run messages on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Keep each run's working directory instead of deleting it.
    #[arg(long)]
    pub keep: bool,
    /// Check every option, reach every target (mount it, or check the
    /// directory is writable) and print the points and runs that would be
    /// made, without running anything. Exit status as for a run.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs the bench; prints the terminal summary and writes `--json` and
/// `--report`. Failed runs do not make this fail: see `report.partial`.
pub fn run(args: BenchArgs) -> Result<BenchReport> {
    let (points, metrics, params) = build_points(&args)?;
    if args.runs < 3 && !args.quiet {
        eprintln!("warning: --runs {}: fewer than 3 runs give no meaningful confidence interval", args.runs);
    }
    // Fail on unwritable outputs now, not after an hour of runs.
    if let Some(p) = &args.json {
        // Probe without truncating: an earlier result survives a failed start.
        let existed = p.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
            .map_err(|e| BenchError::Target(format!("--json {}: {e}", p.display())))?;
        if !existed {
            let _ = std::fs::remove_file(p);
        }
    }
    if let Some(d) = &args.report {
        std::fs::create_dir_all(d).map_err(|e| BenchError::Target(format!("--report {}: {e}", d.display())))?;
    }
    let targets = open_targets(&args)?;
    check_delays(&args, &targets)?;
    let plan = Plan {
        workload: args.workload.name().to_string(),
        targets,
        points,
        runs: args.runs,
        metrics: metrics.iter().map(|m| m.to_string()).collect(),
        params,
        one_way: args.one_way,
        keep: args.keep,
        quiet: args.quiet,
    };
    let mut report = run::execute(&plan);
    run::publish(&mut report, args.json.as_deref(), args.report.as_deref())?;
    Ok(report)
}

/// Sets and clears every --delay on every target, so a target that cannot
/// take one fails before any run.
fn check_delays(args: &BenchArgs, targets: &[Arc<dyn Target>]) -> Result<()> {
    for d in args.delay.iter().filter(|d| !d.is_zero()) {
        for t in targets {
            t.set_delay(*d, args.one_way).map_err(|e| BenchError::Invalid(format!("--delay: {e}")))?;
            t.set_delay(Duration::ZERO, false)?;
        }
    }
    Ok(())
}

/// `--dry-run`: everything `run` checks before its first run, then the
/// plan on stdout.
pub fn dry_run(args: &BenchArgs) -> Result<()> {
    let (points, _metrics, _params) = build_points(args)?;
    let targets = open_targets(args)?;
    check_delays(args, &targets)?;
    println!(
        "nfsx bench {}: {} point(s) x {} run(s) x {} target(s) = {} runs",
        args.workload.name(),
        points.len(),
        args.runs,
        targets.len(),
        points.len() * args.runs * targets.len()
    );
    for t in &targets {
        println!("  target {} (reachable)", t.name());
    }
    for p in &points {
        println!("  point {}", p.label());
    }
    Ok(())
}

/// `run` for the binary: prints errors and returns the exit status.
pub fn main(args: BenchArgs) -> i32 {
    let result = if args.dry_run { dry_run(&args).map(|()| None) } else { run(args).map(Some) };
    match result {
        Ok(None) => 0,
        Ok(Some(report)) if report.partial => 3,
        Ok(Some(_)) => 0,
        Err(e @ BenchError::Invalid(_)) => {
            eprintln!("nfsx bench: {e}");
            2
        }
        Err(e) => {
            eprintln!("nfsx bench: {e}");
            1
        }
    }
}

/// Opens every target, so a wrong one fails before any run.
pub fn open_targets(args: &BenchArgs) -> Result<Vec<Arc<dyn Target>>> {
    let opts = crate::nfs::NfsOptions {
        client_config: args.client_config.clone(),
        nconnect: args.nconnect,
        no_data_cache: args.no_data_cache || args.direct,
        direct_writes: args.direct,
    };
    let mut out: Vec<Arc<dyn Target>> = Vec::new();
    for (i, t) in args.targets.iter().enumerate() {
        if args.targets[..i].contains(t) {
            return Err(BenchError::Invalid(format!("--target {t} is given twice")));
        }
        out.push(if let Some(urls) = crate::heads::split(t) {
            Arc::new(crate::heads::Heads::open(t, &urls, |u| crate::nfs::open(u, &opts))?)
        } else if t.starts_with("nfs://") {
            crate::nfs::open(t, &opts)?
        } else {
            Arc::new(crate::dir::DirTarget::open(t)?)
        });
    }
    Ok(out)
}

fn invalid(msg: String) -> BenchError {
    BenchError::Invalid(msg)
}

/// Refuses options the workload does not use, so a typo'd intent is not
/// silently ignored.
fn check_applies(args: &BenchArgs) -> Result<()> {
    use WorkloadKind::*;
    let w = args.workload;
    if args.churn.is_some() && !args.warm {
        return Err(invalid(
            "--churn changes the tree between the warm walk and the timed one: it needs --warm".into(),
        ));
    }
    let given: [(&str, bool, &[WorkloadKind]); 12] = [
        ("--size", !args.size.is_empty(), &[Seqwrite, Data, MultiClient, Copy]),
        ("--io-size", !args.io_size.is_empty(), &[Seqwrite, Data, MultiClient, Copy]),
        ("--threads", !args.threads.is_empty(), &[Data, Metadata, Macro]),
        ("--mode", !args.mode.is_empty(), &[Data]),
        ("--sync", args.sync, &[Seqwrite, Data]),
        ("--op", !args.op.is_empty(), &[Metadata]),
        ("--files", args.files.is_some(), &[Metadata, Macro, Recall, LockedRead]),
        ("--file-size", args.file_size.is_some(), &[Metadata, Macro]),
        ("--personality", !args.personality.is_empty(), &[Macro]),
        ("--duration", args.duration.is_some(), &[Data, Macro, Metadata]),
        ("--warm", args.warm, &[Metadata]),
        ("--churn", args.churn.is_some(), &[Metadata]),
    ];
    for (opt, set, applies) in given {
        if set && !applies.contains(&w) {
            let names: Vec<&str> = applies.iter().map(|k| k.name()).collect();
            return Err(invalid(format!("{opt} does not apply to {} (only to {})", w.name(), names.join(", "))));
        }
    }
    Ok(())
}

fn or<T: Clone>(given: &[T], default: &[T]) -> Vec<T> {
    if given.is_empty() {
        default.to_vec()
    } else {
        given.to_vec()
    }
}

fn ms(d: Duration) -> Value {
    let ms = d.as_secs_f64() * 1e3;
    if ms.fract() == 0.0 {
        json!(ms as u64)
    } else {
        json!(ms)
    }
}

type Built = (Vec<Point>, &'static [&'static str], BTreeMap<String, Value>);

/// Every point of the sweep, the headline metrics and the parameters
/// after defaults; refuses nonsense with the option's name.
pub fn build_points(args: &BenchArgs) -> Result<Built> {
    use WorkloadKind::*;
    check_applies(args)?;
    const MIB: u64 = 1 << 20;
    let w = args.workload;
    let clients = or(
        &args.clients,
        match w {
            MultiClient => &[1, 2, 4, 8],
            Recall | LockedRead => &[2],
            _ => &[1],
        },
    );
    if w == Recall && clients.iter().any(|&c| c < 2) {
        return Err(invalid("recall needs --clients 2 or more (a holder and an opener)".into()));
    }
    let delays = or(&args.delay, &[Duration::ZERO]);
    let sizes = or(
        &args.size,
        &[match w {
            Seqwrite => 32 * MIB,
            Copy => 1024 * MIB,
            _ => 64 * MIB,
        }],
    );
    let io_sizes = or(
        &args.io_size,
        &[match w {
            Seqwrite => 8 << 10,
            Data => 64 << 10,
            _ => MIB,
        }],
    );
    if matches!(w, Seqwrite | Data | MultiClient | Copy) {
        for (&s, &io) in sizes.iter().flat_map(|s| io_sizes.iter().map(move |io| (s, io))) {
            if io > s {
                return Err(invalid(format!("--io-size {} is larger than --size {}", fmt_size(io), fmt_size(s))));
            }
        }
    }
    let mut params: BTreeMap<String, Value> = BTreeMap::new();
    params.insert("runs".into(), json!(args.runs));
    params.insert("clients".into(), json!(clients));
    params.insert("delay_ms".into(), Value::from(delays.iter().map(|d| ms(*d)).collect::<Vec<_>>()));
    params.insert("one_way".into(), json!(args.one_way));
    if let Some(n) = args.nconnect {
        params.insert("nconnect".into(), json!(n));
    }
    if let Some(p) = &args.client_config {
        params.insert("client_config".into(), json!(p.display().to_string()));
    }
    if args.no_data_cache || args.direct {
        params.insert("no_data_cache".into(), json!(true));
    }
    if args.direct {
        params.insert("direct".into(), json!(true));
    }
    // (coordinates, job) of the workload's own dimensions.
    let mut inner: Vec<(BTreeMap<String, Value>, Job)> = Vec::new();
    let swept = |v: usize| v > 1;
    let metrics: &'static [&'static str] = match w {
        Seqwrite | MultiClient => {
            params.insert("size".into(), json!(sizes));
            params.insert("io_size".into(), json!(io_sizes));
            for &size in &sizes {
                for &io_size in &io_sizes {
                    let mut c = BTreeMap::new();
                    if w == Seqwrite || swept(sizes.len()) {
                        c.insert("size".into(), json!(size));
                    }
                    if w == Seqwrite || swept(io_sizes.len()) {
                        c.insert("io_size".into(), json!(io_size));
                    }
                    let job = if w == Seqwrite {
                        Job::SeqWrite(seqwrite::SeqWrite { size, io_size, sync: args.sync })
                    } else {
                        Job::MultiClient(multi_client::MultiClient { size, io_size, verify: args.verify })
                    };
                    inner.push((c, job));
                }
            }
            if w == Seqwrite {
                params.insert("sync".into(), json!(args.sync));
                &["write_mbps", "flush_mbps", "close_mbps"]
            } else {
                &["write_mbps", "read_mbps"]
            }
        }
        Data => {
            let modes = or(&args.mode, &[Mode::SeqRead, Mode::SeqWrite, Mode::RandRead, Mode::RandWrite]);
            let threads = or(&args.threads, &[1]);
            for &size in &sizes {
                for &mode in &modes {
                    for &io_size in &io_sizes {
                        for &t in &threads {
                            if size / io_size < t as u64 {
                                return Err(invalid(format!(
                                    "--threads {t}: --size {} holds fewer than {t} blocks of --io-size {}",
                                    fmt_size(size),
                                    fmt_size(io_size)
                                )));
                            }
                            let mut c = BTreeMap::new();
                            if swept(sizes.len()) {
                                c.insert("size".into(), json!(size));
                            }
                            c.insert("mode".into(), json!(mode.name()));
                            c.insert("io_size".into(), json!(io_size));
                            c.insert("threads".into(), json!(t));
                            let d = data::Data {
                                mode,
                                size,
                                io_size,
                                threads: t,
                                sync: args.sync,
                                duration: args.duration,
                            };
                            inner.push((c, Job::Data(d)));
                        }
                    }
                }
            }
            params.insert("size".into(), json!(sizes));
            params.insert("sync".into(), json!(args.sync));
            params.insert("duration_s".into(), json!(args.duration.map(|d| d.as_secs_f64())));
            &["mbps", "ops_per_sec", "latency_mean_us", "latency_p99_us"]
        }
        Metadata => {
            let ops = or(&args.op, &[MetaOp::ReadSmall, MetaOp::Create, MetaOp::List, MetaOp::Stat]);
            for &op in &ops {
                for &t in &or(&args.threads, &[1]) {
                    let files = args.files.unwrap_or(if op == MetaOp::List { 50_000 } else { 10_000 });
                    let file_size = args.file_size.unwrap_or(if op == MetaOp::ReadSmall { 4096 } else { 0 });
                    let c = BTreeMap::from([("op".into(), json!(op.name())), ("threads".into(), json!(t))]);
                    let duration = if op == MetaOp::ReadSmall { args.duration } else { None };
                    let warm = args.warm && matches!(op, MetaOp::List | MetaOp::Stat);
                    let churn = if warm { args.churn } else { None };
                    let m = metadata::Metadata { op, files, file_size, threads: t, width: 5, duration, warm, churn };
                    inner.push((c, Job::Metadata(m)));
                }
            }
            let per_op = |f: fn(&metadata::Metadata) -> u64| -> BTreeMap<String, u64> {
                let ms = inner.iter().filter_map(|(_, j)| if let Job::Metadata(m) = j { Some(m) } else { None });
                ms.map(|m| (m.op.name().to_string(), f(m))).collect()
            };
            params.insert("files".into(), json!(per_op(|m| m.files as u64)));
            params.insert("file_size".into(), json!(per_op(|m| m.file_size)));
            params.insert("dir_width".into(), json!(5));
            params.insert("warm".into(), json!(args.warm));
            params.insert("churn_pct".into(), json!(args.churn));
            params.insert("duration_s".into(), json!(args.duration.map(|d| d.as_secs_f64())));
            if args.duration.is_some() {
                // Chen 2015 Fig. 7: the rate of the first pass over the
                // files, and the steady state once each is cached.
                &["ops_per_sec", "first_pass_ops_per_sec", "steady_ops_per_sec"]
            } else {
                &["ops_per_sec"]
            }
        }
        Copy => {
            for &size in &sizes {
                for &io_size in &io_sizes {
                    let c = BTreeMap::from([("size".into(), json!(size)), ("io_size".into(), json!(io_size))]);
                    inner.push((c, Job::Copy(copy::FileCopy { size, io_size })));
                }
            }
            params.insert("size".into(), json!(sizes));
            params.insert("io_size".into(), json!(io_sizes));
            let methods: Vec<&str> = copy::Method::ALL.iter().map(|m| m.name()).collect();
            params.insert("methods".into(), json!(methods));
            &["copy_speedup", "server_copy_mbps", "read_write_mbps", "clone_mbps"]
        }
        LockedRead => {
            let files = args.files.unwrap_or(100);
            inner.push((BTreeMap::new(), Job::LockedRead(locked_read::LockedRead { files })));
            params.insert("files".into(), json!(files));
            &["calls_per_client", "ops_per_sec", "latency_mean_us"]
        }
        Recall => {
            let files = args.files.unwrap_or(30);
            inner.push((BTreeMap::new(), Job::Recall(recall::Recall { files })));
            params.insert("files".into(), json!(files));
            &["recall_ms", "delegations_returned"]
        }
        Macro => {
            let duration = args.duration.unwrap_or(Duration::from_secs(60));
            for &p in &or(&args.personality, &[Personality::Fileserver, Personality::Webserver, Personality::Varmail]) {
                let d = p.defaults();
                for &t in &or(&args.threads, &[d.threads]) {
                    let c = BTreeMap::from([("personality".into(), json!(p.name())), ("threads".into(), json!(t))]);
                    let files = args.files.unwrap_or(d.files);
                    let mean_size = args.file_size.unwrap_or(d.mean_size).max(1);
                    inner.push((
                        c,
                        Job::Macro(filebench::Macro { personality: p, files, mean_size, threads: t, duration }),
                    ));
                }
            }
            let mut per = BTreeMap::new();
            for (_, job) in &inner {
                if let Job::Macro(m) = job {
                    let d = m.personality.defaults();
                    let v = json!({"files": m.files, "mean_file_size": m.mean_size, "dir_width": d.width});
                    per.insert(m.personality.name().to_string(), v);
                }
            }
            params.insert("personalities".into(), json!(per));
            params.insert("duration_s".into(), json!(duration.as_secs_f64()));
            &["ops_per_sec", "mbps", "latency_mean_us"]
        }
    };
    let mut points = Vec::new();
    for &delay in &delays {
        for &n in &clients {
            for (coords, job) in &inner {
                let mut coords = coords.clone();
                if w == MultiClient || clients.iter().any(|&c| c != 1) {
                    coords.insert("clients".into(), json!(n));
                }
                if delays.iter().any(|d| !d.is_zero()) {
                    coords.insert("delay_ms".into(), ms(delay));
                }
                points.push(Point { coords, job: job.clone(), clients: n, delay });
            }
        }
    }
    Ok((points, metrics, params))
}

//! The workloads. Each is a value holding its parameters for one point of
//! the sweep, with an untimed `setup` (creating the files to read, the tree
//! to list) and a timed `measure`; the orchestrator snapshots the clients'
//! counters between the two, so setup traffic never pollutes a run.
//!
//! Several clients (`--clients N`) and threads per client run as OS threads
//! released together from one gate, so they contend from the first call.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::target::{BenchError, BenchFs, Result};

pub mod copy;
pub mod data;
pub mod filebench;
pub mod locked_read;
pub mod metadata;
pub mod multi_client;
pub mod recall;
pub mod seqwrite;
pub mod tree;

/// A run's measurements, flattened into its JSON run object.
pub type Metrics = BTreeMap<String, Value>;

/// What a workload runs on: one file-system handle and one working
/// directory (relative to the target root) per client.
pub struct Ctx<'a> {
    pub clients: &'a [Arc<dyn BenchFs>],
    pub dirs: &'a [String],
    /// A client of the same target besides the measured ones, for a job
    /// that changes what they work on ([`Job::wants_changer`]); its calls
    /// are not counted.
    pub changer: Option<&'a Arc<dyn BenchFs>>,
}

pub trait Workload {
    /// State handed from setup to measure (e.g. which files exist).
    type Prepared: Sync;
    /// Untimed preparation, e.g. creating the files a read workload reads.
    fn setup(&self, ctx: &Ctx) -> Result<Self::Prepared>;
    /// The measured phase.
    fn measure(&self, ctx: &Ctx, prepared: &Self::Prepared) -> Result<Metrics>;
}

/// One point's workload with its parameters.
#[derive(Debug, Clone)]
pub enum Job {
    SeqWrite(seqwrite::SeqWrite),
    Data(data::Data),
    Metadata(metadata::Metadata),
    Macro(filebench::Macro),
    MultiClient(multi_client::MultiClient),
    Recall(recall::Recall),
    LockedRead(locked_read::LockedRead),
    Copy(copy::FileCopy),
}

/// Where the measured phase starts and ends, for the counter snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Begin,
    End,
}

impl Job {
    /// Threads calling each client at once in the measured phase.
    pub fn threads_per_client(&self) -> usize {
        match self {
            Job::Data(w) => w.threads,
            Job::Metadata(w) => w.threads,
            Job::Macro(w) => w.threads,
            Job::SeqWrite(_) | Job::MultiClient(_) | Job::Recall(_) | Job::LockedRead(_) | Job::Copy(_) => 1,
        }
    }

    /// Whether the job needs [`Ctx::changer`]: a client that changes the
    /// tree behind the measured ones (metadata `--churn`).
    pub fn wants_changer(&self) -> bool {
        matches!(self, Job::Metadata(m) if m.churn.is_some())
    }

    /// Runs setup, then the measured phase bracketed by `phase` calls.
    pub fn run(&self, ctx: &Ctx, phase: &mut dyn FnMut(Phase)) -> Result<Metrics> {
        match self {
            Job::SeqWrite(w) => run_phases(w, ctx, phase),
            Job::Data(w) => run_phases(w, ctx, phase),
            Job::Metadata(w) => run_phases(w, ctx, phase),
            Job::Macro(w) => run_phases(w, ctx, phase),
            Job::MultiClient(w) => run_phases(w, ctx, phase),
            Job::Recall(w) => run_phases(w, ctx, phase),
            Job::LockedRead(w) => run_phases(w, ctx, phase),
            Job::Copy(w) => run_phases(w, ctx, phase),
        }
    }
}

fn run_phases<W: Workload>(w: &W, ctx: &Ctx, phase: &mut dyn FnMut(Phase)) -> Result<Metrics> {
    let prepared = w.setup(ctx)?;
    phase(Phase::Begin);
    let metrics = w.measure(ctx, &prepared);
    phase(Phase::End);
    metrics
}

/// One thread of one client, as a workload closure sees it.
pub struct Worker<'a> {
    pub client: usize,
    /// Index of this thread within its client, and how many the client has.
    pub thread: usize,
    pub threads: usize,
    pub fs: &'a dyn BenchFs,
    pub dir: &'a str,
    /// When all workers were released; time limits count from here.
    pub start: Instant,
    stop: &'a AtomicBool,
}

impl Worker<'_> {
    /// True once another worker failed: time-limited loops end early.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A worker's result and its time from the common start to its return.
pub struct Done<T> {
    pub client: usize,
    pub elapsed: Duration,
    pub out: T,
}

/// Runs `threads` workers per client, all released at once; returns every
/// worker's result, or the first error.
pub fn fan_out<T: Send>(ctx: &Ctx, threads: usize, f: impl Fn(&Worker) -> Result<T> + Sync) -> Result<Vec<Done<T>>> {
    // The gate: None while threads are spawned, then Some(start) to go or
    // stays None with `stop` set when spawning failed.
    let gate: (Mutex<Option<Option<Instant>>>, Condvar) = (Mutex::new(None), Condvar::new());
    let stop = AtomicBool::new(false);
    let open = |value: Option<Instant>| {
        *gate.0.lock().unwrap() = Some(value);
        gate.1.notify_all();
    };
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        let mut spawn_error = None;
        'spawn: for (client, fs) in ctx.clients.iter().enumerate() {
            for thread in 0..threads {
                let (f, gate, stop) = (&f, &gate, &stop);
                let (fs, dir) = (fs.as_ref(), ctx.dirs[client].as_str());
                let spawned = std::thread::Builder::new().stack_size(512 << 10).spawn_scoped(s, move || {
                    let mut g = gate.0.lock().unwrap();
                    while g.is_none() {
                        g = gate.1.wait(g).unwrap();
                    }
                    let Some(Some(start)) = *g else { return None };
                    drop(g);
                    let r = f(&Worker { client, thread, threads, fs, dir, start, stop });
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    Some(r.map(|out| Done { client, elapsed: start.elapsed(), out }))
                });
                match spawned {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        spawn_error = Some(BenchError::Target(format!("cannot start a workload thread: {e}")));
                        break 'spawn;
                    }
                }
            }
        }
        open(if spawn_error.is_some() { None } else { Some(Instant::now()) });
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        if let Some(e) = spawn_error {
            return Err(e);
        }
        let mut out = Vec::with_capacity(results.len());
        for r in results {
            match r {
                Ok(Some(r)) => out.push(r?),
                Ok(None) => {}
                Err(_) => return Err(BenchError::Target("a workload thread panicked".into())),
            }
        }
        Ok(out)
    })
}

/// What one worker did in a throughput workload.
#[derive(Debug, Default)]
pub struct Tally {
    pub ops: u64,
    pub bytes: u64,
    /// Microseconds per operation.
    pub lat_us: Vec<f64>,
    /// For runs over time: when each operation ended, from the start.
    pub done_at: Vec<Duration>,
    /// Complete passes over the worker's share of the files.
    pub passes: u64,
    /// When the first pass ended.
    pub first_pass_end: Option<Duration>,
    /// Entries seen as they were before another client changed them.
    pub stale: u64,
}

/// Aggregates workers as the multi-client rule says: MB/s is the sum over
/// clients of each client's bytes over its slowest thread's time; ops/s is
/// all operations over the slowest worker's time. Adds `mbps`,
/// `ops_per_sec`, `ops`, `latency_mean_us`, `latency_p99_us`, `elapsed_s`.
pub fn throughput(done: Vec<Done<Tally>>, clients: usize) -> Metrics {
    let mut per_client = vec![(0u64, Duration::ZERO); clients];
    let (mut ops, mut slowest, mut lat) = (0u64, Duration::ZERO, Vec::new());
    for d in done {
        let c = &mut per_client[d.client];
        c.0 += d.out.bytes;
        c.1 = c.1.max(d.elapsed);
        ops += d.out.ops;
        slowest = slowest.max(d.elapsed);
        lat.extend(d.out.lat_us);
    }
    let mbps: f64 = per_client.iter().filter(|c| !c.1.is_zero()).map(|c| c.0 as f64 / 1e6 / c.1.as_secs_f64()).sum();
    let secs = slowest.as_secs_f64().max(1e-9);
    let mut m = Metrics::new();
    m.insert("mbps".into(), num(mbps));
    m.insert("ops".into(), ops.into());
    m.insert("ops_per_sec".into(), num(ops as f64 / secs));
    m.insert("elapsed_s".into(), num(secs));
    let l = Latency::of(&mut lat);
    m.insert("latency_mean_us".into(), num(l.mean));
    m.insert("latency_p99_us".into(), num(l.p99));
    m
}

/// A latency distribution's summary, in microseconds.
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    /// Sorts `lat` in place.
    pub fn of(lat: &mut [f64]) -> Latency {
        if lat.is_empty() {
            return Latency { mean: f64::NAN, p50: f64::NAN, p99: f64::NAN, max: f64::NAN };
        }
        lat.sort_by(f64::total_cmp);
        let mean = lat.iter().sum::<f64>() / lat.len() as f64;
        let p = |q| crate::stats::percentile(lat, q);
        Latency { mean, p50: p(50.0), p99: p(99.0), max: lat[lat.len() - 1] }
    }
}

/// `n` files of `size` bytes in the first client's directory, made by the
/// first client, for workloads whose clients share them; their paths.
pub fn shared_files(ctx: &Ctx, prefix: &str, n: usize, size: u64) -> Result<Vec<String>> {
    let buf = pattern(size as usize);
    let mut files = Vec::with_capacity(n);
    for i in 0..n {
        let path = format!("{}/{prefix}-{i}", ctx.dirs[0]);
        let mut f = ctx.clients[0].open(&path, crate::target::OpenOptions::create())?;
        f.write_at(0, &buf)?;
        f.close()?;
        files.push(path);
    }
    Ok(files)
}

/// A JSON number (null for NaN), kept to 7 significant digits: more than
/// any run's noise, fewer characters in the file.
pub fn num(x: f64) -> Value {
    if x.is_finite() {
        Value::from(format!("{x:.6e}").parse::<f64>().unwrap_or(x))
    } else {
        Value::Null
    }
}

/// Microseconds since `t`.
pub fn us_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// `len` bytes of a fixed pseudo-random pattern: not zeros, so no layer
/// can shortcut them.
pub fn pattern(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes `size` bytes of `buf` (repeated) to a new file at `path` and
/// closes it; for setup phases.
pub fn write_file(fs: &dyn BenchFs, path: &str, size: u64, buf: &[u8]) -> Result<()> {
    // Small enough to hand over at once: the client may need fewer calls.
    if size <= buf.len() as u64 {
        return fs.write_whole(path, &buf[..size as usize]);
    }
    let mut f = fs.open(path, crate::target::OpenOptions::create())?;
    let mut off = 0;
    while off < size {
        let len = (size - off).min(buf.len() as u64) as usize;
        f.write_at(off, &buf[..len])?;
        off += len as u64;
    }
    f.close()
}

/// Reads a file of `size` bytes with `buf`-sized calls, stopping early at
/// end of file (a size known from setup spares the extra call that would
/// find end of file); returns (bytes, calls).
pub fn read_whole(f: &mut dyn crate::target::BenchFile, size: u64, buf: &mut [u8]) -> Result<(u64, u64)> {
    let (mut off, mut calls) = (0u64, 0u64);
    while off < size {
        let want = (size - off).min(buf.len() as u64) as usize;
        let n = f.read_at(off, &mut buf[..want])?;
        calls += 1;
        if n == 0 {
            break;
        }
        off += n as u64;
    }
    Ok((off, calls))
}

/// Removes `path` and everything under it (cleanup between runs).
pub fn remove_tree(fs: &dyn BenchFs, path: &str) -> Result<()> {
    for e in fs.readdir(path)? {
        let child = format!("{path}/{}", e.name);
        match e.kind {
            crate::target::FileKind::Dir => remove_tree(fs, &child)?,
            _ => fs.remove(&child)?,
        }
    }
    fs.rmdir(path)
}

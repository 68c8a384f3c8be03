//! Metadata-intensive micro-workloads: Chen et al. 2015 §4 (reading small
//! files, creating files, listing a deep tree) and Lai's attribute test,
//! `find . -exec ls -l {} \;`. A client's threads share its work: the files
//! are dealt out round-robin, trees are walked from a shared queue.

use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::tree::{self, WalkQueue};
use super::{fan_out, pattern, read_whole, throughput, us_since, write_file, Ctx, Metrics, Tally, Workload};
use crate::target::{FileKind, OpenOptions, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MetaOp {
    /// Open, read whole and close every one of `files` small files.
    ReadSmall,
    /// Create `files` files (open-create, write `file_size` bytes, close).
    Create,
    /// Recursively list a tree of `files` files, mean directory width 5.
    List,
    /// Lai's `find . -exec ls -l`: for each entry found, lstat it, and for
    /// a directory also list it and lstat every child.
    Stat,
}

impl MetaOp {
    pub fn name(self) -> &'static str {
        match self {
            MetaOp::ReadSmall => "read-small",
            MetaOp::Create => "create",
            MetaOp::List => "list",
            MetaOp::Stat => "stat",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Metadata {
    pub op: MetaOp,
    pub files: usize,
    /// Bytes per file: read by read-small, written by create, and given to
    /// the files of the list/stat trees.
    pub file_size: u64,
    pub threads: usize,
    /// Mean directory width of the list/stat tree.
    pub width: usize,
    /// read-small only: read the files over and over for this long
    /// (Chen 2015 Fig. 7), reporting files/s over time.
    pub duration: Option<Duration>,
    /// list and stat: walk the tree once in the setup, so the timed walk
    /// finds the caches warm.
    pub warm: bool,
    /// list and stat with `warm`: the percentage of the tree's files
    /// another client changes between the warm walk and the timed one,
    /// which checks what it sees ([`Churned`]).
    pub churn: Option<f64>,
}

/// How long the timed walk waits after another client's changes: what
/// a client is told of them (CB_NOTIFY) has this long to arrive, as a
/// person running `ls` after a colleague saved a file gives it. An nfsx
/// client asks to be told of attribute changes within 100 ms, the server
/// sends them on its next 50 ms tick, and the bench's idle client takes
/// its callbacks every 100 ms.
const CHURN_SETTLE: Duration = Duration::from_millis(500);

/// What another client changed: the files rewritten one byte longer
/// (stat), or renamed (list: old name to new).
#[derive(Debug, Default)]
pub struct Churned {
    grown: std::collections::HashSet<String>,
    renamed: std::collections::HashMap<String, String>,
    /// The directories holding renamed files, and how many each holds.
    dirs: std::collections::HashMap<String, usize>,
}

impl Churned {
    fn changed(&self) -> usize {
        self.grown.len() + self.renamed.len()
    }

    /// The stale entries of listing `entries` of `dir`: old names still
    /// listed, new names missing.
    fn stale_in_listing(&self, dir: &str, entries: &[crate::target::DirEntry]) -> u64 {
        if !self.dirs.contains_key(dir) {
            return 0;
        }
        let names: std::collections::HashSet<String> = entries.iter().map(|e| format!("{dir}/{}", e.name)).collect();
        let mut stale = 0;
        for (old, new) in self.renamed.iter().filter(|(o, _)| parent(o) == dir) {
            stale += u64::from(names.contains(old)) + u64::from(!names.contains(new));
        }
        stale
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Changes `pct` percent of the files of `t`, spread over the tree,
/// through `fs`.
fn churn(fs: &dyn crate::workloads::BenchFs, t: &tree::Tree, op: MetaOp, pct: f64, size: u64) -> Result<Churned> {
    let n = ((t.files.len() as f64 * pct / 100.0).ceil() as usize).clamp(1, t.files.len().max(1));
    let step = (t.files.len() / n).max(1);
    let grown = pattern(size as usize + 1);
    let mut c = Churned::default();
    for path in t.files.iter().step_by(step).take(n) {
        if op == MetaOp::Stat {
            fs.write_whole(path, &grown)?;
            c.grown.insert(path.clone());
        } else {
            let new = format!("{path}.moved");
            fs.rename(path, &new)?;
            *c.dirs.entry(parent(path).to_string()).or_default() += 1;
            c.renamed.insert(path.clone(), new);
        }
    }
    Ok(c)
}

/// Files read per bucket of the read-small time series: about 40
/// buckets over the run, none shorter than this.
const MIN_BUCKET: Duration = Duration::from_millis(100);

/// One client's prepared work: the directory the operation works in and,
/// for read-small, the files to read in order.
pub struct Prepared {
    root: String,
    files: Vec<String>,
    churned: Churned,
}

impl Workload for Metadata {
    type Prepared = Vec<Prepared>;

    fn setup(&self, ctx: &Ctx) -> Result<Vec<Prepared>> {
        let buf = pattern(self.file_size.clamp(1, 1 << 20) as usize);
        let mut out = Vec::new();
        for (c, (fs, dir)) in ctx.clients.iter().zip(ctx.dirs).enumerate() {
            let mut churned = Churned::default();
            let root = format!("{dir}/{}", self.op.name());
            fs.mkdir(&root)?;
            let files = match self.op {
                MetaOp::ReadSmall => {
                    // One flat directory, as the paper's 10,000 files; read
                    // back in random order, as the paper's clients did.
                    let mut t = tree::plan(&root, self.files, usize::MAX);
                    tree::create(fs.as_ref(), &t, |_| self.file_size, &buf)?;
                    t.files.shuffle(&mut rand::rngs::StdRng::seed_from_u64(c as u64));
                    t.files
                }
                MetaOp::Create => Vec::new(),
                MetaOp::List | MetaOp::Stat => {
                    let t = tree::plan(&root, self.files, self.width);
                    tree::create(fs.as_ref(), &t, |_| self.file_size, &buf)?;
                    if self.warm {
                        // Twice: a client that asks for directory
                        // delegations when it lists a directory again
                        // holds them by the timed walk.
                        for _ in 0..2 {
                            tree::walk(&WalkQueue::new(&root), |dir| stat_dir(fs.as_ref(), dir, |_, _, _| {}))?;
                        }
                    }
                    if let Some(pct) = self.churn {
                        let changer = ctx.changer.unwrap_or(fs);
                        churned = churn(changer.as_ref(), &t, self.op, pct, self.file_size)?;
                    }
                    Vec::new()
                }
            };
            out.push(Prepared { root, files, churned });
        }
        if out.iter().any(|p| p.churned.changed() > 0) {
            std::thread::sleep(CHURN_SETTLE);
        }
        Ok(out)
    }

    fn measure(&self, ctx: &Ctx, prepared: &Vec<Prepared>) -> Result<Metrics> {
        let queues: Vec<WalkQueue> = prepared.iter().map(|p| WalkQueue::new(&p.root)).collect();
        let buf = pattern(self.file_size.clamp(1, 1 << 20) as usize);
        let done = fan_out(ctx, self.threads, |w| {
            let mut t = Tally::default();
            let mine = |i: &usize| i % w.threads == w.thread;
            match self.op {
                MetaOp::ReadSmall => {
                    let mut rbuf = vec![0u8; buf.len()];
                    let deadline = self.duration.map(|d| w.start + d);
                    'passes: loop {
                        for (_, path) in prepared[w.client].files.iter().enumerate().filter(|(i, _)| mine(i)) {
                            if deadline.is_some_and(|d| Instant::now() >= d) || w.stopped() {
                                break 'passes;
                            }
                            let start = Instant::now();
                            let mut f = w.fs.open(path, OpenOptions::read())?;
                            let (bytes, _) = read_whole(f.as_mut(), self.file_size, &mut rbuf)?;
                            f.close()?;
                            t.lat_us.push(us_since(start));
                            t.ops += 1;
                            t.bytes += bytes;
                            if deadline.is_some() {
                                t.done_at.push(w.start.elapsed());
                            }
                        }
                        t.passes += 1;
                        if deadline.is_none() {
                            break;
                        }
                        t.first_pass_end.get_or_insert(w.start.elapsed());
                    }
                }
                MetaOp::Create => {
                    let root = &prepared[w.client].root;
                    for i in (0..self.files).filter(mine) {
                        let start = Instant::now();
                        write_file(w.fs, &format!("{root}/f{i}"), self.file_size, &buf)?;
                        t.lat_us.push(us_since(start));
                        t.ops += 1;
                        t.bytes += self.file_size;
                    }
                }
                MetaOp::List => tree::walk(&queues[w.client], |dir| {
                    let start = Instant::now();
                    let entries = w.fs.readdir(dir)?;
                    t.lat_us.push(us_since(start));
                    t.ops += entries.len() as u64;
                    t.stale += prepared[w.client].churned.stale_in_listing(dir, &entries);
                    Ok(entries
                        .into_iter()
                        .filter(|e| e.kind == FileKind::Dir)
                        .map(|e| format!("{dir}/{}", e.name))
                        .collect())
                })?,
                MetaOp::Stat => {
                    let grown = &prepared[w.client].churned.grown;
                    let want = self.file_size + 1;
                    tree::walk(&queues[w.client], |dir| {
                        stat_dir(w.fs, dir, |start, path, size| {
                            t.lat_us.push(us_since(start));
                            t.ops += 1;
                            t.stale += u64::from(grown.contains(path) && size != want);
                        })
                    })?
                }
            }
            Ok(t)
        })?;
        let series = self.duration.map(|d| over_time(&done, d));
        let stale: u64 = done.iter().map(|d| d.out.stale).sum();
        let changed: usize = prepared.iter().map(|p| p.churned.changed()).sum();
        let mut m = throughput(done, ctx.clients.len());
        if self.churn.is_some() {
            m.insert("changed".into(), changed.into());
            m.insert("stale".into(), stale.into());
        }
        if let Some(s) = series {
            m.extend(s);
        }
        Ok(m)
    }
}

/// Lai's `find -exec ls -l` in one directory: `ls -l` of each entry (an
/// lstat, and for a directory a listing and an lstat of each child),
/// `timed` called once per entry with when it started, its path and the
/// size found. Returns the subdirectories, for the walk to go on with.
fn stat_dir(
    fs: &dyn crate::workloads::BenchFs,
    dir: &str,
    mut timed: impl FnMut(Instant, &str, u64),
) -> Result<Vec<String>> {
    let mut subdirs = Vec::new();
    for e in fs.readdir(dir)? {
        let start = Instant::now();
        let path = format!("{dir}/{}", e.name);
        let st = fs.stat(&path)?;
        if st.kind == FileKind::Dir {
            for child in fs.readdir(&path)? {
                fs.stat(&format!("{path}/{}", child.name))?;
            }
            subdirs.push(path.clone());
        }
        timed(start, &path, st.size);
    }
    Ok(subdirs)
}

/// read-small with `--duration`: files/s in each bucket of the run, the
/// rate of the first pass over the files (until the slowest worker ended
/// it) and the rate after it, as Chen 2015 Fig. 7 plots them.
fn over_time(done: &[super::Done<Tally>], duration: Duration) -> Metrics {
    let bucket = (duration / 40).max(MIN_BUCKET);
    let n = (duration.as_secs_f64() / bucket.as_secs_f64()).ceil() as usize;
    let mut counts = vec![0u64; n.max(1)];
    let mut all: Vec<Duration> = Vec::new();
    for d in done {
        for at in &d.out.done_at {
            let i = ((at.as_secs_f64() / bucket.as_secs_f64()) as usize).min(counts.len() - 1);
            counts[i] += 1;
            all.push(*at);
        }
    }
    // A worker that never finished a pass has no steady state.
    let first_pass_end = done.iter().map(|d| d.out.first_pass_end.unwrap_or(duration)).max().unwrap_or(duration);
    let end = done.iter().map(|d| d.elapsed).max().unwrap_or(duration).max(first_pass_end);
    let first = all.iter().filter(|a| **a <= first_pass_end).count() as f64;
    let after = all.len() as f64 - first;
    let rate = |files: f64, secs: f64| if secs > 0.0 { files / secs } else { 0.0 };
    let per_s = bucket.as_secs_f64();
    let mut m = Metrics::new();
    m.insert("first_pass_ops_per_sec".into(), super::num(rate(first, first_pass_end.as_secs_f64())));
    m.insert("steady_ops_per_sec".into(), super::num(rate(after, (end - first_pass_end).as_secs_f64())));
    m.insert("series_bucket_s".into(), super::num(per_s));
    let series: Vec<serde_json::Value> = counts.iter().map(|c| super::num(*c as f64 / per_s)).collect();
    m.insert("series_ops_per_sec".into(), serde_json::Value::Array(series));
    m
}

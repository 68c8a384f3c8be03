//! Metadata-intensive micro-workloads: Chen et al. 2015 §4 (reading small
//! files, creating files, listing a deep tree) and Lai's attribute test,
//! `find . -exec ls -l {} \;`. A client's threads share its work: the files
//! are dealt out round-robin, trees are walked from a shared queue.

use std::time::Instant;

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
}

/// One client's prepared work: the directory the operation works in and,
/// for read-small, the files to read in order.
pub struct Prepared {
    root: String,
    files: Vec<String>,
}

impl Workload for Metadata {
    type Prepared = Vec<Prepared>;

    fn setup(&self, ctx: &Ctx) -> Result<Vec<Prepared>> {
        let buf = pattern(self.file_size.clamp(1, 1 << 20) as usize);
        let mut out = Vec::new();
        for (c, (fs, dir)) in ctx.clients.iter().zip(ctx.dirs).enumerate() {
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
                    Vec::new()
                }
            };
            out.push(Prepared { root, files });
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
                    for (_, path) in prepared[w.client].files.iter().enumerate().filter(|(i, _)| mine(i)) {
                        let start = Instant::now();
                        let mut f = w.fs.open(path, OpenOptions::read())?;
                        let (bytes, _) = read_whole(f.as_mut(), self.file_size, &mut rbuf)?;
                        f.close()?;
                        t.lat_us.push(us_since(start));
                        t.ops += 1;
                        t.bytes += bytes;
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
                    Ok(entries
                        .into_iter()
                        .filter(|e| e.kind == FileKind::Dir)
                        .map(|e| format!("{dir}/{}", e.name))
                        .collect())
                })?,
                MetaOp::Stat => tree::walk(&queues[w.client], |dir| {
                    let mut subdirs = Vec::new();
                    for e in w.fs.readdir(dir)? {
                        // `ls -l ENTRY`, as find runs it for each entry.
                        let start = Instant::now();
                        let path = format!("{dir}/{}", e.name);
                        let st = w.fs.stat(&path)?;
                        if st.kind == FileKind::Dir {
                            for child in w.fs.readdir(&path)? {
                                w.fs.stat(&format!("{path}/{}", child.name))?;
                            }
                            subdirs.push(path);
                        }
                        t.lat_us.push(us_since(start));
                        t.ops += 1;
                    }
                    Ok(subdirs)
                })?,
            }
            Ok(t)
        })?;
        Ok(throughput(done, ctx.clients.len()))
    }
}

//! Chen et al. 2015 §3: data-intensive micro-workloads on one large file per
//! client, shared by the client's threads. Sequential modes give each thread
//! a disjoint region; random modes pick offsets aligned to the I/O size
//! anywhere in the file. Read modes and random writes (in place, as in the
//! paper) find the file written and flushed by the untimed setup. A run
//! moves the whole file once, or loops until `duration` when one is given.

use std::time::Instant;

use rand::{Rng, SeedableRng};

use super::{fan_out, pattern, throughput, us_since, write_file, Ctx, Metrics, Tally, Workload};
use crate::target::{OpenOptions, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    SeqRead,
    SeqWrite,
    RandRead,
    RandWrite,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::SeqRead => "seq-read",
            Mode::SeqWrite => "seq-write",
            Mode::RandRead => "rand-read",
            Mode::RandWrite => "rand-write",
        }
    }
    fn writes(self) -> bool {
        matches!(self, Mode::SeqWrite | Mode::RandWrite)
    }
    fn random(self) -> bool {
        matches!(self, Mode::RandRead | Mode::RandWrite)
    }
}

#[derive(Debug, Clone)]
pub struct Data {
    pub mode: Mode,
    /// File size per client.
    pub size: u64,
    pub io_size: u64,
    pub threads: usize,
    /// Open with O_SYNC (the paper's writes).
    pub sync: bool,
    /// Loop until this much time has passed instead of moving the file once.
    pub duration: Option<std::time::Duration>,
}

const FILE: &str = "data";

impl Workload for Data {
    type Prepared = ();

    fn setup(&self, ctx: &Ctx) -> Result<()> {
        let buf = pattern(1 << 20);
        for (fs, dir) in ctx.clients.iter().zip(ctx.dirs) {
            let path = format!("{dir}/{FILE}");
            if self.mode == Mode::SeqWrite {
                fs.open(&path, OpenOptions::create())?.close()?;
            } else {
                write_file(fs.as_ref(), &path, self.size, &buf)?;
                let mut f = fs.open(&path, OpenOptions::read_write())?;
                f.flush()?;
                f.close()?;
            }
        }
        Ok(())
    }

    fn measure(&self, ctx: &Ctx, _: &()) -> Result<Metrics> {
        let blocks = self.size / self.io_size;
        let done = fan_out(ctx, self.threads, |w| {
            let how =
                if self.mode.writes() { OpenOptions::read_write().with_sync(self.sync) } else { OpenOptions::read() };
            let mut f = w.fs.open(&format!("{}/{FILE}", w.dir), how)?;
            let mut buf = pattern(self.io_size as usize);
            // This thread's region for sequential modes, its share of calls
            // for random ones.
            let (first, last) =
                (blocks * w.thread as u64 / w.threads as u64, blocks * (w.thread as u64 + 1) / w.threads as u64);
            let mut rng = rand::rngs::StdRng::seed_from_u64((w.client * 7919 + w.thread) as u64);
            let deadline = self.duration.map(|d| w.start + d);
            let mut t = Tally::default();
            let mut block = first;
            loop {
                match deadline {
                    Some(end) if Instant::now() >= end || w.stopped() => break,
                    None if t.ops >= last - first => break,
                    _ => {}
                }
                let offset = if self.mode.random() {
                    rng.gen_range(0..blocks) * self.io_size
                } else {
                    if block >= last {
                        block = first; // timed runs go round their region again
                    }
                    block += 1;
                    (block - 1) * self.io_size
                };
                let start = Instant::now();
                let n = if self.mode.writes() {
                    f.write_at(offset, &buf)?;
                    buf.len()
                } else {
                    f.read_at(offset, &mut buf)?
                };
                t.lat_us.push(us_since(start));
                t.ops += 1;
                t.bytes += n as u64;
            }
            f.close()?;
            Ok(t)
        })?;
        Ok(throughput(done, ctx.clients.len()))
    }
}

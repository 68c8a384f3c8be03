//! Chen et al. 2015 §6: filebench's fileserver, webserver and varmail
//! personalities with filebench's default parameters, one instance per
//! client in its own directory. Each thread repeats the personality's
//! flowop list until the duration is up; every flowop (open, create, read
//! whole file, write whole file, append, fsync, close, delete, stat) counts
//! as one operation, as in filebench's ops/s. File sizes follow filebench's
//! gamma distribution (shape 1.5) around the mean; appends write a uniform
//! 1..=16 KiB, as filebench's appendfilerand does.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::tree::{self, Tree};
use super::{fan_out, pattern, read_whole, throughput, us_since, write_file, Ctx, Metrics, Tally, Worker, Workload};
use crate::target::{BenchFile, OpenOptions, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Personality {
    /// 10,000 files of 128 KiB in directories of 20, 50 threads:
    /// create+write, append, read, delete, stat.
    Fileserver,
    /// 1,000 files of 16 KiB, 100 threads: read 10 whole files, then append
    /// 16 KiB to a log shared by all threads.
    Webserver,
    /// 1,000 files of 16 KiB in one directory, 16 threads: delete,
    /// create+append+fsync, read+append+fsync, read.
    Varmail,
}

/// A personality's filebench defaults.
pub struct Defaults {
    pub files: usize,
    pub width: usize,
    pub mean_size: u64,
    pub threads: usize,
    /// Share of the files that exist before the run.
    pub prealloc: f64,
}

impl Personality {
    pub fn name(self) -> &'static str {
        match self {
            Personality::Fileserver => "fileserver",
            Personality::Webserver => "webserver",
            Personality::Varmail => "varmail",
        }
    }

    pub fn defaults(self) -> Defaults {
        match self {
            Personality::Fileserver => {
                Defaults { files: 10_000, width: 20, mean_size: 128 << 10, threads: 50, prealloc: 0.8 }
            }
            Personality::Webserver => {
                Defaults { files: 1000, width: 20, mean_size: 16 << 10, threads: 100, prealloc: 1.0 }
            }
            Personality::Varmail => {
                Defaults { files: 1000, width: 1_000_000, mean_size: 16 << 10, threads: 16, prealloc: 0.8 }
            }
        }
    }
}

/// filebench's iosize and meanappendsize for all three personalities.
const IO_SIZE: usize = 1 << 20;
const APPEND_MAX: u64 = 16 << 10;

#[derive(Debug, Clone)]
pub struct Macro {
    pub personality: Personality,
    pub files: usize,
    pub mean_size: u64,
    pub threads: usize,
    pub duration: Duration,
}

/// One client's fileset: which files exist, with their sizes, and which a
/// thread is using (filebench never hands one file to two threads at once).
pub struct Fileset {
    paths: Vec<String>,
    slots: Mutex<Vec<Slot>>,
    log: Option<(String, Mutex<u64>)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    Absent,
    Present(u64),
    Busy,
}

impl Fileset {
    /// Takes a random file that exists (`want_present`) or not; it stays
    /// busy until `put`.
    fn take(&self, rng: &mut StdRng, want_present: bool) -> Option<(usize, u64)> {
        let mut slots = self.slots.lock().unwrap();
        let n = slots.len();
        let first = rng.gen_range(0..n);
        for k in 0..n {
            let i = (first + k) % n;
            match slots[i] {
                Slot::Present(size) if want_present => {
                    slots[i] = Slot::Busy;
                    return Some((i, size));
                }
                Slot::Absent if !want_present => {
                    slots[i] = Slot::Busy;
                    return Some((i, 0));
                }
                _ => {}
            }
        }
        None
    }

    fn put(&self, i: usize, size: Option<u64>) {
        self.slots.lock().unwrap()[i] = size.map_or(Slot::Absent, Slot::Present);
    }
}

/// A gamma-distributed size with the given mean and shape 1.5
/// (Marsaglia & Tsang), at least one byte.
fn gamma_size(rng: &mut StdRng, mean: u64) -> u64 {
    const SHAPE: f64 = 1.5;
    let d = SHAPE - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-300), rng.gen());
        let x = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let v = (1.0 + c * x).powi(3);
        if v > 0.0 && rng.gen::<f64>().max(1e-300).ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return ((d * v * mean as f64 / SHAPE) as u64).max(1);
        }
    }
}

/// Times one flowop into the tally.
fn op<T>(t: &mut Tally, bytes: impl Fn(&T) -> u64, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let r = f()?;
    t.lat_us.push(us_since(start));
    t.ops += 1;
    t.bytes += bytes(&r);
    Ok(r)
}

fn none<T>(_: &T) -> u64 {
    0
}

impl Workload for Macro {
    type Prepared = Vec<Fileset>;

    fn setup(&self, ctx: &Ctx) -> Result<Vec<Fileset>> {
        let d = self.personality.defaults();
        let buf = pattern(IO_SIZE);
        let mut out = Vec::new();
        for (c, (fs, dir)) in ctx.clients.iter().zip(ctx.dirs).enumerate() {
            let mut rng = StdRng::seed_from_u64(c as u64);
            let root = format!("{dir}/fileset");
            fs.mkdir(&root)?;
            let Tree { dirs, files: paths } = tree::plan(&root, self.files, d.width);
            for dir in &dirs {
                fs.mkdir(dir)?;
            }
            let mut order: Vec<usize> = (0..paths.len()).collect();
            order.shuffle(&mut rng);
            let mut slots = vec![Slot::Absent; paths.len()];
            for &i in &order[..(paths.len() as f64 * d.prealloc).round() as usize] {
                let size = gamma_size(&mut rng, self.mean_size);
                write_file(fs.as_ref(), &paths[i], size, &buf)?;
                slots[i] = Slot::Present(size);
            }
            let log = if self.personality == Personality::Webserver {
                let path = format!("{dir}/weblog");
                let size = gamma_size(&mut rng, self.mean_size);
                write_file(fs.as_ref(), &path, size, &buf)?;
                Some((path, Mutex::new(size)))
            } else {
                None
            };
            out.push(Fileset { paths, slots: Mutex::new(slots), log });
        }
        Ok(out)
    }

    fn measure(&self, ctx: &Ctx, sets: &Vec<Fileset>) -> Result<Metrics> {
        let done = fan_out(ctx, self.threads, |w| {
            let deadline = w.start + self.duration;
            let mut run = Thread {
                w,
                set: &sets[w.client],
                rng: StdRng::seed_from_u64((w.client * 7919 + w.thread) as u64 + 1),
                t: Tally::default(),
                buf: pattern(IO_SIZE),
                rbuf: vec![0; IO_SIZE],
                mean_size: self.mean_size,
            };
            let mut log = match &run.set.log {
                Some((path, _)) => Some(w.fs.open(path, OpenOptions::read_write())?),
                None => None,
            };
            while Instant::now() < deadline && !w.stopped() {
                match self.personality {
                    Personality::Fileserver => run.fileserver()?,
                    Personality::Webserver => run.webserver(log.as_deref_mut().expect("webserver has a log"))?,
                    Personality::Varmail => run.varmail()?,
                }
            }
            if let Some(f) = log {
                f.close()?;
            }
            Ok(run.t)
        })?;
        Ok(throughput(done, ctx.clients.len()))
    }
}

/// One thread's loop state.
struct Thread<'a> {
    w: &'a Worker<'a>,
    set: &'a Fileset,
    rng: StdRng,
    t: Tally,
    buf: Vec<u8>,
    rbuf: Vec<u8>,
    mean_size: u64,
}

impl Thread<'_> {
    fn fileserver(&mut self) -> Result<()> {
        if let Some((i, _)) = self.set.take(&mut self.rng, false) {
            let size = gamma_size(&mut self.rng, self.mean_size);
            let mut f = self.open(i, OpenOptions::create())?;
            op(&mut self.t, |_| size, || write_chunks(f.as_mut(), 0, size, &self.buf))?;
            op(&mut self.t, none, || f.close())?;
            self.set.put(i, Some(size));
        }
        if let Some((i, size)) = self.set.take(&mut self.rng, true) {
            let mut f = self.open(i, OpenOptions::read_write())?;
            let size = size + self.append(f.as_mut(), size)?;
            op(&mut self.t, none, || f.close())?;
            self.set.put(i, Some(size));
        }
        self.read_files(1)?;
        if let Some((i, _)) = self.set.take(&mut self.rng, true) {
            op(&mut self.t, none, || self.w.fs.remove(&self.set.paths[i]))?;
            self.set.put(i, None);
        }
        if let Some((i, size)) = self.set.take(&mut self.rng, true) {
            op(&mut self.t, none, || self.w.fs.stat(&self.set.paths[i]))?;
            self.set.put(i, Some(size));
        }
        Ok(())
    }

    fn webserver(&mut self, log: &mut dyn BenchFile) -> Result<()> {
        self.read_files(10)?;
        let (_, end) = self.set.log.as_ref().expect("webserver has a log");
        // The shared log is the contention point: one appender at a time.
        let mut end = end.lock().unwrap();
        *end += self.append(log, *end)?;
        Ok(())
    }

    fn varmail(&mut self) -> Result<()> {
        if let Some((i, _)) = self.set.take(&mut self.rng, true) {
            op(&mut self.t, none, || self.w.fs.remove(&self.set.paths[i]))?;
            self.set.put(i, None);
        }
        if let Some((i, _)) = self.set.take(&mut self.rng, false) {
            let mut f = self.open(i, OpenOptions::create())?;
            let size = self.append(f.as_mut(), 0)?;
            op(&mut self.t, none, || f.flush())?;
            op(&mut self.t, none, || f.close())?;
            self.set.put(i, Some(size));
        }
        if let Some((i, size)) = self.set.take(&mut self.rng, true) {
            let mut f = self.open(i, OpenOptions::read_write())?;
            op(&mut self.t, |r: &(u64, u64)| r.0, || read_whole(f.as_mut(), size, &mut self.rbuf))?;
            let size = size + self.append(f.as_mut(), size)?;
            op(&mut self.t, none, || f.flush())?;
            op(&mut self.t, none, || f.close())?;
            self.set.put(i, Some(size));
        }
        self.read_files(1)
    }

    fn open(&mut self, i: usize, how: OpenOptions) -> Result<Box<dyn BenchFile>> {
        let fs = self.w.fs;
        op(&mut self.t, none, || fs.open(&self.set.paths[i], how))
    }

    /// Appends a uniform 1..=16 KiB at `end`; returns the length.
    fn append(&mut self, f: &mut dyn BenchFile, end: u64) -> Result<u64> {
        let len = self.rng.gen_range(1..=APPEND_MAX);
        op(&mut self.t, |_| len, || f.write_at(end, &self.buf[..len as usize]))?;
        Ok(len)
    }

    /// Opens, reads whole and closes `n` random files.
    fn read_files(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            let Some((i, size)) = self.set.take(&mut self.rng, true) else { return Ok(()) };
            let mut f = self.open(i, OpenOptions::read())?;
            op(&mut self.t, |r: &(u64, u64)| r.0, || read_whole(f.as_mut(), size, &mut self.rbuf))?;
            op(&mut self.t, none, || f.close())?;
            self.set.put(i, Some(size));
        }
        Ok(())
    }
}

/// filebench's writewholefile: `size` bytes in `IO_SIZE` calls.
fn write_chunks(f: &mut dyn BenchFile, mut off: u64, size: u64, buf: &[u8]) -> Result<()> {
    let end = off + size;
    while off < end {
        let len = (end - off).min(buf.len() as u64) as usize;
        f.write_at(off, &buf[..len])?;
        off += len as u64;
    }
    Ok(())
}

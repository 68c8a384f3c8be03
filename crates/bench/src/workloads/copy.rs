//! Copying a file three ways (issue "NFSv4.2 and RPC-with-TLS"): a
//! server-side COPY (RFC 7862 section 4), where the data never crosses the
//! wire; the same copy read and written through the client in `io_size`
//! calls and committed; and a CLONE (RFC 7862 section 15.13), where the
//! server's file system shares the blocks instead of copying them.
//!
//! The untimed setup writes and flushes one source file per client. Each
//! run then times every method into a fresh, empty destination (created
//! untimed, so all three start alike), checks the destination against the
//! source's known contents (untimed) and removes it. A target that cannot
//! copy or clone in place reports the method as not supported, with the
//! reason, and the run goes on with the others. Every method ends with the
//! copy on stable storage: COPY commits what it copied, read-write ends
//! with an fsync (COMMIT); CLONE shares blocks already on disk.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{fan_out, num, pattern, Ctx, Metrics, Workload};
use crate::target::{BenchError, BenchFs, OpStat, OpenOptions, Result};

#[derive(Debug, Clone)]
pub struct FileCopy {
    /// Bytes of the source file (per client).
    pub size: u64,
    /// Bytes per read and write call of the read-write method.
    pub io_size: u64,
}

/// The three ways of copying, in the order each run times them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    ServerCopy,
    ReadWrite,
    Clone,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::ServerCopy, Method::ReadWrite, Method::Clone];

    /// As in the documentation and the reports.
    pub fn name(self) -> &'static str {
        match self {
            Method::ServerCopy => "server-copy",
            Method::ReadWrite => "read-write",
            Method::Clone => "clone",
        }
    }

    /// The prefix of the method's keys in a run object (`server_copy_s`).
    pub fn key(self) -> &'static str {
        match self {
            Method::ServerCopy => "server_copy",
            Method::ReadWrite => "read_write",
            Method::Clone => "clone",
        }
    }

    fn dest(self, dir: &str) -> String {
        format!("{dir}/copy-{}", self.name())
    }
}

const SOURCE: &str = "copy-source";
/// The repeated pattern the source is made of.
const BASE: usize = 1 << 20;
/// Every block of this size starts with its own offset, so a block copied
/// to the wrong place does not compare equal.
const STAMP: u64 = 4096;
/// Bytes per setup write and per verifying read.
const CHUNK: u64 = 1 << 20;
/// Destinations up to this size are compared whole; larger ones in
/// `SAMPLES` chunks spread from the first byte to the last.
const FULL_CHECK_MAX: u64 = 256 << 20;
const SAMPLES: u64 = 64;

/// The source's bytes at `off..off + out.len()`: `base` repeated, each
/// 4 KiB block stamped with its offset (never all zeros, so no layer can
/// shortcut or punch them as holes).
fn fill(base: &[u8], off: u64, out: &mut [u8]) {
    let end = off + out.len() as u64;
    let mut pos = off;
    while pos < end {
        let block = pos - pos % STAMP;
        let within = (pos - block) as usize;
        let n = (STAMP - within as u64).min(end - pos) as usize;
        let from = (block % base.len() as u64) as usize + within;
        let dst = &mut out[(pos - off) as usize..][..n];
        dst.copy_from_slice(&base[from..from + n]);
        let stamp = (block ^ 0x5a5a_5a5a_5a5a_5a5a).to_le_bytes();
        for (i, b) in dst.iter_mut().enumerate().take(8usize.saturating_sub(within)) {
            *b = stamp[within + i];
        }
        pos += n as u64;
    }
}

/// The ranges the check reads: all of a small file, samples of a big one.
fn check_ranges(size: u64) -> Vec<(u64, u64)> {
    if size <= FULL_CHECK_MAX {
        return (0..size.div_ceil(CHUNK)).map(|i| (i * CHUNK, CHUNK.min(size - i * CHUNK))).collect();
    }
    let last = size - CHUNK;
    (0..SAMPLES)
        .map(|i| {
            let off = last * i / (SAMPLES - 1);
            (if i == SAMPLES - 1 { last } else { off - off % STAMP }, CHUNK)
        })
        .collect()
}

/// Checks `path` holds exactly the source's bytes.
fn verify(fs: &dyn BenchFs, path: &str, size: u64, base: &[u8]) -> Result<()> {
    let bad = |msg: String| BenchError::op("verify", path, msg);
    let st = fs.stat(path)?;
    if st.size != size {
        return Err(bad(format!("{} bytes after the copy, the source has {size}", st.size)));
    }
    let mut f = fs.open(path, OpenOptions::read())?;
    let (mut got, mut want) = (vec![0u8; CHUNK as usize], vec![0u8; CHUNK as usize]);
    for (off, len) in check_ranges(size) {
        let len = len as usize;
        let mut have = 0;
        while have < len {
            let n = f.read_at(off + have as u64, &mut got[have..len])?;
            if n == 0 {
                return Err(bad(format!("ends at byte {} of {size}", off + have as u64)));
            }
            have += n;
        }
        fill(base, off, &mut want[..len]);
        if let Some(i) = (0..len).find(|&i| got[i] != want[i]) {
            return Err(bad(format!("differs from the source at byte {}", off + i as u64)));
        }
    }
    f.close()
}

/// One method's outcome.
enum Outcome {
    /// Seconds of the slowest client, and MB/s summed over clients.
    Done {
        secs: f64,
        mbps: f64,
    },
    NotSupported(String),
}

impl FileCopy {
    /// Copies this client's source into the method's destination; the
    /// bytes copied.
    fn copy(&self, method: Method, fs: &dyn BenchFs, dir: &str) -> Result<u64> {
        let (src, dst) = (format!("{dir}/{SOURCE}"), method.dest(dir));
        match method {
            Method::ServerCopy => fs.copy_range(&src, 0, &dst, 0, self.size),
            Method::Clone => fs.clone_range(&src, 0, &dst, 0, 0).map(|()| self.size),
            Method::ReadWrite => {
                let mut from = fs.open(&src, OpenOptions::read())?;
                let mut to = fs.open(&dst, OpenOptions::read_write())?;
                let mut buf = vec![0u8; self.io_size as usize];
                let mut off = 0;
                while off < self.size {
                    let want = (self.size - off).min(self.io_size) as usize;
                    let n = from.read_at(off, &mut buf[..want])?;
                    if n == 0 {
                        break;
                    }
                    to.write_at(off, &buf[..n])?;
                    off += n as u64;
                }
                // Durable, as COPY's commit makes its copy.
                to.flush()?;
                to.close()?;
                from.close()?;
                Ok(off)
            }
        }
    }

    /// Times `method` on every client at once.
    fn time(&self, method: Method, ctx: &Ctx) -> Result<Outcome> {
        let done = fan_out(ctx, 1, |w| {
            let copied = self.copy(method, w.fs, w.dir)?;
            if copied != self.size {
                let src = format!("{}/{SOURCE}", w.dir);
                return Err(BenchError::op("copy", &src, format!("copied {copied} of {} bytes", self.size)));
            }
            Ok(())
        });
        let done = match done {
            Ok(done) => done,
            Err(BenchError::Unsupported(why)) if method != Method::ReadWrite => return Ok(Outcome::NotSupported(why)),
            Err(e) => return Err(e),
        };
        let secs = done.iter().map(|d| d.elapsed).max().unwrap_or_default().as_secs_f64().max(1e-9);
        let mbps = done.iter().map(|d| self.size as f64 / 1e6 / d.elapsed.as_secs_f64().max(1e-9)).sum();
        Ok(Outcome::Done { secs, mbps })
    }
}

/// The calls made between two snapshots of every client's counters, and
/// the bytes they moved either way; None when the target keeps none.
fn traffic(before: &[Vec<OpStat>], after: &[Vec<OpStat>]) -> Option<(BTreeMap<String, u64>, u64)> {
    if before.iter().chain(after).all(Vec::is_empty) {
        return None;
    }
    let (mut calls, mut bytes) = (BTreeMap::new(), 0);
    for d in before.iter().zip(after).flat_map(|(b, a)| crate::run::delta(b, a)) {
        *calls.entry(d.op).or_insert(0) += d.count;
        bytes += d.bytes_sent + d.bytes_received;
    }
    Some((calls, bytes))
}

impl Workload for FileCopy {
    type Prepared = ();

    fn setup(&self, ctx: &Ctx) -> Result<()> {
        let base = pattern(BASE);
        let mut buf = vec![0u8; CHUNK as usize];
        for (fs, dir) in ctx.clients.iter().zip(ctx.dirs) {
            let path = format!("{dir}/{SOURCE}");
            let mut f = fs.open(&path, OpenOptions::create())?;
            let mut off = 0;
            while off < self.size {
                let len = (self.size - off).min(CHUNK) as usize;
                fill(&base, off, &mut buf[..len]);
                f.write_at(off, &buf[..len])?;
                off += len as u64;
            }
            f.flush()?;
            f.close()?;
        }
        Ok(())
    }

    fn measure(&self, ctx: &Ctx, _: &()) -> Result<Metrics> {
        let base = pattern(BASE);
        let mut m = Metrics::new();
        let mut secs = BTreeMap::new();
        for method in Method::ALL {
            let key = method.key();
            for (fs, dir) in ctx.clients.iter().zip(ctx.dirs) {
                fs.open(&method.dest(dir), OpenOptions::create())?.close()?;
            }
            let before: Vec<Vec<OpStat>> = ctx.clients.iter().map(|c| c.op_stats()).collect();
            let outcome = self.time(method, ctx)?;
            let after: Vec<Vec<OpStat>> = ctx.clients.iter().map(|c| c.op_stats()).collect();
            match outcome {
                Outcome::Done { secs: s, mbps } => {
                    for (fs, dir) in ctx.clients.iter().zip(ctx.dirs) {
                        verify(fs.as_ref(), &method.dest(dir), self.size, &base)?;
                    }
                    secs.insert(key, s);
                    m.insert(key.into(), json!("ok"));
                    m.insert(format!("{key}_s"), num(s));
                    m.insert(format!("{key}_mbps"), num(mbps));
                }
                Outcome::NotSupported(why) => {
                    m.insert(key.into(), json!("not supported"));
                    m.insert(format!("{key}_reason"), json!(why));
                    m.insert(format!("{key}_s"), Value::Null);
                    m.insert(format!("{key}_mbps"), Value::Null);
                }
            }
            let (calls, bytes) = match traffic(&before, &after) {
                Some((calls, bytes)) => (json!(calls), json!(bytes)),
                None => (Value::Null, Value::Null),
            };
            m.insert(format!("{key}_calls"), calls);
            m.insert(format!("{key}_wire_bytes"), bytes);
            for (fs, dir) in ctx.clients.iter().zip(ctx.dirs) {
                fs.remove(&method.dest(dir))?;
            }
        }
        let rw = secs.get(Method::ReadWrite.key()).copied();
        let speedup = |k: Method| match (rw, secs.get(k.key())) {
            (Some(rw), Some(s)) => num(rw / s),
            _ => Value::Null,
        };
        m.insert("copy_speedup".into(), speedup(Method::ServerCopy));
        m.insert("clone_speedup".into(), speedup(Method::Clone));
        m.insert("copy_bytes".into(), json!(self.size));
        let verified = if self.size <= FULL_CHECK_MAX {
            "whole file".to_string()
        } else {
            format!("{SAMPLES} ranges of {} spread over the file", crate::params::fmt_size(CHUNK))
        };
        m.insert("verified".into(), json!(verified));
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_is_the_same_however_it_is_cut() {
        let base = pattern(BASE);
        let mut whole = vec![0u8; 3 * BASE + 5000];
        fill(&base, 0, &mut whole);
        for (off, len) in [(0usize, 1usize), (3, 4100), (4090, 20), (BASE - 7, 9000), (2 * BASE + 4096, BASE + 904)] {
            let mut part = vec![0u8; len];
            fill(&base, off as u64, &mut part);
            assert_eq!(part, whole[off..off + len], "at {off}+{len}");
        }
        // Blocks a base length apart differ (their stamps do).
        assert_ne!(whole[..STAMP as usize], whole[BASE..BASE + STAMP as usize]);
        assert!(whole.iter().filter(|&&b| b == 0).count() < whole.len() / 100);
    }

    #[test]
    fn small_files_are_checked_whole_and_big_ones_from_end_to_end() {
        let r = check_ranges(5 * CHUNK + 10);
        assert_eq!(r.len(), 6);
        assert_eq!(r[5], (5 * CHUNK, 10));
        let big = 1u64 << 30;
        let r = check_ranges(big);
        assert_eq!(r.len() as u64, SAMPLES);
        assert_eq!(r[0], (0, CHUNK));
        assert_eq!(r[r.len() - 1], (big - CHUNK, CHUNK));
        assert!(r.iter().all(|(off, len)| off % STAMP == 0 && off + len <= big));
    }
}

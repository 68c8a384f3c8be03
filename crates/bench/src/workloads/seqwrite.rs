//! Lever & Honeyman's sequential write benchmark (Bonnie's block write):
//! write `size` bytes into a fresh file in `io_size` calls, timing every
//! call, then fsync, then close. Three throughputs divide the bytes by the
//! time from the start to just after the last write, the flush and the
//! close, so write-behind caching (fast writes, slow flush) and write-through
//! (slow writes, instant flush) are told apart; the per-call latencies show
//! the periodic stalls the paper found.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{fan_out, num, pattern, us_since, Ctx, Latency, Metrics, Workload};
use crate::target::{OpenOptions, Result};

#[derive(Debug, Clone)]
pub struct SeqWrite {
    pub size: u64,
    pub io_size: u64,
    /// O_SYNC: every call is a stable write.
    pub sync: bool,
}

struct ClientRun {
    lat_us: Vec<f64>,
    write: Duration,
    flush: Duration,
    close: Duration,
}

/// A call slower than this is a stall (the paper's threshold).
const SLOW_US: f64 = 1000.0;

impl Workload for SeqWrite {
    type Prepared = ();

    fn setup(&self, _ctx: &Ctx) -> Result<()> {
        Ok(())
    }

    fn measure(&self, ctx: &Ctx, _: &()) -> Result<Metrics> {
        let buf = pattern(self.io_size as usize);
        let done = fan_out(ctx, 1, |w| {
            let mut lat_us = Vec::with_capacity(self.size.div_ceil(self.io_size) as usize);
            let start = Instant::now();
            let mut f = w.fs.open(&format!("{}/seqwrite", w.dir), OpenOptions::create().with_sync(self.sync))?;
            let mut off = 0;
            while off < self.size {
                let len = (self.size - off).min(self.io_size) as usize;
                let t = Instant::now();
                f.write_at(off, &buf[..len])?;
                lat_us.push(us_since(t));
                off += len as u64;
            }
            let write = start.elapsed();
            f.flush()?;
            let flush = start.elapsed();
            f.close()?;
            Ok(ClientRun { lat_us, write, flush, close: start.elapsed() })
        })?;
        Ok(self.metrics(done.into_iter().map(|d| d.out).collect()))
    }
}

impl SeqWrite {
    /// Throughputs add up over clients; latencies of all clients are kept,
    /// client after client, each in call order.
    fn metrics(&self, runs: Vec<ClientRun>) -> Metrics {
        let mb = self.size as f64 / 1e6;
        let rate = |f: fn(&ClientRun) -> Duration| runs.iter().map(|r| mb / f(r).as_secs_f64().max(1e-9)).sum();
        let write_mbps: f64 = rate(|r| r.write);
        let flush_mbps: f64 = rate(|r| r.flush);
        let close_mbps: f64 = rate(|r| r.close);
        let slowest = runs.iter().map(|r| r.close).max().unwrap_or_default();
        let calls: Vec<f64> = runs.into_iter().flat_map(|r| r.lat_us).map(|x| (x * 10.0).round() / 10.0).collect();
        let over = calls.iter().filter(|&&x| x > SLOW_US).count();
        let mut sorted = calls.clone();
        let l = Latency::of(&mut sorted);
        let mut m = Metrics::new();
        m.insert("write_mbps".into(), num(write_mbps));
        m.insert("flush_mbps".into(), num(flush_mbps));
        m.insert("close_mbps".into(), num(close_mbps));
        m.insert("calls".into(), calls.len().into());
        m.insert("calls_over_1ms".into(), over.into());
        m.insert("calls_over_1ms_pct".into(), num(100.0 * over as f64 / calls.len().max(1) as f64));
        m.insert("latency_mean_us".into(), num(l.mean));
        m.insert("latency_p50_us".into(), num(l.p50));
        m.insert("latency_p99_us".into(), num(l.p99));
        m.insert("latency_max_us".into(), num(l.max));
        m.insert("elapsed_s".into(), num(slowest.as_secs_f64()));
        m.insert("call_latency_us".into(), Value::from(calls));
        m
    }
}

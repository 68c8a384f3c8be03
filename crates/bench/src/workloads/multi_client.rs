//! Aggregate throughput as clients are added (Chen et al. 2015 ran five
//! clients at once): every client writes its own file sequentially, then,
//! once all writes are done, every client reads the file its neighbour
//! wrote, so with several clients no read is served from the writer's own
//! cache. A write counts once it is on the server: open, writes, fsync and
//! close are all timed.

use std::time::Instant;

use super::{fan_out, num, pattern, read_whole, Ctx, Metrics, Workload};
use crate::target::{OpenOptions, Result};

#[derive(Debug, Clone)]
pub struct MultiClient {
    /// Bytes per client file.
    pub size: u64,
    pub io_size: u64,
}

const FILE: &str = "multi-client";

impl Workload for MultiClient {
    type Prepared = ();

    fn setup(&self, _ctx: &Ctx) -> Result<()> {
        Ok(())
    }

    fn measure(&self, ctx: &Ctx, _: &()) -> Result<Metrics> {
        let buf = pattern(self.io_size as usize);
        let writes = fan_out(ctx, 1, |w| {
            let start = Instant::now();
            let mut f = w.fs.open(&format!("{}/{FILE}", w.dir), OpenOptions::create())?;
            let mut off = 0;
            while off < self.size {
                let len = (self.size - off).min(self.io_size) as usize;
                f.write_at(off, &buf[..len])?;
                off += len as u64;
            }
            f.flush()?;
            f.close()?;
            Ok(start.elapsed())
        })?;
        let n = ctx.clients.len();
        let reads = fan_out(ctx, 1, |w| {
            let mut rbuf = vec![0u8; self.io_size as usize];
            let start = Instant::now();
            let mut f = w.fs.open(&format!("{}/{FILE}", ctx.dirs[(w.client + 1) % n]), OpenOptions::read())?;
            let (bytes, _) = read_whole(f.as_mut(), self.size, &mut rbuf)?;
            f.close()?;
            Ok((bytes, start.elapsed()))
        })?;
        let mb = self.size as f64 / 1e6;
        let write_mbps: f64 = writes.iter().map(|d| mb / d.out.as_secs_f64().max(1e-9)).sum();
        let read_mbps: f64 = reads.iter().map(|d| d.out.0 as f64 / 1e6 / d.out.1.as_secs_f64().max(1e-9)).sum();
        let slowest = |e: Vec<f64>| e.into_iter().fold(0.0, f64::max);
        let mut m = Metrics::new();
        m.insert("write_mbps".into(), num(write_mbps));
        m.insert("read_mbps".into(), num(read_mbps));
        m.insert("write_s".into(), num(slowest(writes.iter().map(|d| d.out.as_secs_f64()).collect())));
        m.insert("read_s".into(), num(slowest(reads.iter().map(|d| d.out.1.as_secs_f64()).collect())));
        m.insert("bytes_read".into(), reads.iter().map(|d| d.out.0).sum::<u64>().into());
        Ok(m)
    }
}

//! Locked reads (Chen et al. 2015, section 5.2, Table 1): every client
//! opens each of `files` shared 4 KiB files ten times in a row, and each
//! time read-locks it, reads it whole, unlocks and closes it. The paper
//! counted the calls per client: NFSv3 60,008, NFSv4.1 without
//! delegations 88,009, with delegations 3,009 (1,000 files).
//!
//! Without a delegation, a lock obliges the client to read again what it
//! cached (another client may have written under its own lock). Under a
//! read delegation nobody else can write, so the cached data stays good,
//! but the lock itself still goes to the server: RFC 8881 section 10.4.2
//! lets a client lock locally only under a write delegation. (The 3,009
//! of the paper's Linux client locked locally under read delegations.)

use std::time::Instant;

use super::{fan_out, num, read_whole, shared_files, us_since, Ctx, Latency, Metrics, Workload};
use crate::target::{OpenOptions, Result};

#[derive(Debug, Clone)]
pub struct LockedRead {
    pub files: usize,
}

/// Opens of each file in a row, as in the paper.
const REPEATS: usize = 10;
const FILE_SIZE: u64 = 4096;

fn calls(ctx: &Ctx, client: usize) -> u64 {
    ctx.clients[client].op_stats().iter().map(|s| s.count).sum()
}

impl Workload for LockedRead {
    type Prepared = Vec<String>;

    fn setup(&self, ctx: &Ctx) -> Result<Vec<String>> {
        shared_files(ctx, "locked", self.files, FILE_SIZE)
    }

    fn measure(&self, ctx: &Ctx, files: &Vec<String>) -> Result<Metrics> {
        let before: Vec<u64> = (0..ctx.clients.len()).map(|c| calls(ctx, c)).collect();
        let done = fan_out(ctx, 1, |w| {
            let mut rbuf = vec![0u8; FILE_SIZE as usize];
            let mut lat = Vec::with_capacity(files.len() * REPEATS);
            for path in files {
                for _ in 0..REPEATS {
                    let start = Instant::now();
                    let mut f = w.fs.open(path, OpenOptions::read())?;
                    f.lock_whole(false)?;
                    read_whole(f.as_mut(), FILE_SIZE, &mut rbuf)?;
                    f.unlock_whole()?;
                    f.close()?;
                    lat.push(us_since(start));
                }
            }
            Ok(lat)
        })?;
        let per_client: Vec<f64> =
            (0..ctx.clients.len()).map(|c| calls(ctx, c).saturating_sub(before[c]) as f64).collect();
        let reads = (files.len() * REPEATS * ctx.clients.len()) as f64;
        let slowest = done.iter().map(|d| d.elapsed).max().unwrap_or_default().as_secs_f64().max(1e-9);
        let mut lat: Vec<f64> = done.into_iter().flat_map(|d| d.out).collect();
        let l = Latency::of(&mut lat);
        let mut m = Metrics::new();
        m.insert("ops_per_sec".into(), num(reads / slowest));
        m.insert("calls_per_client".into(), num(per_client.iter().sum::<f64>() / per_client.len().max(1) as f64));
        m.insert("latency_mean_us".into(), num(l.mean));
        m.insert("locked_reads_per_client".into(), ((files.len() * REPEATS) as u64).into());
        Ok(m)
    }
}

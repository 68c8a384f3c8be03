//! Delegation recall (Chen et al. 2015, Fig. 13): one client reads a file
//! and keeps a read delegation; another opens it for writing, which the
//! server can only grant once the first client has given the delegation
//! back. The figure is the second client's open, from call to success.
//! The paper measured ~100 ms, most of it a fixed wait of the Linux
//! client before it asked again; a client that retries after 1 ms and a
//! server that recalls at once make it a few round trips.
//!
//! Each of `files` files is used once per run (a delegation is granted
//! once per file and holder). The holder's DELEGRETURNs are counted: a
//! server that grants no delegation shows 0, and its "recall" time is
//! that of a plain OPEN.

use std::time::Instant;

use super::{num, read_whole, shared_files, us_since, Ctx, Latency, Metrics, Workload};
use crate::target::{BenchError, OpenOptions, Result};

#[derive(Debug, Clone)]
pub struct Recall {
    pub files: usize,
}

const FILE_SIZE: u64 = 4096;

fn delegreturns(ctx: &Ctx) -> u64 {
    ctx.clients[0].op_stats().iter().filter(|s| s.op == "DELEGRETURN").map(|s| s.count).sum()
}

impl Workload for Recall {
    type Prepared = Vec<String>;

    fn setup(&self, ctx: &Ctx) -> Result<Self::Prepared> {
        if ctx.clients.len() < 2 {
            return Err(BenchError::Invalid("recall needs --clients 2 (a holder and an opener)".into()));
        }
        // Made by the holder: the opener has no state on the files.
        shared_files(ctx, "recall", self.files, FILE_SIZE)
    }

    fn measure(&self, ctx: &Ctx, files: &Self::Prepared) -> Result<Metrics> {
        let (holder, opener) = (&ctx.clients[0], &ctx.clients[1]);
        let mut rbuf = vec![0u8; FILE_SIZE as usize];
        let returned_before = delegreturns(ctx);
        let mut recall_ms = Vec::new();
        for held in files {
            // The holder reads the file (and keeps what the server grants).
            let mut f = holder.open(held, OpenOptions::read())?;
            read_whole(f.as_mut(), FILE_SIZE, &mut rbuf)?;
            f.close()?;
            let start = Instant::now();
            let w = opener.open(held, OpenOptions::read_write())?;
            recall_ms.push(us_since(start) / 1000.0);
            w.close()?;
        }
        let returned = delegreturns(ctx) - returned_before;
        let r = Latency::of(&mut recall_ms);
        let mut m = Metrics::new();
        m.insert("recall_ms".into(), num(r.mean));
        m.insert("recall_ms_p50".into(), num(r.p50));
        m.insert("recall_ms_max".into(), num(r.max));
        m.insert("delegations_returned".into(), returned.into());
        m.insert("files".into(), (files.len() as u64).into());
        Ok(m)
    }
}

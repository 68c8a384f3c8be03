//! Aggregate throughput as clients are added (Chen et al. 2015 ran five
//! clients at once): every client writes its own file sequentially, then,
//! once all writes are done, every client reads the file its neighbour
//! wrote, so with several clients no read is served from the writer's own
//! cache. A write counts once it is on the server: open, writes, fsync and
//! close are all timed. With `verify`, every byte read back is compared
//! with the pattern written (untimed work inside the timed read, so runs
//! that verify are not compared with runs that do not).

use std::time::Instant;

use super::{fan_out, num, pattern, read_whole, Ctx, Metrics, Workload};
use crate::target::{BenchError, BenchFile, OpenOptions, Result};

#[derive(Debug, Clone)]
pub struct MultiClient {
    /// Bytes per client file.
    pub size: u64,
    pub io_size: u64,
    /// Compare what is read with what was written.
    pub verify: bool,
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
            let path = format!("{}/{FILE}", ctx.dirs[(w.client + 1) % n]);
            let mut f = w.fs.open(&path, OpenOptions::read())?;
            let bytes = if self.verify {
                read_and_compare(f.as_mut(), self.size, &buf, &mut rbuf, &path)?
            } else {
                read_whole(f.as_mut(), self.size, &mut rbuf)?.0
            };
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

/// Reads the whole file in `expect.len()` calls, each compared with
/// `expect` (every block of the file was written from it); the first
/// difference or a short file is an error naming the offset.
fn read_and_compare(f: &mut dyn BenchFile, size: u64, expect: &[u8], buf: &mut [u8], path: &str) -> Result<u64> {
    let mut off = 0u64;
    while off < size {
        let want = (size - off).min(expect.len() as u64) as usize;
        let mut got = 0;
        while got < want {
            let n = f.read_at(off + got as u64, &mut buf[got..want])?;
            if n == 0 {
                return Err(BenchError::op(
                    "verify",
                    path,
                    format!("file ends at {} of {size} bytes", off + got as u64),
                ));
            }
            got += n;
        }
        if buf[..want] != expect[..want] {
            let i = (0..want).find(|&i| buf[i] != expect[i]).unwrap_or(0);
            return Err(BenchError::op(
                "verify",
                path,
                format!("byte {} differs from what was written", off + i as u64),
            ));
        }
        off += want as u64;
    }
    Ok(off)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in memory, read in pieces of at most 1000 bytes.
    struct Mem(Vec<u8>);

    impl BenchFile for Mem {
        fn write_at(&mut self, _: u64, _: &[u8]) -> Result<()> {
            Ok(())
        }
        fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
            let rest = self.0.get(offset as usize..).unwrap_or_default();
            let n = rest.len().min(buf.len()).min(1000);
            buf[..n].copy_from_slice(&rest[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn close(self: Box<Self>) -> Result<()> {
            Ok(())
        }
        fn lock_whole(&mut self, _: bool) -> Result<()> {
            Ok(())
        }
        fn unlock_whole(&mut self) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_changed_byte_or_a_short_file_is_an_error() {
        let block = pattern(4096);
        let mut file: Vec<u8> = block.iter().chain(block.iter()).copied().collect();
        let mut buf = vec![0; 4096];
        assert_eq!(read_and_compare(&mut Mem(file.clone()), 8192, &block, &mut buf, "f").unwrap(), 8192);
        file[5000] ^= 1;
        let e = read_and_compare(&mut Mem(file.clone()), 8192, &block, &mut buf, "f").unwrap_err();
        assert!(e.to_string().contains("byte 5000 differs"), "{e}");
        file.truncate(6000);
        let e = read_and_compare(&mut Mem(file), 8192, &block, &mut buf, "f").unwrap_err();
        assert!(e.to_string().contains("ends at 6000"), "{e}");
    }
}

//! State-machine tests of the write-behind cache against a simulated server.

use std::collections::{HashMap, VecDeque};

use super::types::MIB;
use super::*;

const KIB: u64 = 1024;

pub(super) type Wb = Writeback<u64, String>;

/// A server's view of files: `cache` is what reads would see, `stable` what
/// survives a restart (which also changes the write verifier).
#[derive(Default)]
pub(super) struct Server {
    pub cache: HashMap<u64, Vec<u8>>,
    pub stable: HashMap<u64, Vec<u8>>,
    pub boots: u64,
}

fn put(img: &mut Vec<u8>, off: u64, data: &[u8]) {
    let end = off as usize + data.len();
    if img.len() < end {
        img.resize(end, 0);
    }
    img[off as usize..end].copy_from_slice(data);
}

impl Server {
    pub fn verf(&self) -> [u8; 8] {
        self.boots.to_be_bytes()
    }

    /// Performs a WRITE of the first `count` bytes (all if `None`).
    pub fn write(&mut self, file: u64, off: u64, data: &[u8], stable: stable_how, count: Option<usize>) -> WriteOk {
        let n = count.unwrap_or(data.len()).min(data.len());
        put(self.cache.entry(file).or_default(), off, &data[..n]);
        if stable != stable_how::UNSTABLE {
            put(self.stable.entry(file).or_default(), off, &data[..n]);
        }
        WriteOk { count: n as u32, committed: stable, verf: self.verf() }
    }

    pub fn commit(&mut self, file: u64) -> [u8; 8] {
        let c = self.cache.get(&file).cloned().unwrap_or_default();
        self.stable.insert(file, c);
        self.verf()
    }

    pub fn reboot(&mut self) {
        self.cache = self.stable.clone();
        self.boots += 1;
    }

    /// Performs `a` and feeds its reply back.
    pub fn serve(&mut self, wb: &mut Wb, a: Action<u64>) {
        match a {
            Action::Write { id, file, offset, data, stable } => {
                let ok = self.write(file, offset, &data, stable, None);
                wb.on_write_reply(id, Ok(ok));
            }
            Action::Commit { id, file } => {
                let v = self.commit(file);
                wb.on_commit_reply(id, Ok(v));
            }
        }
    }
}

/// Sends and answers everything until nothing more is to be sent.
pub(super) fn drain(wb: &mut Wb, srv: &mut Server) {
    while let Some(a) = wb.next_action() {
        srv.serve(wb, a);
    }
}

fn settings(wsize: u64, budget: u64, high: u64, low: u64) -> WritebackSettings {
    WritebackSettings {
        wsize,
        dirty_budget: budget,
        high_watermark: high,
        low_watermark: low,
        max_writes_in_flight: 16,
        start_writeback_of_full_chunks: true,
    }
}

fn pattern(seed: u64, len: u64) -> Vec<u8> {
    (0..len).map(|i| (seed.wrapping_mul(31).wrapping_add(i * 7) % 251) as u8).collect()
}

fn expect_write(a: Option<Action<u64>>) -> (ReqId, u64, Bytes, stable_how) {
    match a {
        Some(Action::Write { id, offset, data, stable, .. }) => (id, offset, data, stable),
        other => panic!("expected a WRITE, got {other:?}"),
    }
}

fn expect_commit(a: Option<Action<u64>>) -> ReqId {
    match a {
        Some(Action::Commit { id, .. }) => id,
        other => panic!("expected a COMMIT, got {other:?}"),
    }
}

fn ok(count: u64, committed: stable_how, verf: u64) -> Result<WriteOk, String> {
    Ok(WriteOk { count: count as u32, committed, verf: verf.to_be_bytes() })
}

#[test]
fn sequential_8k_writes_coalesce_into_aligned_wsize_writes() {
    let mut wb = Wb::new(WritebackSettings::default());
    let mut sent = Vec::new();
    for i in 0..512u64 {
        assert_eq!(wb.write(&1, i * 8 * KIB, &pattern(i, 8 * KIB)), Admit::Accepted);
        while let Some(a) = wb.next_action() {
            let (id, off, data, stable) = expect_write(Some(a));
            assert_eq!(stable, stable_how::UNSTABLE);
            sent.push((off, data.len() as u64));
            wb.on_write_reply(id, ok(data.len() as u64, stable_how::UNSTABLE, 7));
        }
    }
    // One WRITE per complete MiB, sent as soon as the block was complete.
    assert_eq!(sent, (0..4).map(|i| (i * MIB, MIB)).collect::<Vec<_>>());
    wb.request_flush(&1);
    let id = expect_commit(wb.next_action());
    wb.on_commit_reply(id, Ok(7u64.to_be_bytes()));
    assert!(wb.is_clean(&1));
    assert_eq!(wb.total_bytes(), 0);
}

/// Lever & Honeyman: no write() may wait while the budget has room, however
/// many writes came before. Background writeback starts at the high
/// watermark and runs until the cache is back at the low one.
#[test]
fn writes_never_wait_under_budget_and_background_has_hysteresis() {
    let mut s = settings(MIB, 64 * MIB, 32 * MIB, 16 * MIB);
    s.start_writeback_of_full_chunks = false;
    let mut wb = Wb::new(s);
    let mut srv = Server::default();
    // Replies come back late: a queue the "network" answers 4 entries behind.
    let mut wire: VecDeque<Action<u64>> = VecDeque::new();
    let (mut was, mut on, mut off) = (false, 0, 0);
    // After every step: background mode only switches on at the high
    // watermark and off at the low one.
    let mut check = |wb: &Wb| {
        let now = wb.in_background();
        if now && !was {
            on += 1;
            assert!(wb.total_bytes() >= 32 * MIB);
        }
        if was && !now {
            off += 1;
            assert!(wb.total_bytes() <= 16 * MIB);
        }
        assert!(wb.total_bytes() <= 64 * MIB);
        was = now;
    };
    let mut ever_sent = false;
    let mut i = 0u64;
    while i < 10_000 {
        let before = wb.total_bytes();
        match wb.write(&1, i * 8 * KIB, &[i as u8; 8192]) {
            Admit::Accepted => i += 1,
            Admit::Wait => assert!(before + 8 * KIB > 64 * MIB, "waited with room in the budget"),
        }
        check(&wb);
        while let Some(a) = wb.next_action() {
            check(&wb);
            if !ever_sent {
                assert!(wb.total_bytes() >= 32 * MIB, "writeback before the high watermark");
                ever_sent = true;
            }
            wire.push_back(a);
        }
        while wire.len() > 4 {
            srv.serve(&mut wb, wire.pop_front().unwrap());
            check(&wb);
        }
    }
    assert!(on >= 2 && off >= 1, "background writeback started {on} and stopped {off} times");
}

#[test]
fn streaming_writeback_keeps_a_writer_running_without_waits() {
    let mut wb = Wb::new(settings(MIB, 64 * MIB, 32 * MIB, 16 * MIB));
    let mut srv = Server::default();
    let mut wire: VecDeque<Action<u64>> = VecDeque::new();
    for i in 0..10_000u64 {
        assert_eq!(wb.write(&1, i * 8 * KIB, &[i as u8; 8192]), Admit::Accepted, "write {i} waited");
        while let Some(a) = wb.next_action() {
            wire.push_back(a);
        }
        while wire.len() > 8 {
            srv.serve(&mut wb, wire.pop_front().unwrap());
        }
    }
    while let Some(a) = wire.pop_front() {
        srv.serve(&mut wb, a);
    }
    wb.request_flush(&1);
    drain(&mut wb, &mut srv);
    assert!(wb.is_clean(&1));
    assert_eq!(srv.stable[&1].len() as u64, 10_000 * 8 * KIB);
}

#[test]
fn waits_above_budget_and_resumes_after_replies() {
    let mut s = settings(MIB, 4 * MIB, 2 * MIB, MIB);
    s.max_writes_in_flight = 2;
    let mut wb = Wb::new(s);
    let mut srv = Server::default();
    let mut wire = Vec::new();
    let mut i = 0;
    while wb.write(&1, i * 64 * KIB, &[1; 65536]) == Admit::Accepted {
        wire.extend(std::iter::from_fn(|| wb.next_action()));
        i += 1;
    }
    assert_eq!(i, 64, "accepted exactly the budget");
    assert_eq!(wire.len(), 2, "two requests in flight at most");
    assert_eq!(wb.write(&2, 0, &[2; 10]), Admit::Wait, "the budget is client-wide");
    for a in wire {
        srv.serve(&mut wb, a);
    }
    drain(&mut wb, &mut srv);
    assert_eq!(wb.write(&1, i * 64 * KIB, &[1; 65536]), Admit::Accepted);
    // A single write bigger than the whole budget gets into an empty cache.
    let mut wb = Wb::new(settings(MIB, 4 * MIB, 2 * MIB, MIB));
    assert_eq!(wb.write(&1, 0, &vec![3; 10 << 20]), Admit::Accepted);
    assert_eq!(wb.write(&1, 0, &[3]), Admit::Wait);
}

#[test]
fn commit_verifier_change_resends_exactly_the_uncommitted_ranges() {
    let mut wb = Wb::new(settings(64 * KIB, MIB, MIB, MIB / 2));
    let ranges = [(0, 100), (70_000, 5_000), (200_000, 64 * KIB)];
    for (n, &(off, len)) in ranges.iter().enumerate() {
        wb.write(&9, off, &pattern(n as u64, len));
    }
    wb.request_flush(&9);
    let mut first = Vec::new();
    while let Some(a) = wb.next_action() {
        let (id, off, data, stable) = expect_write(Some(a));
        assert_eq!(stable, stable_how::UNSTABLE);
        first.push((off, data.clone()));
        wb.on_write_reply(id, ok(data.len() as u64, stable_how::UNSTABLE, 1));
        if wb.file_state(&9).dirty == 0 {
            break;
        }
    }
    let id = expect_commit(wb.next_action());
    wb.on_commit_reply(id, Ok(2u64.to_be_bytes())); // the server restarted
    assert_eq!(wb.file_state(&9).dirty, ranges.iter().map(|r| r.1).sum::<u64>());
    let mut again = Vec::new();
    let id = loop {
        match wb.next_action() {
            Some(Action::Write { id, offset, data, .. }) => {
                again.push((offset, data.clone()));
                wb.on_write_reply(id, ok(data.len() as u64, stable_how::UNSTABLE, 2));
            }
            other => break expect_commit(other),
        }
    };
    assert_eq!(again, first, "same ranges, same bytes");
    wb.on_commit_reply(id, Ok(2u64.to_be_bytes()));
    assert!(wb.is_clean(&9));
    assert_eq!(wb.take_error(&9), None);
}

#[test]
fn verifier_change_between_write_replies_resends_the_earlier_data() {
    let mut wb = Wb::new(settings(4 * KIB, MIB, MIB, MIB / 2));
    wb.write(&1, 0, &[1; 4096]);
    wb.write(&1, 4096, &[2; 4096]);
    let (a, ..) = expect_write(wb.next_action());
    let (b, ..) = expect_write(wb.next_action());
    wb.on_write_reply(a, ok(4096, stable_how::UNSTABLE, 1));
    wb.on_write_reply(b, ok(4096, stable_how::UNSTABLE, 2));
    assert_eq!(wb.file_state(&1).unstable, 4096);
    let (_, off, data, _) = expect_write(wb.next_action());
    assert_eq!((off, &data[..]), (0, &[1u8; 4096][..]));
}

#[test]
fn replies_out_of_order() {
    let mut wb = Wb::new(settings(4 * KIB, MIB, MIB, MIB / 2));
    let mut srv = Server::default();
    wb.write(&1, 0, &pattern(1, 40 * KIB));
    wb.request_flush(&1);
    let mut wire: Vec<_> = std::iter::from_fn(|| wb.next_action()).collect();
    assert_eq!(wire.len(), 10);
    while let Some(a) = wire.pop() {
        srv.serve(&mut wb, a);
    }
    drain(&mut wb, &mut srv);
    assert!(wb.is_clean(&1));
    assert_eq!(srv.stable[&1], pattern(1, 40 * KIB));
}

#[test]
fn short_write_sends_the_rest() {
    let mut wb = Wb::new(settings(64 * KIB, MIB, MIB, MIB / 2));
    let data = pattern(5, 10_000);
    wb.write(&1, 1000, &data);
    wb.request_flush(&1);
    let (id, off, _, stable) = expect_write(wb.next_action());
    assert_eq!((off, stable), (1000, stable_how::FILE_SYNC));
    wb.on_write_reply(id, ok(3000, stable_how::FILE_SYNC, 1));
    let (id, off, rest, _) = expect_write(wb.next_action());
    assert_eq!((off, &rest[..]), (4000, &data[3000..]));
    wb.on_write_reply(id, ok(7000, stable_how::FILE_SYNC, 1));
    assert!(wb.is_clean(&1));
}

#[test]
fn overwrite_while_in_flight_is_sent_after_the_reply() {
    let mut wb = Wb::new(settings(4 * KIB, MIB, MIB, MIB / 2));
    wb.write(&1, 0, &[1; 4096]);
    let (id, ..) = expect_write(wb.next_action());
    wb.write(&1, 100, &[2; 10]);
    wb.request_flush(&1);
    assert_eq!(wb.next_action(), None, "the rewrite must not race the WRITE on the wire");
    wb.on_write_reply(id, ok(4096, stable_how::UNSTABLE, 1));
    let (id, off, data, _) = expect_write(wb.next_action());
    assert_eq!((off, &data[..]), (100, &[2u8; 10][..]));
    wb.on_write_reply(id, ok(10, stable_how::UNSTABLE, 1));
    let c = expect_commit(wb.next_action());
    wb.on_commit_reply(c, Ok(1u64.to_be_bytes()));
    assert!(wb.is_clean(&1));
}

#[test]
fn file_sync_reply_releases_at_once() {
    let mut wb = Wb::new(WritebackSettings::default());
    wb.write(&1, 0, b"hello");
    assert_eq!(wb.next_action(), None, "a partial block waits for a flush");
    wb.request_flush(&1);
    let (id, _, _, stable) = expect_write(wb.next_action());
    assert_eq!(stable, stable_how::FILE_SYNC, "a lone extent needs no COMMIT");
    wb.on_write_reply(id, ok(5, stable_how::FILE_SYNC, 0));
    assert!(wb.is_clean(&1));
    assert_eq!((wb.total_bytes(), wb.in_flight()), (0, 0));
    assert_eq!(wb.next_action(), None);
}

#[test]
fn errors_are_deferred_to_take_error() {
    let mut wb = Wb::new(settings(4 * KIB, MIB, MIB, MIB / 2));
    wb.write(&1, 0, &[1; 8192]);
    wb.request_flush(&1);
    let (a, ..) = expect_write(wb.next_action());
    let (b, ..) = expect_write(wb.next_action());
    wb.on_write_reply(a, Err("NFS3ERR_NOSPC".into()));
    wb.on_write_reply(b, Err("NFS3ERR_IO".into()));
    assert!(wb.is_clean(&1));
    assert!(wb.file_state(&1).error_pending);
    assert_eq!(wb.take_error(&1), Some(DeferredError::Failed("NFS3ERR_NOSPC".into())));
    assert_eq!(wb.take_error(&1), None);
    // A failed COMMIT drops what it covered; a zero-byte WRITE is an error too.
    wb.write(&2, 0, &[1; 8192]);
    wb.request_flush(&2);
    let (a, ..) = expect_write(wb.next_action());
    let (b, ..) = expect_write(wb.next_action());
    wb.on_write_reply(a, ok(4096, stable_how::UNSTABLE, 1));
    wb.on_write_reply(b, ok(0, stable_how::UNSTABLE, 1));
    let c = expect_commit(wb.next_action());
    wb.on_commit_reply(c, Err("NFS3ERR_STALE".into()));
    assert!(wb.is_clean(&2));
    assert_eq!(wb.take_error(&2), Some(DeferredError::ZeroCount { offset: 4096 }));
    assert_eq!(wb.total_bytes(), 0);
}

#[test]
fn forget_drops_everything_and_ignores_late_replies() {
    let mut wb = Wb::new(settings(4 * KIB, MIB, MIB, MIB / 2));
    wb.write(&1, 0, &[1; 12288]);
    let (id, ..) = expect_write(wb.next_action());
    wb.forget(&1);
    assert_eq!(wb.total_bytes(), 0);
    assert_eq!(wb.in_flight(), 1, "the request is still on the wire");
    wb.on_write_reply(id, ok(4096, stable_how::UNSTABLE, 1));
    assert_eq!((wb.total_bytes(), wb.in_flight()), (0, 0));
    assert!(wb.is_clean(&1));
    assert_eq!(wb.next_action(), None);
}

#[test]
fn overlay_shows_cached_bytes_in_every_state() {
    let mut wb = Wb::new(settings(4 * KIB, MIB, MIB, MIB / 2));
    wb.write(&1, 0, &[1; 4096]); // will be unstable
    wb.write(&1, 4096, &[2; 4096]); // will be in flight
    let (a, ..) = expect_write(wb.next_action());
    let (_b, ..) = expect_write(wb.next_action());
    wb.on_write_reply(a, ok(4096, stable_how::UNSTABLE, 1));
    wb.write(&1, 10_000, &[3; 100]); // dirty
    let mut buf = vec![0u8; 12_000];
    assert_eq!(wb.overlay(&1, 100, &mut buf[..11_000]), 3996 + 4096 + 100);
    assert_eq!(&buf[..3996], &[1; 3996][..]);
    assert_eq!(&buf[3996..8092], &[2; 4096][..]);
    assert_eq!(&buf[8092..9900], &[0; 1808][..]);
    assert_eq!(&buf[9900..10_000], &[3; 100][..]);
    assert_eq!(wb.cached_end(&1), Some(10_100));
    assert_eq!(wb.cached_end(&2), None);
    assert_eq!(wb.overlay(&1, 20_000, &mut buf), 0);
}

//! The public vocabulary of the write-behind cache: settings, requests and replies.

use bytes::Bytes;
use proto::nfs3::stable_how;

/// Tuning of the write-behind cache.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WritebackSettings {
    /// Largest WRITE sent, and the block size WRITEs are aligned to. Default 1 MiB.
    pub wsize: u64,
    /// Hard limit on cached bytes not yet stable on the server (dirty + in
    /// flight + acknowledged UNSTABLE awaiting COMMIT); `write` only waits
    /// above it. Default 256 MiB.
    pub dirty_budget: u64,
    /// Cached bytes at which background writeback (and COMMITs to free memory)
    /// starts. Clamped to `dirty_budget`. Default 64 MiB.
    pub high_watermark: u64,
    /// Cached bytes at which background writeback stops. Clamped to
    /// `high_watermark`. Default 32 MiB.
    pub low_watermark: u64,
    /// WRITE and COMMIT requests in flight for the whole client (at least 1). Default 16.
    pub max_writes_in_flight: usize,
    /// Send each complete, aligned wsize block as soon as it is complete, so
    /// the network works while the application writes (still bounded by the
    /// budget, never by a request count). Default true.
    pub start_writeback_of_full_chunks: bool,
}

pub(super) const MIB: u64 = 1 << 20;

impl Default for WritebackSettings {
    fn default() -> Self {
        WritebackSettings {
            wsize: MIB,
            dirty_budget: 256 * MIB,
            high_watermark: 64 * MIB,
            low_watermark: 32 * MIB,
            max_writes_in_flight: 16,
            start_writeback_of_full_chunks: true,
        }
    }
}

impl WritebackSettings {
    /// The settings made consistent (non-zero sizes, low ≤ high ≤ budget).
    pub fn normalized(&self) -> Self {
        let mut s = self.clone();
        s.wsize = s.wsize.max(1);
        s.max_writes_in_flight = s.max_writes_in_flight.max(1);
        s.high_watermark = s.high_watermark.min(s.dirty_budget);
        s.low_watermark = s.low_watermark.min(s.high_watermark);
        s
    }
}

/// Identifies a WRITE or COMMIT handed out by [`Writeback::next_action`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReqId(pub u64);

/// Answer to [`Writeback::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// The data is cached; the application may continue.
    Accepted,
    /// The budget is full: nothing was cached. Retry after a reply has been
    /// fed back (keep sending `next_action`s meanwhile; there is always
    /// something to send or a request in flight while the cache is non-empty).
    Wait,
}

/// A request to send.
#[derive(Debug, Clone, PartialEq)]
pub enum Action<K> {
    /// WRITE `data` at `offset` with the given stability.
    Write { id: ReqId, file: K, offset: u64, data: Bytes, stable: stable_how },
    /// COMMIT the whole file (offset 0, count 0).
    Commit { id: ReqId, file: K },
}

/// The parts of a successful WRITE reply the cache needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOk {
    pub count: u32,
    pub committed: stable_how,
    pub verf: [u8; 8],
}

/// An error reported at fsync/close for data written earlier.
///
/// The data of a failed WRITE or COMMIT is dropped, as Linux does: retrying a
/// write the server refused (ENOSPC, EDQUOT, ESTALE, EIO) would pin it in the
/// cache forever and block every other writer on the budget. Transport
/// failures are the RPC layer's to retry before they get here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeferredError<E> {
    /// The server answered the WRITE or COMMIT with this error.
    Failed(E),
    /// The server accepted a WRITE at `offset` but wrote nothing; resending
    /// would loop, so it is treated as an I/O error.
    ZeroCount { offset: u64 },
}

/// What the cache holds for one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStatus {
    pub dirty: u64,
    pub in_flight: u64,
    pub unstable: u64,
    pub writes_in_flight: usize,
    pub commit_in_flight: bool,
    pub flushing: bool,
    pub error_pending: bool,
}

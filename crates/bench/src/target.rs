//! What a workload runs against. A target is either an NFS server reached
//! through the nfsx client (`nfs://host[:port]/export`) or a directory on
//! any mounted file system, used with plain POSIX system calls. Workloads
//! see only these traits, so every workload runs unchanged on both and the
//! numbers compare like with like.
//!
//! The API is blocking on purpose: a workload "thread" is an OS thread, as in
//! the papers' tools, and the NFS implementation drives its async client from
//! that thread. Paths are relative to the target's root, `/`-separated.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, thiserror::Error)]
pub enum BenchError {
    /// A file-system operation failed; `op` and `path` say which.
    #[error("{op} {path}: {msg}")]
    Op { op: &'static str, path: String, msg: String },
    /// The target could not be reached or set up.
    #[error("{0}")]
    Target(String),
    /// A parameter makes no sense.
    #[error("{0}")]
    Invalid(String),
    /// A wait ran past its limit.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The target cannot do this at all (a server-side copy over NFSv3,
    /// a clone on a file system without reflinks); the message says why.
    /// Workloads that measure an optional feature report it instead of
    /// failing the run.
    #[error("not supported: {0}")]
    Unsupported(String),
}

pub type Result<T> = std::result::Result<T, BenchError>;

impl BenchError {
    pub fn op(op: &'static str, path: &str, msg: impl std::fmt::Display) -> BenchError {
        BenchError::Op { op, path: path.to_string(), msg: msg.to_string() }
    }
}

/// How to open a file, like the flags of open(2): the client's own type, so
/// `nfs://` targets take it as it is.
pub use client::OpenOptions;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Other,
}

#[derive(Debug, Clone)]
pub struct FileStat {
    pub kind: FileKind,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
}

#[derive(Debug, Clone)]
pub struct DirEntry {
    pub name: String,
    pub kind: FileKind,
}

/// An open file.
pub trait BenchFile: Send {
    /// Writes all of `data` at `offset`. With write-behind this returns once
    /// the data is in the client's cache.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()>;
    /// Reads up to `buf.len()` bytes at `offset`; 0 means end of file.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize>;
    /// fsync(2): returns when everything written is on stable storage.
    fn flush(&mut self) -> Result<()>;
    /// close(2); on NFS this flushes (close-to-open).
    fn close(self: Box<Self>) -> Result<()>;
    /// fcntl(F_SETLKW) of the whole file: a read (shared) or write lock,
    /// waiting while another holds a conflicting one.
    fn lock_whole(&mut self, write: bool) -> Result<()>;
    /// Releases the lock `lock_whole` took.
    fn unlock_whole(&mut self) -> Result<()>;
}

/// Counters for one kind of operation as a client saw it (one row of the
/// 2015 paper's Table 1 / Linux `mountstats`). Cumulative since connect.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OpStat {
    /// Procedure name, e.g. "WRITE".
    pub op: String,
    pub count: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub retransmissions: u64,
    /// Sums in microseconds: waiting to be sent, on the wire, and in total.
    pub queue_us: u64,
    pub rtt_us: u64,
    pub execute_us: u64,
}

/// One client's view of a target.
pub trait BenchFs: Send + Sync {
    fn open(&self, path: &str, how: OpenOptions) -> Result<Box<dyn BenchFile>>;
    /// lstat(2).
    fn stat(&self, path: &str) -> Result<FileStat>;
    /// Every entry but `.` and `..`.
    fn readdir(&self, path: &str) -> Result<Vec<DirEntry>>;
    fn mkdir(&self, path: &str) -> Result<()>;
    /// unlink(2).
    fn remove(&self, path: &str) -> Result<()>;
    fn rmdir(&self, path: &str) -> Result<()>;
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    /// Per-operation counters so far, if this target can tell (the nfsx
    /// client always; a directory on a Linux NFS mount via mountstats).
    fn op_stats(&self) -> Vec<OpStat>;
    /// Creates (or truncates) `path` with `data` as its contents and
    /// closes it, as `std::fs::write`; a client may do it in fewer calls
    /// than an open, writes and a close (nfsx's NFSv4.1 client: one).
    fn write_whole(&self, path: &str, data: &[u8]) -> Result<()> {
        let mut f = self.open(path, OpenOptions::create())?;
        if !data.is_empty() {
            f.write_at(0, data)?;
        }
        f.close()
    }
    /// The protocol spoken, when the target is a server ("NFSv3",
    /// "NFSv4.1"): a URL without a version is negotiated.
    fn protocol(&self) -> Option<String> {
        None
    }
    /// Copies `len` bytes of `from` at `from_off` into the existing file
    /// `to` at `to_off` without the data passing through this client (an
    /// NFSv4.2 COPY; copy_file_range(2) on a directory target), and
    /// returns once what it copied is on stable storage, as after an
    /// fsync; the bytes copied, fewer only where `from` ends.
    /// [`BenchError::Unsupported`] where the target cannot.
    fn copy_range(&self, from: &str, from_off: u64, to: &str, to_off: u64, len: u64) -> Result<u64> {
        let _ = (from, from_off, to, to_off, len);
        Err(BenchError::Unsupported("this target has no server-side copy".into()))
    }
    /// Makes `len` bytes of the existing file `to` at `to_off` share the
    /// blocks of `from` at `from_off` (an NFSv4.2 CLONE; FICLONE on a
    /// directory target); `len` 0 clones to the end of `from`.
    /// [`BenchError::Unsupported`] where the target or its file system
    /// cannot.
    fn clone_range(&self, from: &str, from_off: u64, to: &str, to_off: u64, len: u64) -> Result<()> {
        let _ = (from, from_off, to, to_off, len);
        Err(BenchError::Unsupported("this target cannot clone files".into()))
    }
}

/// Something that makes clients: each `connect` is an independent client
/// with its own connections and caches (for multi-client runs).
pub trait Target: Send + Sync {
    /// As given on the command line.
    fn name(&self) -> &str;
    fn connect(&self) -> Result<Arc<dyn BenchFs>>;
    /// The `index`th client of a run (0-based): the same as `connect`
    /// except for a target with several servers, which picks one by it.
    fn connect_client(&self, index: usize) -> Result<Arc<dyn BenchFs>> {
        let _ = index;
        self.connect()
    }
    /// How many threads will call the clients of the next run, all
    /// clients together: a client may serve a lone caller differently.
    fn set_callers(&self, callers: usize) {
        let _ = callers;
    }
    /// Adds `rtt` of round-trip delay to every later connection (half each
    /// way, or all of it towards the server when `one_way`), through the
    /// built-in delay proxy. Only network targets can.
    fn set_delay(&self, rtt: std::time::Duration, one_way: bool) -> Result<()> {
        let _ = one_way;
        if rtt.is_zero() {
            return Ok(());
        }
        Err(BenchError::Invalid(format!("{}: network delay needs an nfs:// target", self.name())))
    }
}

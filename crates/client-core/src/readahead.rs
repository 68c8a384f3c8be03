//! Adaptive readahead and the client's cache of file data.
//!
//! Chen et al. (2014) measured aggressive readahead wasting 80% of the
//! bandwidth on random reads. So the window only opens after consecutive
//! sequential reads, doubles while they continue, and collapses to nothing at
//! the first read that does not continue the previous one: a random reader
//! never triggers a prefetch.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use bytes::{Bytes, BytesMut};

use crate::attrcache::Validator;

const KIB: u64 = 1024;

/// Tuning of per-open-file readahead.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadaheadSettings {
    /// Window opened when a sequential stream is detected. Default 128 KiB.
    pub initial_window: u64,
    /// Largest window; it doubles on each sequential read up to this. 0
    /// disables readahead. Default 8 MiB.
    pub max_window: u64,
    /// Length of a run of reads, each continuing the previous one, at which
    /// readahead (re)starts. Default 2: the second read in a row (1 or 0: at
    /// every read, even random ones).
    pub sequential_reads_to_start: u32,
    /// Once a stream runs, a read that starts up to this far before the
    /// previous one, or anywhere in the data already prefetched, still
    /// continues it: a reader with several reads in flight (the kernel's
    /// own readahead through FUSE, a thread pool) delivers them out of
    /// order, and that must not reset the window (Gronvall: sequential
    /// detection has to tolerate reordering). Default 1 MiB.
    pub reorder_window: u64,
}

impl Default for ReadaheadSettings {
    fn default() -> Self {
        ReadaheadSettings {
            initial_window: 128 * KIB,
            max_window: 8192 * KIB,
            sequential_reads_to_start: 2,
            reorder_window: 1024 * KIB,
        }
    }
}

/// Readahead state of one open file.
#[derive(Debug, Clone)]
pub struct Readahead {
    s: ReadaheadSettings,
    /// Previous read as [start, end).
    last: Option<(u64, u64)>,
    streak: u32,
    window: u64,
    /// End of the data already asked for (read or prefetched).
    prefetched_to: u64,
}

impl Readahead {
    pub fn new(settings: ReadaheadSettings) -> Self {
        Readahead { s: settings, last: None, streak: 0, window: 0, prefetched_to: 0 }
    }

    /// Current window in bytes (0: no readahead).
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The application read `[offset, offset + len)`. Returns the range to
    /// prefetch beyond it and beyond what was already prefetched, if any; the
    /// caller clamps it to the file size and splits it into rsize READs.
    /// Prefetches are issued when less than half a window remains ahead of
    /// the reader, so each one is at least half a window (few, large READs).
    pub fn on_read(&mut self, offset: u64, len: u64) -> Option<(u64, u64)> {
        let end = offset.saturating_add(len);
        // A read continues the stream if it starts where the previous one
        // ended, or re-reads part of it (unaligned record reads do); once
        // a stream runs, also if it arrived out of order.
        let in_order = self.last.is_some_and(|(s, e)| offset >= s && offset <= e);
        let reordered = self.window > 0
            && self.last.is_some_and(|(s, _)| {
                offset.saturating_add(self.s.reorder_window) >= s && offset <= self.prefetched_to
            });
        if !in_order && !reordered {
            // This read may be the first of a new stream.
            self.streak = 0;
            self.window = 0;
            self.prefetched_to = 0;
            self.last = None;
        }
        self.streak = self.streak.saturating_add(1);
        if self.streak >= self.s.sequential_reads_to_start && self.s.max_window > 0 {
            // Never narrower than two of the reader's own reads: a window
            // smaller than a read prefetches only its head, and the rest
            // of the next read goes out as a READ of its own (a reader of
            // 1 MiB records made three extra READs while a 128 KiB window
            // grew), as Linux sizes its first window from the request.
            let floor = len.saturating_mul(2).min(self.s.max_window);
            self.window = match self.window {
                0 => self.s.initial_window.clamp(1, self.s.max_window).max(floor),
                w => w.saturating_mul(2).min(self.s.max_window).max(floor),
            };
        }
        // The stream's front is the furthest read so far: a late read
        // behind it does not move it back.
        let (start, end) = match self.last {
            Some((s, e)) if reordered && !in_order => (s.max(offset), e.max(end)),
            _ => (offset, end),
        };
        self.last = Some((start, end));
        self.prefetched_to = self.prefetched_to.max(end);
        if self.window == 0 || self.prefetched_to - end >= self.window / 2 {
            return None;
        }
        let target = end.saturating_add(self.window);
        let start = self.prefetched_to;
        self.prefetched_to = target;
        Some((start, target - start))
    }
}

/// Tuning of the data cache.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadCacheSettings {
    /// Bytes of file data kept, over all files; least recently used blocks
    /// go first. Default 256 MiB.
    pub max_bytes: u64,
    /// After a lock is granted, keep a file's data when its attributes
    /// (fetched with the lock) did not change, if the server's times are
    /// fine enough to change at every change (its `time_delta` at most a
    /// microsecond, as the Linux client decides); false drops the data at
    /// every lock. Default true.
    pub keep_after_lock: bool,
}

impl Default for ReadCacheSettings {
    fn default() -> Self {
        ReadCacheSettings { max_bytes: 256 * 1024 * KIB, keep_after_lock: true }
    }
}

struct Block {
    data: Bytes,
    used: u64,
}

#[derive(Default)]
struct FileData {
    blocks: BTreeMap<u64, Block>,
    validator: Option<Validator>,
}

/// File data fetched by READs (requested or prefetched), bounded by bytes
/// with LRU eviction across files, and dropped when the file changes.
pub struct ReadCache<K> {
    s: ReadCacheSettings,
    files: HashMap<K, FileData>,
    /// use tick -> (file, block offset)
    lru: BTreeMap<u64, (K, u64)>,
    bytes: u64,
    tick: u64,
}

impl<K> std::fmt::Debug for ReadCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadCache").field("files", &self.files.len()).field("bytes", &self.bytes).finish()
    }
}

impl<K: Hash + Eq + Clone> ReadCache<K> {
    pub fn new(settings: ReadCacheSettings) -> Self {
        ReadCache { s: settings, files: HashMap::new(), lru: BTreeMap::new(), bytes: 0, tick: 0 }
    }

    /// Bytes cached.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Tells the cache the file's current attributes (GETATTR, or post-op
    /// attributes of any reply). If they differ from the ones its data was
    /// read under, the data is dropped; returns whether that happened.
    pub fn revalidate(&mut self, file: &K, current: &Validator) -> bool {
        let Some(f) = self.files.get(file) else { return false };
        let changed = f.validator.as_ref() != Some(current);
        if changed {
            self.drop_blocks(file);
        }
        changed
    }

    /// Caches `data` read at `offset` by a READ whose reply carried
    /// attributes `read_under`, replacing cached bytes of the range. Data
    /// cached under other attributes is dropped first: the file changed.
    pub fn insert(&mut self, file: &K, offset: u64, data: Bytes, read_under: &Validator) {
        if data.is_empty() || data.len() as u64 > self.s.max_bytes {
            return;
        }
        self.revalidate(file, read_under);
        let end = offset + data.len() as u64;
        let f = self.files.entry(file.clone()).or_default();
        f.validator = Some(read_under.clone());
        // Cut overlapped blocks down to the parts outside the new range.
        let first = f.blocks.range(..offset).next_back().map_or(offset, |(&s, _)| s);
        let hit: Vec<u64> = f.blocks.range(first..end).map(|(&s, _)| s).collect();
        for s in hit {
            let Some(b) = f.blocks.get(&s) else { continue };
            let e = s + b.data.len() as u64;
            if e <= offset {
                continue;
            }
            let b = f.blocks.remove(&s).expect("listed");
            self.lru.remove(&b.used);
            self.bytes -= b.data.len() as u64;
            let mut keep = Vec::new();
            if s < offset {
                keep.push((s, b.data.slice(..(offset - s) as usize)));
            }
            if e > end {
                keep.push((end, b.data.slice((end - s) as usize..)));
            }
            for (o, d) in keep {
                self.tick += 1;
                self.bytes += d.len() as u64;
                self.lru.insert(self.tick, (file.clone(), o));
                f.blocks.insert(o, Block { data: d, used: self.tick });
            }
        }
        self.tick += 1;
        self.bytes += data.len() as u64;
        self.lru.insert(self.tick, (file.clone(), offset));
        f.blocks.insert(offset, Block { data, used: self.tick });
        while self.bytes > self.s.max_bytes {
            let Some((_, (k, o))) = self.lru.pop_first() else { break };
            if let Some(f) = self.files.get_mut(&k) {
                if let Some(b) = f.blocks.remove(&o) {
                    self.bytes -= b.data.len() as u64;
                }
                // A file without data needs no validator: the next insert brings one.
                if f.blocks.is_empty() {
                    self.files.remove(&k);
                }
            }
        }
    }

    /// The bytes `[offset, offset + len)` if all of them are cached (zero-copy
    /// when one block holds them). The caller clamps `len` at end of file.
    pub fn lookup(&mut self, file: &K, offset: u64, len: u64) -> Option<Bytes> {
        let end = offset.checked_add(len)?;
        let f = self.files.get_mut(file)?;
        let mut pos = offset;
        let mut parts = Vec::new();
        let first = f.blocks.range(..=offset).next_back().map(|(&s, _)| s)?;
        for (&s, b) in f.blocks.range(first..end) {
            let e = s + b.data.len() as u64;
            if s > pos || e <= pos {
                break;
            }
            parts.push((s, (pos - s) as usize, (e.min(end) - s) as usize));
            pos = e.min(end);
            if pos == end {
                break;
            }
        }
        if pos < end || len == 0 {
            return None;
        }
        for &(s, ..) in &parts {
            let b = f.blocks.get_mut(&s).expect("listed");
            self.lru.remove(&b.used);
            self.tick += 1;
            b.used = self.tick;
            self.lru.insert(self.tick, (file.clone(), s));
        }
        if let [(s, a, b)] = parts[..] {
            let data = &f.blocks.get(&s)?.data;
            return (a <= b && b <= data.len()).then(|| data.slice(a..b));
        }
        let mut out = BytesMut::with_capacity(len as usize);
        for (s, a, b) in parts {
            out.extend_from_slice(f.blocks.get(&s)?.data.get(a..b)?);
        }
        Some(out.freeze())
    }

    /// The parts of `[offset, offset + len)` not cached (what to READ).
    pub fn missing(&self, file: &K, offset: u64, len: u64) -> Vec<(u64, u64)> {
        let end = offset.saturating_add(len);
        let Some(f) = self.files.get(file) else { return vec![(offset, len)] };
        let mut out = Vec::new();
        let mut pos = offset;
        let first = f.blocks.range(..offset).next_back().map_or(offset, |(&s, _)| s);
        for (&s, b) in f.blocks.range(first..end) {
            let e = s + b.data.len() as u64;
            if e <= pos {
                continue;
            }
            if s > pos {
                out.push((pos, s - pos));
            }
            pos = e;
            if pos >= end {
                break;
            }
        }
        if pos < end {
            out.push((pos, end - pos));
        }
        out
    }

    /// Drops the cached data of `file`: it changed, was written to through
    /// this client (the write-behind cache holds the newer bytes), or was removed.
    pub fn invalidate(&mut self, file: &K) {
        self.drop_blocks(file);
    }

    fn drop_blocks(&mut self, file: &K) {
        if let Some(f) = self.files.remove(file) {
            for (_, b) in f.blocks {
                self.lru.remove(&b.used);
                self.bytes -= b.data.len() as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests;

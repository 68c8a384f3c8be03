//! The id map on disk: an append-only journal of fixed-format records.
//!
//! Layout: a 32-byte header (magic, root inode, root generation, fsid),
//! then records
//!
//! ```text
//! op:u8 reserved:u8 name_len:u16 id:u64 generation:u64 parent:u64 name checksum:u32
//! ```
//!
//! little-endian, the checksum being FNV-1a over the record before it. For
//! unlink and forget records the generation is that of the object removed
//! (0, as journals written before it was recorded have, matches any), so
//! that replay, like the live map, leaves alone an id already reused by a
//! newer object. A
//! crash can leave a torn last record; replay stops at the first record
//! that is short or fails its checksum, which loses at most the records
//! not yet fsync'd. On open the journal is replayed and rewritten compactly
//! (temp file, fsync, rename, fsync of the directory); while running it is
//! rewritten the same way once it holds many more records than live ids.
//!
//! Records are appended to an in-memory buffer by whoever changes the map,
//! under the map's lock, so the buffer order is the map's order; `flush`
//! writes the buffer out under the file lock (so concurrent flushers cannot
//! reorder) and fsyncs per the configured batch size or when asked to.
//! Lock order: file → map → buffer.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use super::ids::{Change, IdMap};
use crate::VfsResult;

const MAGIC: &[u8; 8] = b"NFSXIDJ1";
const HEADER_LEN: usize = 32;
const RECORD_FIXED: usize = 28;
const NAME: &str = "ids.journal";
const TMP: &str = "ids.journal.tmp";
/// Bound on names read back from disk (any real name is at most 255).
const MAX_STORED_NAME: usize = 4096;

const OP_ADD: u8 = 1;
const OP_UNLINK: u8 = 2;
const OP_FORGET: u8 = 3;
/// Written last when the journal is closed on a clean stop: everything the
/// map learnt during the run is in the journal. Its absence tells the next
/// run that the tail may have been lost (see [`super::recover`]).
const OP_CLEAN: u8 = 4;

/// What a journal belongs to; a journal written for another tree is not
/// replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) root: u64,
    pub(crate) root_generation: u64,
    pub(crate) fsid: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(MAGIC);
        h[8..16].copy_from_slice(&self.root.to_le_bytes());
        h[16..24].copy_from_slice(&self.root_generation.to_le_bytes());
        h[24..32].copy_from_slice(&self.fsid.to_le_bytes());
        h
    }

    fn decode(b: &[u8]) -> Option<Header> {
        if b.len() < HEADER_LEN || &b[..8] != MAGIC {
            return None;
        }
        Some(Header { root: le64(&b[8..16]), root_generation: le64(&b[16..24]), fsid: le64(&b[24..32]) })
    }
}

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn fnv1a(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in data {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

pub(crate) fn encode(c: &Change, out: &mut Vec<u8>) {
    let (op, id, generation, parent, name): (u8, u64, u64, u64, &[u8]) = match c {
        Change::Add { id, generation, parent, name } => (OP_ADD, *id, *generation, *parent, name),
        Change::Unlink { id, generation, parent, name } => (OP_UNLINK, *id, *generation, *parent, name),
        Change::Forget { id, generation } => (OP_FORGET, *id, *generation, 0, b""),
    };
    encode_record(op, id, generation, parent, name, out);
}

fn encode_record(op: u8, id: u64, generation: u64, parent: u64, name: &[u8], out: &mut Vec<u8>) {
    // Names are checked to be at most NAME_MAX long before they get here.
    let len = name.len().min(usize::from(u16::MAX));
    let start = out.len();
    out.push(op);
    out.push(0);
    out.extend_from_slice(&(len as u16).to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&parent.to_le_bytes());
    out.extend_from_slice(&name[..len]);
    let sum = fnv1a(&out[start..]);
    out.extend_from_slice(&sum.to_le_bytes());
}

/// Decodes the record at the start of `b`: the change (None for the
/// clean-stop marker) and its length, or None for a torn or corrupt record
/// (end of the usable journal).
pub(crate) fn decode(b: &[u8]) -> Option<(Option<Change>, usize)> {
    if b.len() < RECORD_FIXED + 4 {
        return None;
    }
    let len = usize::from(u16::from_le_bytes([b[2], b[3]]));
    let total = RECORD_FIXED + len + 4;
    if len > MAX_STORED_NAME || b.len() < total {
        return None;
    }
    let body = &b[..RECORD_FIXED + len];
    let sum = u32::from_le_bytes([b[total - 4], b[total - 3], b[total - 2], b[total - 1]]);
    if fnv1a(body) != sum {
        return None;
    }
    let (id, generation, parent) = (le64(&b[4..12]), le64(&b[12..20]), le64(&b[20..28]));
    let name = Bytes::copy_from_slice(&b[RECORD_FIXED..RECORD_FIXED + len]);
    let name_ok = crate::names::check_entry_name(&name, MAX_STORED_NAME).is_ok();
    let c = match b[0] {
        OP_ADD if name_ok => Change::Add { id, generation, parent, name },
        OP_UNLINK if name_ok => Change::Unlink { id, generation, parent, name },
        OP_FORGET => Change::Forget { id, generation },
        OP_CLEAN => return Some((None, total)),
        _ => return None,
    };
    Some((Some(c), total))
}

struct FileState {
    file: File,
    /// Bytes known to be fully written; a failed append is cut back to it.
    len: u64,
    records: u64,
    unsynced: u64,
}

pub(crate) struct Journal {
    dir: PathBuf,
    header: Header,
    sync_every: u64,
    compact_min: u64,
    file: Mutex<FileState>,
    buffer: Mutex<(Vec<u8>, u64)>,
    /// Flushes of the journal, and the changes that asked for one. Callers
    /// queue on `file` while a flush runs; the next one writes and flushes
    /// everything queued meanwhile, and the rest find it durable already
    /// (group commit).
    pub(crate) counts: super::flush::FlushCounts,
}

/// A journal read back: what it belongs to, the map it describes, and
/// whether the run that wrote it closed it cleanly (its last record is the
/// clean-stop marker).
pub(crate) struct Loaded {
    pub(crate) header: Header,
    pub(crate) map: IdMap,
    pub(crate) clean: bool,
}

/// Reads the journal in `dir`, or None if there is none (or it belongs to
/// another tree).
pub(crate) fn load(dir: &Path, expect_root: u64, expect_gen: u64, max_locs: usize) -> VfsResult<Option<Loaded>> {
    let mut data = Vec::new();
    match File::open(dir.join(NAME)) {
        Ok(mut f) => {
            f.read_to_end(&mut data)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let Some(h) = Header::decode(&data) else {
        tracing::warn!(dir = %dir.display(), "id journal has no valid header; starting afresh");
        return Ok(None);
    };
    if h.root != expect_root || (h.root_generation != expect_gen && expect_gen != 0) {
        tracing::warn!(dir = %dir.display(), "id journal belongs to another export root; starting afresh");
        return Ok(None);
    }
    let mut map = IdMap::new(h.root, max_locs);
    let mut at = HEADER_LEN;
    let mut n = 0u64;
    let mut clean = false;
    while let Some((c, len)) = decode(&data[at..]) {
        clean = c.is_none();
        if let Some(c) = c {
            map.apply(&c);
        }
        at += len;
        n += 1;
    }
    if at != data.len() {
        clean = false;
        tracing::warn!(dir = %dir.display(), records = n, dropped_bytes = data.len() - at, "id journal ends in a torn record");
    }
    Ok(Some(Loaded { header: h, map, clean }))
}

fn sync_dir(dir: &Path) -> VfsResult<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// Writes `map` as a fresh journal (temp file + rename) and returns it
/// opened for appending, with the number of records written.
fn rewrite(dir: &Path, header: &Header, map: &IdMap) -> VfsResult<(File, u64, u64)> {
    let tmp = dir.join(TMP);
    let mut out = Vec::with_capacity(HEADER_LEN + map.len() * 48);
    out.extend_from_slice(&header.encode());
    let mut records = 0;
    for (&id, e) in map.iter() {
        // Last-first, so replay (which puts each added name in front)
        // rebuilds the same order of names.
        for l in e.locs.iter().rev() {
            encode(&Change::Add { id, generation: e.generation, parent: l.parent, name: l.name.clone() }, &mut out);
            records += 1;
        }
    }
    {
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        f.write_all(&out)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(NAME))?;
    sync_dir(dir)?;
    let f = OpenOptions::new().append(true).open(dir.join(NAME))?;
    Ok((f, out.len() as u64, records))
}

impl Journal {
    /// Starts a journal holding exactly `map` (compacting whatever was there).
    pub(crate) fn create(
        dir: &Path,
        header: Header,
        map: &IdMap,
        sync_every: u64,
        compact_min: u64,
    ) -> VfsResult<Journal> {
        let (file, len, records) = rewrite(dir, &header, map)?;
        Ok(Journal {
            dir: dir.to_path_buf(),
            header,
            sync_every,
            compact_min,
            file: Mutex::new(FileState { file, len, records, unsynced: 0 }),
            buffer: Mutex::new((Vec::new(), 0)),
            counts: Default::default(),
        })
    }

    /// Queues a change; called with the map's write lock held, right after
    /// applying the change to the map.
    pub(crate) fn push(&self, c: &Change) {
        let mut b = self.buffer.lock();
        encode(c, &mut b.0);
        b.1 += 1;
    }

    /// Writes queued changes to the file; fsyncs when `sync` is set or the
    /// batch is full. Called without the map lock (it may take it to
    /// compact).
    pub(crate) fn flush(&self, sync: bool, map: &RwLock<IdMap>) -> VfsResult<()> {
        let mut f = self.file.lock();
        let (buf, n) = std::mem::take(&mut *self.buffer.lock());
        if !buf.is_empty() {
            if let Err(e) = f.file.write_all(&buf) {
                // Cut off a partial record so later appends stay readable,
                // and keep the changes queued for the next attempt.
                let _ = f.file.set_len(f.len);
                let mut b = self.buffer.lock();
                let mut again = buf;
                again.extend_from_slice(&b.0);
                b.0 = again;
                b.1 += n;
                return Err(e.into());
            }
            f.len += buf.len() as u64;
            f.records += n;
            f.unsynced += n;
        }
        if sync {
            self.counts.callers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if f.unsynced > 0 && (sync || self.sync_every == 0 || f.unsynced >= self.sync_every) {
            self.counts.flushes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            f.file.sync_data()?;
            f.unsynced = 0;
        }
        if f.records >= self.compact_min {
            let m = map.read();
            if f.records > 2 * m.len() as u64 {
                // Everything queued is already in the map, which is what
                // gets written; the queue is dropped with the old file.
                let mut b = self.buffer.lock();
                let (file, len, records) = rewrite(&self.dir, &self.header, &m)?;
                *b = (Vec::new(), 0);
                *f = FileState { file, len, records, unsynced: 0 };
            }
        }
        Ok(())
    }

    /// Flushes what is queued and ends the journal with the clean-stop
    /// marker, made durable. Nothing may be recorded after it.
    pub(crate) fn close_clean(&self, map: &RwLock<IdMap>) -> VfsResult<()> {
        self.flush(true, map)?;
        let mut f = self.file.lock();
        let mut out = Vec::new();
        encode_record(OP_CLEAN, 0, 0, 0, b"", &mut out);
        f.file.write_all(&out)?;
        f.file.sync_data()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_torn_tail_is_ignored() {
        let changes = vec![
            Change::Add { id: 5, generation: 77, parent: 2, name: Bytes::from("a b") },
            Change::Unlink { id: 5, generation: 77, parent: 2, name: Bytes::from("a b") },
            Change::Forget { id: 9, generation: 78 },
            Change::Forget { id: 9, generation: 0 },
        ];
        let mut buf = Vec::new();
        for c in &changes {
            encode(c, &mut buf);
        }
        let mut at = 0;
        for c in &changes {
            let (d, len) = decode(&buf[at..]).unwrap();
            assert_eq!(d.as_ref(), Some(c));
            at += len;
        }
        assert_eq!(at, buf.len());
        assert!(decode(&buf[..buf.len() - 1][at - 32..]).is_none());
        let mut bad = buf.clone();
        bad[30] ^= 1;
        assert!(decode(&bad).is_none());
        // A record naming a path, not a component, is refused.
        let mut evil = Vec::new();
        encode(&Change::Add { id: 1, generation: 0, parent: 2, name: Bytes::from("../x") }, &mut evil);
        assert!(decode(&evil).is_none());
    }
}

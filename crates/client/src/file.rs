//! An open file: writes go to the client's write-behind cache (or straight
//! to stable storage for O_SYNC, or straight out as UNSTABLE WRITEs with
//! `direct_writes`), reads are served from an adaptive readahead pipeline
//! of READs in flight.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use client_core::attrcache::Validator;
use client_core::fattr::Fattr;
use client_core::readahead::Readahead;
use proto::nfs3::{nfs_fh3, stable_how, writeverf3};
use tokio::task::JoinHandle;

use crate::error::Result;
use crate::fs::{Inner, Key, OpenOptions};
use crate::nfs41::LockConflict;

/// A prefetched block: still in flight, or arrived (data, eof).
enum Chunk {
    Pending(JoinHandle<Result<(Bytes, bool)>>),
    Ready(Bytes, bool),
}

pub struct File {
    inner: Arc<Inner>,
    fh: nfs_fh3,
    key: Key,
    how: OpenOptions,
    attrs: Fattr,
    ra: Readahead,
    /// Readahead blocks by offset, with their length.
    ahead: BTreeMap<u64, (u64, Chunk)>,
    wrote: bool,
    open: ServerOpen,
    /// Direct writes the server acknowledged UNSTABLE and no COMMIT has
    /// covered yet.
    unstable: Option<Uncommitted>,
}

/// The write verifier of the first UNSTABLE reply since the last COMMIT,
/// and whether a later reply brought another: a server that restarted
/// between them may have lost the earlier data, which the client (keeping
/// no copy of direct writes) can only report.
#[derive(Debug, Clone, Copy)]
struct Uncommitted {
    verf: writeverf3,
    verf_changed: bool,
}

/// The server-side opens this `File` holds (NFSv4.1; NFSv3 has none):
/// made before the first read or write with the access it needs, and
/// upgraded when a write follows reads; each is CLOSEd at close.
#[derive(Debug, Clone, Copy, Default)]
struct ServerOpen {
    needed: bool,
    read: bool,
    write: bool,
    held: u32,
    /// Of those, opens made for writing (closed as such, so that the last
    /// writer's close can downgrade the file's open).
    writes: u32,
}

impl File {
    /// A file whose server-side open, if the protocol has one, is made
    /// before its first read or write.
    pub(crate) fn new(inner: Arc<Inner>, fh: nfs_fh3, attrs: Fattr, how: OpenOptions) -> File {
        let open = ServerOpen { needed: inner.nfs.v41().is_some(), ..Default::default() };
        Self::with_open(inner, fh, attrs, how, open)
    }

    /// A file already open on the server (by the OPEN that found it).
    pub(crate) fn opened(inner: Arc<Inner>, fh: nfs_fh3, attrs: Fattr, how: OpenOptions) -> File {
        let open = ServerOpen {
            needed: true,
            read: how.read || !how.write,
            write: how.write,
            held: 1,
            writes: u32::from(how.write),
        };
        Self::with_open(inner, fh, attrs, how, open)
    }

    /// Every open comes here with the file's attributes as of the open:
    /// cached data read under others is dropped (close-to-open).
    fn with_open(inner: Arc<Inner>, fh: nfs_fh3, attrs: Fattr, how: OpenOptions, open: ServerOpen) -> File {
        inner.data.lock().revalidate(&fh.data, &Validator::from(&attrs));
        let ra = Readahead::new(inner.settings.readahead.clone());
        let ahead = BTreeMap::new();
        File { key: fh.data.clone(), inner, fh, how, attrs, ra, ahead, wrote: false, open, unstable: None }
    }

    /// Makes (or upgrades) the server-side open before I/O that needs it.
    async fn ensure_open(&mut self, write: bool) -> Result<()> {
        let o = self.open;
        if !o.needed || (write && o.write) || (!write && o.read) {
            return Ok(());
        }
        let (read, write) = (o.read || !write, o.write || write);
        if self.inner.nfs.open(&self.fh, read, write).await? {
            self.open = ServerOpen { needed: true, read, write, held: o.held + 1, writes: o.writes + u32::from(write) };
        }
        Ok(())
    }

    /// CLOSEs every open this file made.
    async fn close_server_opens(&mut self) -> Result<()> {
        let held = std::mem::take(&mut self.open.held);
        let writes = std::mem::take(&mut self.open.writes);
        let mut r = Ok(());
        for i in 0..held {
            r = r.and(self.inner.nfs.close(&self.fh, i < writes).await);
        }
        r
    }

    pub fn handle(&self) -> &nfs_fh3 {
        &self.fh
    }

    /// The attributes fetched at open.
    pub fn attrs_at_open(&self) -> &Fattr {
        &self.attrs
    }

    /// Writes `data` at `offset`. Returns once it is cached (write-behind),
    /// for O_SYNC once the server has it on stable storage, and with
    /// `direct_writes` once the server has it (UNSTABLE; fsync or close
    /// commits it).
    pub async fn write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        self.ensure_open(true).await?;
        self.wrote = true;
        self.ahead.clear();
        // The write-behind holds the newer bytes from here on.
        self.inner.data.lock().invalidate(&self.key);
        let stable = match (self.how.sync, self.inner.settings.direct_writes) {
            (true, _) => stable_how::FILE_SYNC,
            (false, true) => stable_how::UNSTABLE,
            (false, false) => return self.inner.write_behind(&self.key, offset, data).await,
        };
        let wsize = self.inner.settings.wsize.max(1) as usize;
        let mut done = 0;
        while done < data.len() {
            let n = (data.len() - done).min(wsize);
            let chunk = Bytes::copy_from_slice(data.get(done..done + n).unwrap_or_default());
            let ok = self.inner.nfs.write(&self.fh, offset + done as u64, chunk, stable).await?;
            if ok.count == 0 {
                return Err(crate::error::Error::Invalid(format!("server wrote nothing at {}", offset + done as u64)));
            }
            if ok.committed == stable_how::UNSTABLE {
                let u = self.unstable.get_or_insert(Uncommitted { verf: ok.verf, verf_changed: false });
                u.verf_changed |= u.verf != ok.verf;
            }
            done += ok.count as usize;
        }
        self.inner.caches.invalidate_attrs(&self.key);
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at `offset`; returns how many (0 at
    /// end of file).
    pub async fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.ensure_open(false).await?;
        let dirty = !self.inner.wb.lock().is_clean(&self.key);
        if dirty {
            // Reads see this client's own writes, through any open file of
            // it: write them back first.
            self.inner.flush(&self.key).await?;
        }
        if let Some(n) = self.read_cached(offset, buf) {
            return Ok(n);
        }
        let len = buf.len() as u64;
        match self.ra.on_read(offset, len) {
            Some((start, n)) => self.prefetch(start, n),
            None if !self.ahead.is_empty() && !self.covered(offset) => self.ahead.clear(),
            None => {}
        }
        // Blocks wholly behind the reader will not be wanted again, but for
        // those a late read arriving out of order may still want.
        let behind = offset.saturating_sub(self.inner.settings.readahead.reorder_window);
        let stale: Vec<u64> =
            self.ahead.range(..behind).filter(|(k, (n, _))| *k + n <= behind).map(|(k, _)| *k).collect();
        for k in stale {
            self.ahead.remove(&k);
        }
        let mut filled = 0usize;
        while filled < buf.len() {
            let pos = offset + filled as u64;
            let (data, eof) = match self.take_prefetched(pos).await? {
                Some(hit) => hit,
                None => {
                    let want = (buf.len() - filled).min(self.inner.settings.rsize as usize) as u32;
                    let ok = self.inner.nfs.read(&self.fh, pos, want).await?;
                    (ok.data, ok.eof)
                }
            };
            if !self.wrote {
                self.inner.data.lock().insert(&self.key, pos, data.clone(), &Validator::from(&self.attrs));
            }
            let n = data.len().min(buf.len() - filled);
            if let (Some(to), Some(from)) = (buf.get_mut(filled..filled + n), data.get(..n)) {
                to.copy_from_slice(from);
            }
            filled += n;
            if n == 0 || (eof && n == data.len()) {
                break;
            }
        }
        Ok(filled)
    }

    /// A read served from the data kept across opens, when all of it is
    /// there (up to the size the file had at open).
    fn read_cached(&mut self, offset: u64, buf: &mut [u8]) -> Option<usize> {
        if self.wrote {
            return None;
        }
        // The size as this client knows it now (its own writes through
        // another open file drop the cached attributes).
        let size = self.inner.cached_attrs(&self.fh)?.size;
        if offset >= size {
            return Some(0);
        }
        let len = (buf.len() as u64).min(size - offset);
        let data = self.inner.data.lock().lookup(&self.key, offset, len)?;
        buf.get_mut(..data.len())?.copy_from_slice(&data);
        Some(data.len())
    }

    fn covered(&self, offset: u64) -> bool {
        self.ahead.range(..=offset).next_back().is_some_and(|(k, (n, _))| offset < k + n)
    }

    /// Starts READs for [start, start+len) in rsize blocks not yet fetched,
    /// up to the end of the file as this client knows it: a window running
    /// past it would only fetch empty replies (a 64 MiB file read in 1 MiB
    /// blocks took 74 READs with an 8 MiB window). A file grown since is
    /// still read, by plain READs.
    fn prefetch(&mut self, start: u64, len: u64) {
        let rsize = self.inner.settings.rsize as u64;
        let known = self.inner.cached_attrs(&self.fh).map_or(0, |a| a.size).max(self.attrs.size);
        let end = start.saturating_add(len).min(known);
        let mut pos = start;
        while pos < end {
            let count = rsize.min(end - pos);
            if !self.covered(pos) {
                let (inner, fh) = (self.inner.clone(), self.fh.clone());
                let task = tokio::spawn(async move {
                    let ok = inner.nfs.read(&fh, pos, count as u32).await?;
                    Ok((ok.data, ok.eof))
                });
                self.ahead.insert(pos, (count, Chunk::Pending(task)));
            }
            pos += count;
        }
    }

    /// The prefetched data from `pos` on, if a block covers it.
    async fn take_prefetched(&mut self, pos: u64) -> Result<Option<(Bytes, bool)>> {
        let Some((&start, _)) = self.ahead.range(..=pos).next_back() else { return Ok(None) };
        let (_, chunk) = self.ahead.get_mut(&start).expect("just found");
        if let Chunk::Pending(task) = chunk {
            match task.await {
                Ok(Ok((data, eof))) => *chunk = Chunk::Ready(data, eof),
                // A failed prefetch is retried as a plain READ.
                _ => {
                    self.ahead.remove(&start);
                    return Ok(None);
                }
            }
        }
        let Chunk::Ready(data, eof) = chunk else { unreachable!("made ready above") };
        let skip = (pos - start) as usize;
        if skip > data.len() || (skip == data.len() && !*eof) {
            return Ok(None);
        }
        Ok(Some((data.slice(skip..), *eof)))
    }

    /// Makes sure the server holds an open of the file with the access a
    /// read (or `write`) lock needs.
    pub async fn open_on_server(&mut self, write: bool) -> Result<()> {
        self.ensure_open(write).await
    }

    /// Takes a byte-range lock on `[offset, offset + len)` (`len`
    /// `u64::MAX`: to the end of the file) for `owner` (any number naming
    /// the locker, e.g. a process). Returns the lock in the way when
    /// another owner holds one and `wait` is false; with `wait`, returns
    /// once granted. Cached writes go to the server first, and cached data
    /// is dropped, so what the lock protects is read fresh (NFSv4.1 only).
    pub async fn lock(
        &mut self,
        owner: u64,
        offset: u64,
        len: u64,
        write: bool,
        wait: bool,
    ) -> Result<Option<LockConflict>> {
        self.ensure_open(write).await?;
        let attrs = self.inner.fine_times && !self.inner.nfs.delegated(&self.fh);
        let r = self.inner.nfs.lock(&self.fh, owner, (offset, len), write, wait, attrs).await?;
        if r.conflict.is_none() && !self.inner.after_lock(&self.fh, r.attrs.as_ref()) {
            self.ahead.clear();
        }
        if let Some(a) = r.attrs {
            self.attrs = a;
        }
        Ok(r.conflict)
    }

    /// The lock in the way of `lock(owner, offset, len, write, false)`, if any.
    pub async fn test_lock(&mut self, owner: u64, offset: u64, len: u64, write: bool) -> Result<Option<LockConflict>> {
        self.ensure_open(false).await?;
        self.inner.nfs.test_lock(&self.fh, owner, (offset, len), write).await
    }

    /// Releases `owner`'s locks on the range, after writing back what was
    /// written under them.
    pub async fn unlock(&mut self, owner: u64, offset: u64, len: u64) -> Result<()> {
        if self.wrote {
            self.inner.flush(&self.key).await?;
        }
        self.inner.nfs.unlock(&self.fh, owner, (offset, len)).await
    }

    /// Drops the data read ahead (after the file was truncated or changed
    /// by someone else).
    pub fn forget_readahead(&mut self) {
        self.ahead.clear();
    }

    /// fsync(2): everything written through this client to this file is on
    /// stable storage when this returns.
    pub async fn flush(&mut self) -> Result<()> {
        self.inner.flush(&self.key).await?;
        self.commit_direct_writes().await
    }

    /// COMMITs the direct writes not yet stable. A verifier that changed
    /// since the first of them means the server restarted in between and
    /// may have dropped them: reported as fsync's EIO would be, since
    /// direct writes keep no copy to send again.
    async fn commit_direct_writes(&mut self) -> Result<()> {
        let Some(u) = self.unstable.take() else { return Ok(()) };
        let verf = match self.inner.nfs.commit(&self.fh).await {
            Ok(verf) => verf,
            Err(e) => {
                self.unstable = Some(u);
                return Err(e);
            }
        };
        if u.verf_changed || verf != u.verf {
            return Err(crate::error::Error::Invalid(
                "the server restarted before committing direct writes; they may be lost".into(),
            ));
        }
        Ok(())
    }

    /// close(2): flushes (close-to-open consistency), then forgets the file.
    pub async fn close(mut self) -> Result<()> {
        self.ahead.clear();
        let r = if self.wrote { self.flush().await } else { Ok(()) };
        {
            let mut wb = self.inner.wb.lock();
            if wb.is_clean(&self.key) {
                wb.forget(&self.key);
            }
        }
        // (Not when it has lock state: the next open's locks would race
        // with the freeing of this one's.)
        if !self.wrote && !self.how.write && !self.inner.nfs.has_lock_state(&self.fh) {
            // A reader's CLOSE has nothing to report that close(2) could
            // act on: it goes out while the caller moves on (as the Linux
            // client sends it), saving a round trip per small file read.
            let held = std::mem::take(&mut self.open.held);
            let (inner, fh) = (self.inner.clone(), self.fh.clone());
            if held > 0 {
                tokio::spawn(async move {
                    for _ in 0..held {
                        let _ = inner.nfs.close(&fh, false).await;
                    }
                });
            }
            return r;
        }
        let closed = self.close_server_opens().await;
        r.and(closed)
    }
}

impl Drop for File {
    fn drop(&mut self) {
        let (held, writes) = (self.open.held, self.open.writes);
        let commit = self.unstable.is_some();
        if held > 0 || commit {
            // Dropped without close: the opens still go, after whatever
            // the write-behind holds for the file and a COMMIT of its
            // direct writes.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let (inner, fh) = (self.inner.clone(), self.fh.clone());
                rt.spawn(async move {
                    let _ = inner.flush(&fh.data).await;
                    if commit {
                        let _ = inner.nfs.commit(&fh).await;
                    }
                    for i in 0..held {
                        let _ = inner.nfs.close(&fh, i < writes).await;
                    }
                });
            }
        }
        for (_, (_, c)) in std::mem::take(&mut self.ahead) {
            if let Chunk::Pending(t) = c {
                t.abort();
            }
        }
    }
}

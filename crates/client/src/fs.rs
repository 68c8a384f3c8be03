//! The file API over one mounted export: paths, metadata operations and
//! the shared state behind every open file — the write-behind cache and
//! its driver, and the attribute and name caches.
//!
//! The write-behind driver has no task of its own: whoever changes the
//! cache (a write, a flush, a reply) calls [`Inner::pump`], which sends
//! every WRITE/COMMIT the sans-IO cache asks for, each as a spawned task
//! that feeds its reply back and pumps again.

use std::time::Duration;

use bytes::Bytes;
use client_core::attrcache::Validator;
use client_core::fattr::{Fattr, Sattr};
use client_core::readahead::ReadCache;
use client_core::writeback::{Action, Admit, DeferredError, WriteOk, Writeback};
use parking_lot::Mutex;
use proto::nfs3::{ftype3, nfs_fh3, nfsstat3};
use tokio::sync::Notify;

use crate::cache::Caches;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::file::File;
use crate::nfs::{CreateHow, ListEntry, Nfs};
use crate::nfs41::OpenAccess;
use crate::settings::ClientSettings;
use crate::url::NfsUrl;

/// How to open a file, like open(2)'s flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    pub read: bool,
    pub write: bool,
    pub create: bool,
    pub truncate: bool,
    /// O_SYNC: every write is a FILE_SYNC WRITE, bypassing write-behind.
    pub sync: bool,
}

impl OpenOptions {
    pub fn read() -> OpenOptions {
        OpenOptions { read: true, ..Default::default() }
    }
    /// Create or truncate for writing (`creat(2)`).
    pub fn create() -> OpenOptions {
        OpenOptions { write: true, create: true, truncate: true, ..Default::default() }
    }
    /// Read and write an existing file.
    pub fn read_write() -> OpenOptions {
        OpenOptions { read: true, write: true, ..Default::default() }
    }
    pub fn with_sync(mut self, sync: bool) -> OpenOptions {
        self.sync = sync;
        self
    }
}

/// A directory entry with its attributes (from READDIRPLUS).
#[derive(Debug, Clone)]
pub struct DirEntry {
    pub name: String,
    pub fileid: u64,
    pub attrs: Option<Fattr>,
}

pub(crate) type Key = Bytes;

/// Times at least this fine change at every change of a file (Chen et al.
/// 2015: finer than a microsecond, the Linux client revalidates after a
/// lock rather than dropping its cache).
const FINE_TIME_NS: u64 = 1_000;

pub(crate) struct Inner {
    pub nfs: Nfs,
    pub root: nfs_fh3,
    pub settings: ClientSettings,
    #[allow(dead_code)]
    pub url: NfsUrl,
    pub wb: Mutex<Writeback<Key, Error>>,
    /// Signalled after every WRITE/COMMIT reply.
    pub wb_progress: Notify,
    pub caches: Caches,
    /// File data across opens, keyed by handle.
    pub data: Mutex<ReadCache<Key>>,
    /// The server's times change with every change (a granularity of a
    /// microsecond or finer), and `[read_cache] keep_after_lock`: cached
    /// data whose file's attributes did not move is still good.
    pub fine_times: bool,
    /// Told of the changes notified in delegated directories.
    pub dir_listener: std::sync::OnceLock<crate::delegated::DirListener>,
}

impl Inner {
    pub fn new(nfs: Nfs, root: nfs_fh3, settings: ClientSettings, url: NfsUrl) -> Inner {
        let wb = Mutex::new(Writeback::new(settings.writeback.clone()));
        let caches = Caches::new(&settings);
        let data = Mutex::new(ReadCache::new(settings.read_cache.clone()));
        let dir_listener = Default::default();
        Inner {
            nfs,
            root,
            settings,
            url,
            wb,
            wb_progress: Notify::new(),
            caches,
            data,
            fine_times: false,
            dir_listener,
        }
    }

    /// The granularity of the server's times, from the mount.
    pub fn with_time_delta(mut self, ns: Option<u64>) -> Inner {
        self.fine_times = self.settings.read_cache.keep_after_lock && ns.is_some_and(|ns| ns <= FINE_TIME_NS);
        self
    }

    /// A lock on `fh` was granted (with the file's attributes then, if
    /// known). What the lock protects must be read as the server has it:
    /// under a delegation nobody else can have written (RFC 8881 section
    /// 10.4.2), so the cache stays; with attributes from times fine enough
    /// to move at every change, data cached under the same attributes
    /// stays; otherwise it goes (Chen et al. 2015 section 5.2 describe the
    /// same choice in the Linux client). Returns whether the cache stayed.
    pub fn after_lock(&self, fh: &nfs_fh3, attrs: Option<&Fattr>) -> bool {
        if self.nfs.delegated(fh) {
            return true;
        }
        match attrs.filter(|_| self.fine_times) {
            Some(a) => {
                self.caches.put_attrs(&fh.data, a);
                !self.data.lock().revalidate(&fh.data, &Validator::from(a))
            }
            None => {
                self.data.lock().invalidate(&fh.data);
                self.caches.invalidate_attrs(&fh.data);
                false
            }
        }
    }

    /// Attributes of `fh` that need no call: fresh in the cache, or of
    /// any age under a delegation.
    pub fn cached_attrs(&self, fh: &nfs_fh3) -> Option<Fattr> {
        self.caches
            .attrs(&fh.data)
            .or_else(|| self.nfs.delegated(fh).then(|| self.caches.attrs_any(&fh.data)).flatten())
            .or_else(|| self.notified_attrs(fh))
    }

    /// Sends whatever the write-behind cache wants sent.
    pub fn pump(self: &std::sync::Arc<Self>) {
        loop {
            let Some(action) = self.wb.lock().next_action() else { return };
            let me = self.clone();
            tokio::spawn(async move { me.execute(action).await });
        }
    }

    async fn execute(self: std::sync::Arc<Self>, action: Action<Key>) {
        match action {
            Action::Write { id, file, offset, data, stable } => {
                let fh = nfs_fh3 { data: file.clone() };
                let r = self.nfs.write(&fh, offset, data, stable).await;
                let r = r.map(|ok| WriteOk { count: ok.count, committed: ok.committed, verf: ok.verf });
                self.caches.invalidate_attrs(&file);
                self.wb.lock().on_write_reply(id, r);
            }
            Action::Commit { id, file } => {
                let r = self.nfs.commit(&nfs_fh3 { data: file }).await;
                self.wb.lock().on_commit_reply(id, r);
            }
        }
        self.wb_progress.notify_waiters();
        self.pump();
    }

    /// Caches `data` for writing, waiting only while the dirty budget is full.
    pub async fn write_behind(self: &std::sync::Arc<Self>, key: &Key, offset: u64, data: &[u8]) -> Result<()> {
        loop {
            let progress = self.wb_progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            let admit = self.wb.lock().write(key, offset, data);
            self.pump();
            if admit == Admit::Accepted {
                return Ok(());
            }
            progress.await;
        }
    }

    /// Writes back and commits everything cached for `key`; reports an
    /// error of any earlier WRITE/COMMIT of it (as fsync(2) does).
    pub async fn flush(self: &std::sync::Arc<Self>, key: &Key) -> Result<()> {
        self.wb.lock().request_flush(key);
        loop {
            let progress = self.wb_progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            self.pump();
            if self.wb.lock().is_clean(key) {
                break;
            }
            progress.await;
        }
        match self.wb.lock().take_error(key) {
            None => Ok(()),
            Some(DeferredError::Failed(e)) => Err(e),
            Some(DeferredError::ZeroCount { offset }) => {
                Err(Error::Invalid(format!("server wrote nothing at offset {offset}")))
            }
        }
    }
}

impl Client {
    /// The handle and attributes of `path` (relative to the export root,
    /// `/`-separated), through the name and attribute caches.
    pub async fn lookup(&self, path: &str) -> Result<(nfs_fh3, Fattr)> {
        let caches = &self.inner.caches;
        // The directory part of `path`, when the caches walked it lately
        // and that walk still holds (see cache/walks.rs).
        let (dir, last) = split_last(path);
        let in_dir = match last {
            Some(_) => components(dir).count(),
            None => 0,
        };
        let mut mark = caches.walk_began();
        if let (Some(last), true) = (last, in_dir > 0) {
            if let Some(fh) = caches.walked(dir, &mark) {
                return self.lookup_in(&fh, last).await;
            }
        }
        let mut cached = true;
        let mut fh = self.inner.root.clone();
        let mut attrs = None;
        for (i, name) in components(path).enumerate() {
            if i == in_dir && i > 0 && cached {
                caches.walked_to(dir, &fh.data, &mark);
            }
            let (child, a) = match caches.lookup_step(&fh.data, name, &mut mark) {
                Some(hit) => hit,
                None => {
                    // A walk through a delegated directory is not kept
                    // (walks.rs knows only the name cache's drops).
                    cached = false;
                    match self.delegated_lookup(&fh, name)? {
                        Some(hit) => hit,
                        None => self.lookup_call(&fh, name).await?,
                    }
                }
            };
            fh = child;
            attrs = Some(a);
        }
        match attrs {
            Some(a) => Ok((fh, a)),
            None => {
                let a = self.getattr(&fh).await?;
                Ok((fh, a))
            }
        }
    }

    /// One LOOKUP, answered from the name cache when it can be.
    pub async fn lookup_in(&self, dir: &nfs_fh3, name: &str) -> Result<(nfs_fh3, Fattr)> {
        // Name and attributes both cached and fresh: no call.
        if let Some(hit) = self.inner.caches.lookup_fresh(&dir.data, name) {
            return Ok(hit);
        }
        if let Some(hit) = self.delegated_lookup(dir, name)? {
            return Ok(hit);
        }
        self.lookup_call(dir, name).await
    }

    /// One LOOKUP call, its answer stored in the caches.
    async fn lookup_call(&self, dir: &nfs_fh3, name: &str) -> Result<(nfs_fh3, Fattr)> {
        if let Some(n) = self.inner.nfs.v41() {
            // A directory walked repeatedly is worth a delegation as much
            // as one listed repeatedly (a mount whose kernel keeps the
            // listing asks for names one by one).
            n.dir_listing(&dir.data).await;
            if let Some(hit) = self.delegated_lookup(dir, name)? {
                return Ok(hit);
            }
        }
        let since = self.inner.caches.epoch();
        let ok = self.inner.nfs.lookup(dir, name).await?;
        let attrs = match ok.obj_attributes {
            Some(a) => a,
            None => self.inner.nfs.getattr(&ok.object).await?,
        };
        if let Some(d) = &ok.dir_attributes {
            self.inner.caches.put_attrs_since(&dir.data, d, since);
        }
        self.inner.caches.put_entry_since(&dir.data, name, &ok.object, &attrs, ok.dir_attributes.as_ref(), since);
        Ok((ok.object, attrs))
    }

    /// GETATTR through the attribute cache.
    pub async fn getattr(&self, fh: &nfs_fh3) -> Result<Fattr> {
        if let Some(a) = self.inner.cached_attrs(fh) {
            return Ok(a);
        }
        self.getattr_fresh(fh).await
    }

    /// GETATTR from the server (close-to-open revalidation).
    pub async fn getattr_fresh(&self, fh: &nfs_fh3) -> Result<Fattr> {
        // Under a delegation the server tells this client before anyone
        // else changes the file: what is cached is still true.
        if self.inner.nfs.delegated(fh) {
            if let Some(a) = self.inner.caches.attrs_any(&fh.data) {
                return Ok(a);
            }
        }
        let since = self.inner.caches.epoch();
        let a = self.inner.nfs.getattr(fh).await?;
        self.inner.caches.revalidate_since(&fh.data, &a, since);
        Ok(a)
    }

    /// lstat(2).
    pub async fn stat(&self, path: &str) -> Result<Fattr> {
        Ok(self.lookup(path).await?.1)
    }

    /// The parent's handle and the last component of `path`.
    async fn parent_of<'p>(&self, path: &'p str) -> Result<(nfs_fh3, &'p str)> {
        let path = path.trim_end_matches('/');
        let (dir, name) = match path.rfind('/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => ("", path),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(Error::Invalid(format!("{path:?} names no entry")));
        }
        let (fh, attrs) = self.lookup(dir).await?;
        if attrs.r#type != ftype3::NF3DIR {
            return Err(Error::Nfs { proc: "LOOKUP", status: nfsstat3::NFS3ERR_NOTDIR });
        }
        Ok((fh, name))
    }

    /// `std::fs::write`: `path` created (or truncated) with `data` as its
    /// contents, written back and closed. Over NFSv4.1 a file of at most
    /// `wsize` bytes takes one COMPOUND (OPEN, WRITE, CLOSE) instead of
    /// three round trips; otherwise it is opened, written and closed.
    pub async fn write_file(&self, path: &str, data: &[u8]) -> Result<()> {
        let Some(v41) = self.inner.nfs.v41().filter(|_| data.len() <= self.inner.settings.wsize as usize) else {
            let mut f = self.open(path, OpenOptions::create()).await?;
            f.write(0, data).await?;
            return f.close().await;
        };
        let (dir, name) = self.parent_of(path).await?;
        let mode = Sattr { mode: Some(0o644), ..Default::default() };
        let data = Bytes::copy_from_slice(data);
        let r = v41.write_new_file(&dir.data, name, &mode, data.clone()).await;
        self.inner.changed_dir(&dir.data);
        let (fh, a, dir_after) = r?;
        let fh = nfs_fh3 { data: fh };
        self.inner.caches.put_attrs(&dir.data, &dir_after);
        self.inner.caches.put_entry(&dir.data, name, &fh, &a, Some(&dir_after));
        // Read-your-writes: what was written is what a read would fetch.
        let mut cache = self.inner.data.lock();
        cache.revalidate(&fh.data, &Validator::from(&a));
        cache.insert(&fh.data, 0, data, &Validator::from(&a));
        Ok(())
    }

    /// Opens (and with `create`, creates) a file.
    pub async fn open(&self, path: &str, how: OpenOptions) -> Result<File> {
        let (dir, name) = self.parent_of(path).await?;
        if self.inner.nfs.v41().is_some() {
            return self.open_v41(&dir, name, how).await;
        }
        // A name cached under the directory's current attributes is good
        // whatever the age of the file's own: the GETATTR below checks those.
        let cached = self.inner.caches.lookup(&dir.data, name);
        let found = match cached.clone() {
            Some(found) => Ok(found),
            None => self.lookup_in(&dir, name).await,
        };
        let found = match found {
            Ok(found) => Some(found),
            Err(e) if e.status() == Some(nfsstat3::NFS3ERR_NOENT) && how.create => None,
            Err(e) => return Err(e),
        };
        let (fh, attrs) = match found {
            Some((mut fh, _)) => {
                // Close-to-open: attributes are always fetched afresh on open.
                let mut a = match self.getattr_fresh(&fh).await {
                    // The cached name outlived its file (removed or
                    // replaced by another client): look it up again.
                    Err(e) if cached.is_some() && e.status() == Some(nfsstat3::NFS3ERR_STALE) => {
                        self.inner.changed_dir(&dir.data);
                        fh = self.lookup_in(&dir, name).await?.0;
                        self.getattr_fresh(&fh).await?
                    }
                    r => r?,
                };
                if how.truncate && a.size != 0 {
                    let set = Sattr { size: Some(0), ..Default::default() };
                    if let Some(post) = self.inner.nfs.setattr(&fh, set).await? {
                        a = post;
                    }
                    self.inner.caches.put_attrs(&fh.data, &a);
                }
                (fh, a)
            }
            None => self.create_file(&dir, name).await?,
        };
        if attrs.r#type == ftype3::NF3DIR {
            return Err(Error::Nfs { proc: "OPEN", status: nfsstat3::NFS3ERR_ISDIR });
        }
        Ok(File::new(self.inner.clone(), fh, attrs, how))
    }

    /// NFSv4.1: one OPEN compound finds (or creates) the file, opens it
    /// and returns its handle and attributes, where NFSv3 needs a LOOKUP,
    /// a GETATTR and maybe a CREATE.
    async fn open_v41(&self, dir: &nfs_fh3, name: &str, how: OpenOptions) -> Result<File> {
        let v41 = self.inner.nfs.v41().expect("checked by the caller");
        let access = OpenAccess::new(how.read || !how.write, how.write);
        // A size of 0 truncates an existing file within the OPEN (RFC 8881
        // section 18.16.3): no SETATTR after it.
        let create = how.create.then(|| {
            let set = Sattr { mode: Some(0o644), size: how.truncate.then_some(0), ..Default::default() };
            proto::nfs4::createhow4::UNCHECKED4(client_core::v41::attrs::encode_sattr(&set))
        });
        // Under a delegation the open is this client's own business: the
        // name and the attributes are cached and the server promised to
        // say before anyone else changes the file.
        // (Not when its attributes are unknown, after this client's own
        // writes: the OPEN below brings them.)
        if !how.truncate {
            if let Some((fh, _)) = self.inner.caches.lookup(&dir.data, name) {
                if let Some(a) = self.inner.caches.attrs_any(&fh.data) {
                    if v41.open_local(&fh.data, OpenAccess::new(how.read || !how.write, how.write)) {
                        return Ok(File::opened(self.inner.clone(), fh, a, how));
                    }
                }
            }
        }
        let r = v41.open_name(&dir.data, name, access, create).await;
        if how.create {
            self.inner.changed_dir(&dir.data);
        }
        let (fh, mut a, dir_after) = r?;
        self.inner.caches.put_attrs(&dir.data, &dir_after);
        let fh = nfs_fh3 { data: fh };
        if how.truncate && a.size != 0 {
            a = v41.setattr(&fh.data, Sattr { size: Some(0), ..Default::default() }).await?;
        }
        self.inner.caches.revalidate(&fh.data, &a);
        self.inner.caches.put_entry(&dir.data, name, &fh, &a, Some(&dir_after));
        Ok(File::opened(self.inner.clone(), fh, a, how))
    }

    async fn create_file(&self, dir: &nfs_fh3, name: &str) -> Result<(nfs_fh3, Fattr)> {
        let how = CreateHow::Unchecked(Sattr { mode: Some(0o644), ..Default::default() });
        let ok = self.inner.nfs.create(dir, name, how).await?;
        self.inner.changed_dir(&dir.data);
        let dir_after = ok.dir_after.clone();
        let fh = match ok.obj {
            Some(fh) => fh,
            None => self.inner.nfs.lookup(dir, name).await?.object,
        };
        let attrs = match ok.obj_attributes {
            Some(a) => a,
            None => self.inner.nfs.getattr(&fh).await?,
        };
        self.inner.caches.put_entry(&dir.data, name, &fh, &attrs, dir_after.as_ref());
        Ok((fh, attrs))
    }

    pub async fn mkdir(&self, path: &str) -> Result<()> {
        let (dir, name) = self.parent_of(path).await?;
        let r = self.inner.nfs.mkdir(&dir, name, Sattr { mode: Some(0o755), ..Default::default() }).await;
        self.inner.changed_dir(&dir.data);
        r.map(drop)
    }

    /// unlink(2). Cached writes of the file are dropped.
    pub async fn remove(&self, path: &str) -> Result<()> {
        let (dir, name) = self.parent_of(path).await?;
        if let Some((fh, _)) = self.inner.caches.lookup(&dir.data, name) {
            self.inner.wb.lock().forget(&fh.data);
            self.inner.data.lock().invalidate(&fh.data);
        }
        let r = self.inner.nfs.remove(&dir, name).await;
        self.inner.changed_dir(&dir.data);
        r.map(drop)
    }

    pub async fn rmdir(&self, path: &str) -> Result<()> {
        let (dir, name) = self.parent_of(path).await?;
        let r = self.inner.nfs.rmdir(&dir, name).await;
        self.inner.changed_dir(&dir.data);
        r.map(drop)
    }

    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (fdir, fname) = self.parent_of(from).await?;
        let (tdir, tname) = self.parent_of(to).await?;
        let r = self.inner.nfs.rename(&fdir, fname, &tdir, tname).await;
        self.inner.changed_dir(&fdir.data);
        self.inner.changed_dir(&tdir.data);
        r.map(drop)
    }

    /// Every entry of a directory but `.` and `..`, with attributes; fills
    /// the name and attribute caches so a following stat of each entry
    /// (`ls -l`) costs no call.
    pub async fn readdir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let (dir, attrs) = self.lookup(path).await?;
        if attrs.r#type != ftype3::NF3DIR {
            return Err(Error::Nfs { proc: "READDIRPLUS", status: nfsstat3::NFS3ERR_NOTDIR });
        }
        if let Some(n) = self.inner.nfs.v41() {
            n.dir_listing(&dir.data).await;
        }
        let entries = match self.delegated_listing(&dir).await? {
            Some(all) => all,
            None => self.list_from_server(&dir).await?.0,
        };
        let entry = |e: ListEntry| DirEntry {
            name: String::from_utf8_lossy(&e.name).into_owned(),
            fileid: e.fileid,
            attrs: e.name_attributes,
        };
        Ok(entries.into_iter().map(entry).collect())
    }

    /// Writes back everything cached by this client.
    pub async fn sync(&self) -> Result<()> {
        self.inner.wb.lock().request_flush_all();
        loop {
            let progress = self.inner.wb_progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            self.inner.pump();
            if self.inner.wb.lock().total_bytes() == 0 {
                return Ok(());
            }
            if tokio::time::timeout(Duration::from_secs(3600), progress).await.is_err() {
                return Err(Error::Invalid("sync made no progress".into()));
            }
        }
    }
}

fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty() && *c != ".")
}

/// `path` as the directory part and its last component, when that is a
/// name a walk steps to (not empty, not `.`): `a/b/c` is (`a/b`, `c`).
fn split_last(path: &str) -> (&str, Option<&str>) {
    let path = path.trim_end_matches('/');
    let (dir, last) = match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    };
    (dir, Some(last).filter(|l| !l.is_empty() && *l != "."))
}

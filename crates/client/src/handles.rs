//! The file API by handle: every operation on an object the caller already
//! holds the handle of, for callers that keep their own table of objects
//! (the FUSE mount) rather than walk paths. Each keeps the client's name
//! and attribute caches and its write-behind as true as the path API does.

use bytes::Bytes;
use client_core::fattr::{Fattr, Sattr};
use proto::nfs3::{cookieverf3, nfs_fh3};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::file::File;
use crate::fs::OpenOptions;
use crate::results::{CreateHow, FsStat, ListEntry, Made, NodeKind};

/// A new object's handle and attributes, from a reply that may leave out
/// either (RFC 1813 makes both optional): what is missing is asked for.
async fn made(c: &Client, dir: &nfs_fh3, name: &str, ok: Made) -> Result<(nfs_fh3, Fattr)> {
    let Made { obj: fh, obj_attributes: a, .. } = ok;
    let fh = match fh {
        Some(fh) => fh,
        None => c.inner.nfs.lookup(dir, name).await?.object,
    };
    let a = match a {
        Some(a) => a,
        None => c.inner.nfs.getattr(&fh).await?,
    };
    // The next call about a new object is usually a stat of it.
    c.inner.caches.put_entry(&dir.data, name, &fh, &a, None);
    Ok((fh, a))
}

/// One page of a directory listing.
#[derive(Debug, Clone)]
pub struct DirPage {
    pub entries: Vec<ListEntry>,
    pub cookieverf: cookieverf3,
    pub eof: bool,
}

impl Client {
    /// This client changed `dir`: what was cached about it goes, and the
    /// directory's attributes after the change (as NFSv3's wcc_data carries
    /// them), when the reply had them, take its place, so the next stat of
    /// the directory costs no GETATTR.
    fn dir_changed(&self, dir: &nfs_fh3, after: Option<&Fattr>) {
        self.inner.changed_dir(&dir.data);
        if let Some(after) = after {
            self.inner.caches.put_attrs(&dir.data, after);
        }
    }

    /// The object changed in a way this client knows of but has no new
    /// attributes for (one of its names was removed or renamed over):
    /// the next stat asks the server.
    pub fn forget_attrs(&self, fh: &nfs_fh3) {
        self.inner.caches.invalidate_attrs(&fh.data);
    }

    /// Whether the server keeps `fh`, which this client has open there,
    /// until it is closed, should its last name be removed.
    pub fn preserves_unlinked(&self, fh: &nfs_fh3) -> bool {
        self.inner.nfs.preserves_unlinked(fh)
    }

    /// An open file for a handle already looked up (no call is made).
    pub fn open_handle(&self, fh: nfs_fh3, attrs: Fattr, how: OpenOptions) -> File {
        File::new(self.inner.clone(), fh, attrs, how)
    }

    /// Whether writes to `fh` are cached here, not yet on the server.
    pub fn has_cached_writes(&self, fh: &nfs_fh3) -> bool {
        !self.inner.wb.lock().is_clean(&fh.data)
    }

    /// Writes back everything this client has cached for `fh`.
    pub async fn flush_handle(&self, fh: &nfs_fh3) -> Result<()> {
        self.inner.flush(&fh.data).await
    }

    /// CREATE: exclusive fails on an existing name (GUARDED), otherwise an
    /// existing file is opened as it is (UNCHECKED).
    pub async fn create_in(
        &self,
        dir: &nfs_fh3,
        name: &str,
        attrs: Sattr,
        exclusive: bool,
    ) -> Result<(nfs_fh3, Fattr)> {
        let how = if exclusive { CreateHow::Guarded(attrs) } else { CreateHow::Unchecked(attrs) };
        let r = self.inner.nfs.create(dir, name, how).await;
        self.dir_changed(dir, r.as_ref().ok().and_then(|ok| ok.dir_after.as_ref()));
        made(self, dir, name, r?).await
    }

    /// A regular file that nothing opens (mknod(2)): [`Client::create_in`]
    /// without the open an NFSv4.1 create leaves for the open that
    /// usually follows.
    pub async fn mknod_file_in(&self, dir: &nfs_fh3, name: &str, attrs: Sattr) -> Result<(nfs_fh3, Fattr)> {
        let (fh, a) = self.create_in(dir, name, attrs, true).await?;
        self.inner.nfs.drop_spare(&fh).await?;
        Ok((fh, a))
    }

    pub async fn mkdir_in(&self, dir: &nfs_fh3, name: &str, attributes: Sattr) -> Result<(nfs_fh3, Fattr)> {
        let r = self.inner.nfs.mkdir(dir, name, attributes).await;
        self.dir_changed(dir, r.as_ref().ok().and_then(|ok| ok.dir_after.as_ref()));
        made(self, dir, name, r?).await
    }

    pub async fn symlink_in(&self, dir: &nfs_fh3, name: &str, target: &[u8], attrs: Sattr) -> Result<(nfs_fh3, Fattr)> {
        let r = self.inner.nfs.symlink(dir, name, target, attrs).await;
        self.dir_changed(dir, r.as_ref().ok().and_then(|ok| ok.dir_after.as_ref()));
        made(self, dir, name, r?).await
    }

    /// MKNOD of a FIFO, socket or device.
    pub async fn mknod_in(&self, dir: &nfs_fh3, name: &str, kind: NodeKind, attrs: Sattr) -> Result<(nfs_fh3, Fattr)> {
        let r = self.inner.nfs.mknod(dir, name, kind, attrs).await;
        self.dir_changed(dir, r.as_ref().ok().and_then(|ok| ok.dir_after.as_ref()));
        made(self, dir, name, r?).await
    }

    /// LINK: a new name `dir/name` for `fh`; returns its new attributes.
    pub async fn link_in(&self, fh: &nfs_fh3, dir: &nfs_fh3, name: &str) -> Result<Fattr> {
        let r = self.inner.nfs.link(fh, dir, name).await;
        self.dir_changed(dir, r.as_ref().ok().and_then(|ok| ok.dir_after.as_ref()));
        self.inner.caches.invalidate_attrs(&fh.data);
        match r?.file_attributes {
            Some(a) => Ok(a),
            None => self.getattr_fresh(fh).await,
        }
    }

    /// REMOVE; cached writes of the removed file are dropped.
    pub async fn remove_in(&self, dir: &nfs_fh3, name: &str) -> Result<()> {
        if let Some((fh, _)) = self.inner.caches.lookup(&dir.data, name) {
            self.drop_cached_data(&fh);
            self.inner.caches.invalidate_attrs(&fh.data);
        }
        let r = self.inner.nfs.remove(dir, name).await;
        self.dir_changed(dir, r.as_ref().ok().and_then(Option::as_ref));
        r.map(drop)
    }

    /// A file whose name is about to be removed loses its cached data and
    /// writes, which would go nowhere; unless the server keeps the file
    /// for this client's open of it, where they still belong to a file.
    fn drop_cached_data(&self, fh: &nfs_fh3) {
        if self.inner.nfs.preserves_unlinked(fh) {
            return;
        }
        self.inner.wb.lock().forget(&fh.data);
        self.inner.data.lock().invalidate(&fh.data);
    }

    pub async fn rmdir_in(&self, dir: &nfs_fh3, name: &str) -> Result<()> {
        let r = self.inner.nfs.rmdir(dir, name).await;
        self.dir_changed(dir, r.as_ref().ok().and_then(Option::as_ref));
        r.map(drop)
    }

    pub async fn rename_in(&self, from: &nfs_fh3, from_name: &str, to: &nfs_fh3, to_name: &str) -> Result<()> {
        // A file replaced by the rename loses its cached writes, as by REMOVE.
        if let Some((fh, _)) = self.inner.caches.lookup(&to.data, to_name) {
            self.drop_cached_data(&fh);
        }
        let r = self.inner.nfs.rename(from, from_name, to, to_name).await;
        self.dir_changed(from, r.as_ref().ok().and_then(|ok| ok.from_dir.as_ref()));
        self.dir_changed(to, r.as_ref().ok().and_then(|ok| ok.to_dir.as_ref()));
        r.map(drop)
    }

    /// SETATTR; a size change first writes back what is cached for the
    /// file, so no cached write lands beyond the new end afterwards.
    pub async fn setattr_handle(&self, fh: &nfs_fh3, set: Sattr) -> Result<Fattr> {
        if set.size.is_some() {
            self.flush_handle(fh).await?;
            self.inner.data.lock().invalidate(&fh.data);
        }
        let r = self.inner.nfs.setattr(fh, set).await;
        self.inner.caches.invalidate_attrs(&fh.data);
        match r? {
            Some(a) => {
                self.inner.caches.put_attrs(&fh.data, &a);
                Ok(a)
            }
            None => self.getattr_fresh(fh).await,
        }
    }

    /// A byte-range lock on `fh` for `owner` (see [`File::lock`]); the
    /// file must be open through this client (an open that has done I/O,
    /// or [`File::open_on_server`]).
    pub async fn lock_handle(
        &self,
        fh: &nfs_fh3,
        owner: u64,
        range: (u64, u64),
        write: bool,
        wait: bool,
    ) -> Result<Option<crate::LockConflict>> {
        let attrs = self.inner.fine_times && !self.inner.nfs.delegated(fh);
        let r = self.inner.nfs.lock(fh, owner, range, write, wait, attrs).await?;
        if r.conflict.is_none() {
            self.inner.after_lock(fh, r.attrs.as_ref());
        }
        Ok(r.conflict)
    }

    /// Whether some lock owner of this client has lock state on `fh`.
    pub fn has_lock_state(&self, fh: &nfs_fh3) -> bool {
        self.inner.nfs.has_lock_state(fh)
    }

    pub async fn test_lock_handle(
        &self,
        fh: &nfs_fh3,
        owner: u64,
        range: (u64, u64),
        write: bool,
    ) -> Result<Option<crate::LockConflict>> {
        self.inner.nfs.test_lock(fh, owner, range, write).await
    }

    /// Releases `owner`'s locks on the range after writing back what this
    /// client cached for the file.
    pub async fn unlock_handle(&self, fh: &nfs_fh3, owner: u64, range: (u64, u64)) -> Result<()> {
        self.inner.flush(&fh.data).await?;
        self.inner.nfs.unlock(fh, owner, range).await
    }

    pub async fn readlink_handle(&self, fh: &nfs_fh3) -> Result<Bytes> {
        self.inner.nfs.readlink(fh).await
    }

    pub async fn fsstat(&self, fh: &nfs_fh3) -> Result<FsStat> {
        self.inner.nfs.fsstat(fh).await
    }

    /// One READDIRPLUS page after `cookie`; the entries' handles and
    /// attributes go into the caches, so a following lookup or stat of
    /// each costs no call.
    ///
    /// A directory a delegation is held on is listed whole from its cache
    /// (or read into it), in one page whose cookies are places in that
    /// listing (`CACHED_VERF`).
    pub async fn readdir_page(&self, dir: &nfs_fh3, cookie: u64, cookieverf: cookieverf3) -> Result<DirPage> {
        if let Some(page) = self.delegated_page(dir, cookie, cookieverf).await? {
            return Ok(page);
        }
        let since = self.inner.caches.epoch();
        let ok = self.inner.nfs.readdirplus(dir, cookie, cookieverf, self.inner.settings.readdir_size).await?;
        for e in &ok.entries {
            if e.name[..] == b"."[..] || e.name[..] == b".."[..] {
                continue;
            }
            if let (Some(fh), Some(a), Ok(name)) = (&e.name_handle, &e.name_attributes, std::str::from_utf8(&e.name)) {
                self.inner.caches.put_entry_since(&dir.data, name, fh, a, ok.dir_attributes.as_ref(), since);
            }
        }
        if !ok.eof && ok.entries.is_empty() {
            return Err(Error::Invalid("READDIRPLUS returned no entries before EOF".into()));
        }
        Ok(DirPage { entries: ok.entries, cookieverf: ok.cookieverf, eof: ok.eof })
    }
}

//! The file API over delegated directories (NFSv4.1, RFC 8881 section
//! 10.9): listings, LOOKUPs and the children's GETATTRs answered from the
//! directory's cache with no call while the delegation is held, and the
//! server's notifications carried into the client's other caches and to
//! whoever listens (a mount's kernel caches).

use std::sync::Arc;

use bytes::Bytes;
use client_core::fattr::Fattr;
use proto::nfs3::{cookieverf3, nfs_fh3};
use proto::nfs4::nfsstat4;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::fs::Inner;
use crate::handles::DirPage;
use crate::nfs41::{DirHooks, CACHED_FIRST_COOKIE, CACHED_VERF};
use crate::results::ListEntry;

pub use client_core::v41::dirdeleg::Touched as DirNotice;

/// Told of each change the server notified, after the client's caches
/// took it: the directory's handle and what changed.
pub type DirListener = Arc<dyn Fn(&nfs_fh3, &[DirNotice]) + Send + Sync>;

impl Inner {
    /// This client changed `dir` (create, remove, rename): what is cached
    /// about it is no longer known to be true, here or in its delegation.
    pub fn changed_dir(&self, dir: &Bytes) {
        self.caches.changed_dir(dir);
        if let Some(n) = self.nfs.v41() {
            n.dir_changed_here(dir);
        }
    }

    /// Attributes of `fh` the server promised to report changes to as a
    /// child of a delegated directory (or one itself), however old.
    pub fn notified_attrs(&self, fh: &nfs_fh3) -> Option<Fattr> {
        let n = self.nfs.v41()?;
        if !n.attrs_notified(&fh.data) {
            return None;
        }
        let a = self.caches.attrs_any(&fh.data)?;
        n.dir_call_saved();
        Some(a)
    }

    /// A notification for `dir`: names it touched leave the name cache,
    /// attributes it brought replace the cached ones.
    fn dir_notified(&self, dir: &Bytes, touched: &[DirNotice]) {
        for t in touched {
            match t {
                DirNotice::Name(name) => {
                    self.caches.forget_name(dir, name);
                    // Its mtime moved; DIR_ATTRS brings the new one if asked.
                    self.caches.invalidate_attrs(dir);
                }
                DirNotice::Child { handle: Some(fh), attrs: Some(a), .. } => self.caches.put_attrs(fh, a),
                DirNotice::Child { handle: Some(fh), attrs: None, .. } => self.caches.invalidate_attrs(fh),
                DirNotice::Child { handle: None, name, .. } => {
                    // Not in the delegated cache: the name cache may know it.
                    if let Some((fh, _)) = std::str::from_utf8(name).ok().and_then(|n| self.caches.lookup(dir, n)) {
                        self.caches.invalidate_attrs(&fh.data);
                    }
                    self.caches.forget_name(dir, name);
                }
                DirNotice::Dir(Some(a)) => self.caches.put_attrs(dir, a),
                DirNotice::Dir(None) | DirNotice::All => self.caches.changed_dir(dir),
            }
        }
        if let Some(l) = self.dir_listener.get() {
            l(&nfs_fh3 { data: dir.clone() }, touched);
        }
    }
}

/// `all` (a listing numbered from [`CACHED_FIRST_COOKIE`]) after `cookie`.
fn page_after(all: Vec<ListEntry>, cookie: u64) -> DirPage {
    let entries = all.into_iter().filter(|e| e.cookie > cookie).collect();
    DirPage { entries, cookieverf: CACHED_VERF, eof: true }
}

fn numbered(mut all: Vec<ListEntry>) -> Vec<ListEntry> {
    for (i, e) in all.iter_mut().enumerate() {
        e.cookie = CACHED_FIRST_COOKIE + i as u64;
    }
    all
}

impl Client {
    /// Makes the session's directory delegations reach this client's
    /// caches: notifications update them, a recall reads the directory
    /// once more before the delegation goes.
    pub(crate) fn install_dir_hooks(inner: &Arc<Inner>) {
        let Some(n) = inner.nfs.v41() else { return };
        let weak = Arc::downgrade(inner);
        let on_notify = weak.clone();
        n.set_dir_hooks(DirHooks {
            notified: Arc::new(move |dir, touched| {
                if let Some(inner) = on_notify.upgrade() {
                    inner.dir_notified(dir, touched);
                }
            }),
            revalidate: Arc::new(move |dir| {
                let weak = weak.clone();
                Box::pin(async move {
                    if let Some(inner) = weak.upgrade() {
                        let c = Client { inner };
                        if let Err(e) = c.list_from_server(&nfs_fh3 { data: dir }).await {
                            tracing::debug!("reading a recalled directory again: {e}");
                        }
                    }
                })
            }),
        });
    }

    /// Calls `f` after each change the server notified in a delegated
    /// directory has reached this client's caches (a mount drops the
    /// kernel's entries and attributes with it). One listener per client.
    pub fn on_dir_change(&self, f: DirListener) {
        let _ = self.inner.dir_listener.set(f);
    }

    /// Every entry of `dir` from the server (READDIR pages until EOF),
    /// into the name and attribute caches, and the directory's attributes.
    pub(crate) async fn list_from_server(&self, dir: &nfs_fh3) -> Result<(Vec<ListEntry>, Option<Fattr>)> {
        let mut out = Vec::new();
        let (mut cookie, mut verf, mut dir_attrs) = (0u64, [0u8; 8], None);
        loop {
            let since = self.inner.caches.epoch();
            let ok = self.inner.nfs.readdirplus(dir, cookie, verf, self.inner.settings.readdir_size).await?;
            verf = ok.cookieverf;
            let named = |e: &&ListEntry| &e.name[..] != b"." && &e.name[..] != b"..";
            let found = ok.entries.iter().filter(named).filter_map(|e| match (&e.name_handle, &e.name_attributes) {
                (Some(fh), Some(a)) => Some((&e.name[..], fh, a)),
                _ => None,
            });
            self.inner.caches.put_entries_since(&dir.data, found, ok.dir_attributes.as_ref(), since);
            if ok.dir_attributes.is_some() {
                dir_attrs = ok.dir_attributes.clone();
            }
            if let Some(e) = ok.entries.last() {
                cookie = e.cookie;
            }
            let empty = ok.entries.is_empty();
            out.extend(ok.entries.into_iter().filter(|e| named(&e)));
            if ok.eof {
                return Ok((out, dir_attrs));
            }
            if empty {
                return Err(Error::Invalid("READDIRPLUS returned no entries before EOF".into()));
            }
        }
    }

    /// The whole listing of `dir` when a delegation is held on it,
    /// numbered from [`CACHED_FIRST_COOKIE`]: from its cache, or read from
    /// the server into it. None without a delegation.
    pub(crate) async fn delegated_listing(&self, dir: &nfs_fh3) -> Result<Option<Vec<ListEntry>>> {
        let Some(n) = self.inner.nfs.v41().filter(|n| n.has_dir_delegation(&dir.data)) else {
            return Ok(None);
        };
        if let Some(cached) = n.cached_listing(&dir.data) {
            // Each entry's attributes as the attribute cache has them: it
            // drops a file's at this client's own writes, until the
            // server's notification brings the new ones.
            let entries: Option<Vec<ListEntry>> = cached
                .into_iter()
                .map(|(name, fh, _)| {
                    let a = self.inner.caches.attrs_any(&fh)?;
                    Some(ListEntry {
                        fileid: a.fileid,
                        name,
                        cookie: 0,
                        name_attributes: Some(a),
                        name_handle: Some(nfs_fh3 { data: fh }),
                    })
                })
                .collect();
            if let Some(entries) = entries {
                n.dir_call_saved();
                return Ok(Some(numbered(entries)));
            }
        }
        let mark = n.dir_fill_mark(&dir.data);
        let (entries, dir_attrs) = self.list_from_server(dir).await?;
        if let Some(mark) = mark {
            n.dir_filled(&dir.data, mark, &entries, dir_attrs);
        }
        Ok(Some(numbered(entries)))
    }

    /// A page of a listing of `dir` when a delegation is held on it (see
    /// [`Client::readdir_page`]): the whole listing after `cookie`. None:
    /// the server's pages are read as usual.
    pub(crate) async fn delegated_page(
        &self,
        dir: &nfs_fh3,
        cookie: u64,
        verf: cookieverf3,
    ) -> Result<Option<DirPage>> {
        let Some(n) = self.inner.nfs.v41() else { return Ok(None) };
        if cookie == 0 {
            n.dir_listing(&dir.data).await;
        } else if verf != CACHED_VERF {
            return Ok(None);
        }
        if let Some(all) = self.delegated_listing(dir).await? {
            return Ok(Some(page_after(all, cookie)));
        }
        if verf == CACHED_VERF {
            // The delegation went between two pages of a listing from its
            // cache: the server's listing, numbered the same way.
            let (all, _) = self.list_from_server(dir).await?;
            return Ok(Some(page_after(numbered(all), cookie)));
        }
        Ok(None)
    }

    /// `name` in `dir` from a delegated directory's cache: the child and
    /// its attributes, NOENT when the whole listing lacks it, None when
    /// the server must be asked.
    pub(crate) fn delegated_lookup(&self, dir: &nfs_fh3, name: &str) -> Result<Option<(nfs_fh3, Fattr)>> {
        let Some(n) = self.inner.nfs.v41() else { return Ok(None) };
        match n.cached_lookup(&dir.data, name.as_bytes()) {
            Some(Some(fh)) => {
                let Some(a) = self.inner.caches.attrs_any(&fh) else { return Ok(None) };
                n.dir_call_saved();
                Ok(Some((nfs_fh3 { data: fh }, a)))
            }
            Some(None) => {
                n.dir_call_saved();
                Err(Error::Nfs4 { op: "LOOKUP", status: nfsstat4::NFS4ERR_NOENT })
            }
            None => Ok(None),
        }
    }
}

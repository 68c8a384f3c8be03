//! UNLINK and RENAME through the mount: the object a name named is known
//! ([`crate::names`]), so an open file losing its last name is hidden
//! instead ([`crate::unlinked`]), and the object whose link count or ctime
//! changed has its cached attributes dropped, whether or not the client
//! still had the name cached.

use std::sync::Arc;

use client::Client;
use fuser::Errno;
use proto::nfs3::{ftype3, nfs_fh3, nfsstat3};

use crate::files::OpenFiles;
use crate::inodes::Inodes;
use crate::names::Names;
use crate::unlinked::{Hidden, Unlinked};

/// Hidden names tried before giving up when each is taken already.
const HIDDEN_NAME_TRIES: u32 = 16;

/// What removing and renaming touch, cloned into each request's task.
#[derive(Clone)]
pub struct Namespace {
    pub client: Arc<Client>,
    pub inodes: Arc<Inodes>,
    pub files: Arc<OpenFiles>,
    pub names: Arc<Names>,
    pub unlinked: Arc<Unlinked>,
}

fn nfs_error(proc_: &'static str, status: nfsstat3) -> client::Error {
    client::Error::Nfs { proc: proc_, status }
}

impl Namespace {
    /// The node `name` in `parent` names and its handle, as the kernel
    /// knows it.
    fn node(&self, parent: u64, name: &str) -> Option<(u64, nfs_fh3)> {
        let ino = self.names.get(parent, name)?;
        Some((ino, self.inodes.handle(ino)?))
    }

    /// unlink(2) of `name` in `parent` (handle `dir`).
    pub async fn unlink(&self, parent: u64, dir: nfs_fh3, name: String) -> Result<(), Errno> {
        let node = self.node(parent, &name);
        if let Some((ino, fh)) = &node {
            if self.unlinked.is_hidden(*ino) {
                // The hidden name of an open file: Linux says EBUSY too.
                return Err(Errno::EBUSY);
            }
            if self.hide_if_open(parent, &dir, &name, *ino, fh).await.map_err(|e| crate::attr::errno(&e))? {
                return Ok(());
            }
        }
        self.client.remove_in(&dir, &name).await.map_err(|e| crate::attr::errno(&e))?;
        self.names.unnamed(parent, &name);
        if let Some((_, fh)) = node {
            // One link fewer, and a new ctime.
            self.client.forget_attrs(&fh);
        }
        Ok(())
    }

    /// rename(2): `name` in `parent` (handle `from`) to `to_name` in
    /// `to_parent` (handle `to`). An open file renamed over is hidden
    /// first, as by unlink.
    pub async fn rename(
        &self,
        (parent, from, name): (u64, nfs_fh3, String),
        (to_parent, to, to_name): (u64, nfs_fh3, String),
    ) -> Result<(), Errno> {
        let moved = self.node(parent, &name);
        let replaced = self.node(to_parent, &to_name).filter(|(ino, _)| moved.as_ref().map(|m| m.0) != Some(*ino));
        if let Some((ino, fh)) = &replaced {
            self.hide_if_open(to_parent, &to, &to_name, *ino, fh).await.map_err(|e| crate::attr::errno(&e))?;
        }
        self.client.rename_in(&from, &name, &to, &to_name).await.map_err(|e| crate::attr::errno(&e))?;
        self.names.renamed(parent, &name, to_parent, &to_name);
        for (_, fh) in moved.iter().chain(replaced.iter()) {
            // The moved object's ctime changed; the replaced one lost a link.
            self.client.forget_attrs(fh);
        }
        Ok(())
    }

    /// Renames `name` to a hidden name when it is the last name of a file
    /// open through this mount; returns whether it did.
    async fn hide_if_open(
        &self,
        parent: u64,
        dir: &nfs_fh3,
        name: &str,
        ino: u64,
        fh: &nfs_fh3,
    ) -> client::Result<bool> {
        let Some(file) = self.files.get(ino) else {
            return Ok(false);
        };
        // An NFSv4.1 server may promise at OPEN to keep the file for its
        // open after the last name goes: then it is removed for real, and
        // fstat shows no links, as on a local file system. The file's open
        // is made on the server now if its first I/O has not made one yet
        // (nothing to do over NFSv3, which has no opens).
        file.lock().await.open_on_server(false).await?;
        if self.client.preserves_unlinked(fh) {
            return Ok(false);
        }
        // Fresh: a link another client removed meanwhile would make this
        // the last name after all.
        let a = self.client.getattr_fresh(fh).await?;
        if a.r#type != ftype3::NF3REG || a.nlink > 1 {
            return Ok(false);
        }
        let hidden = self.free_hidden_name(dir, a.fileid).await?;
        self.client.rename_in(dir, name, dir, &hidden).await?;
        self.names.renamed(parent, name, parent, &hidden);
        self.unlinked.hide(ino, Hidden { parent, dir: dir.clone(), name: hidden });
        self.client.forget_attrs(fh);
        Ok(true)
    }

    /// A hidden name nothing in `dir` has yet.
    async fn free_hidden_name(&self, dir: &nfs_fh3, fileid: u64) -> client::Result<String> {
        for _ in 0..HIDDEN_NAME_TRIES {
            let name = self.unlinked.new_name(fileid);
            match self.client.lookup_in(dir, &name).await {
                Ok(_) => continue,
                Err(e) if e.status() == Some(nfsstat3::NFS3ERR_NOENT) => return Ok(name),
                Err(e) => return Err(e),
            }
        }
        Err(nfs_error("RENAME", nfsstat3::NFS3ERR_EXIST))
    }

    /// The file `ino` was closed for the last time: its hidden name, if it
    /// has one, goes now.
    pub async fn closed(&self, ino: u64) {
        if let Some(h) = self.unlinked.take(ino) {
            self.remove_hidden(h).await;
        }
    }

    /// The mount ends: every hidden name goes, whoever still holds it.
    pub async fn remove_all_hidden(&self) {
        for h in self.unlinked.take_all() {
            self.remove_hidden(h).await;
        }
    }

    async fn remove_hidden(&self, h: Hidden) {
        match self.client.remove_in(&h.dir, &h.name).await {
            Ok(()) => {
                self.names.unnamed(h.parent, &h.name);
            }
            // Removed already (by hand, or by another client).
            Err(e) if e.status() == Some(nfsstat3::NFS3ERR_NOENT) => {}
            Err(e) => tracing::warn!(name = %h.name, error = %e, "could not remove the hidden name of a closed file"),
        }
    }
}

//! Directory listings through the mount: OPENDIR, READDIR and
//! READDIRPLUS, answered from [`crate::dirs::Listings`] pages, with `.`
//! and `..` where the server sends none (NFSv4).

use std::ffi::OsStr;
use std::future::Future;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use client::{DirPage, Fattr};
use fuser::{Errno, FileHandle, FopenFlags, INodeNo, ReplyDirectory, ReplyDirectoryPlus, ReplyOpen};
use proto::nfs3::{ftype3, nfs_fh3};

use crate::attr::{errno, file_attr, kind};
use crate::dirs::{Dots, Listings};
use crate::fs::{NfsFs, GENERATION};

impl NfsFs {
    /// The directory `ino` (handle `fh`) and the one it is named in, for
    /// the `.` and `..` of its listings; itself as its parent at the
    /// mount's root (or when the kernel holds no name of it).
    fn dots(&self, ino: INodeNo, fh: nfs_fh3) -> Dots {
        let parent = self.names.parent_of(ino.0).and_then(|p| Some((p, self.inodes.handle(p)?)));
        let parent = parent.unwrap_or_else(|| (ino.0, fh.clone()));
        Dots { fh: (ino.0, fh), parent }
    }

    pub(crate) fn list_open(&self, ino: INodeNo, reply: ReplyOpen) {
        // ENOSYS (once) and the kernel opens directories itself from then
        // on, keeping their listings (see `MountSettings::no_opendir`).
        if self.settings.no_opendir {
            return reply.error(Errno::ENOSYS);
        }
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let id = self.dirs.open();
        let (c, files) = (self.client.clone(), self.files.clone());
        self.spawn(async move {
            // The kernel keeps the listing it read (FOPEN_CACHE_DIR) and
            // reuses it at the next open while the directory's attributes
            // (through the attribute cache, as an NFS client treats
            // directories) say it is unchanged; a change made through the
            // mount drops it in the kernel itself.
            let a = match c.getattr(&fh).await {
                Ok(a) => a,
                Err(e) => return reply.error(errno(&e)),
            };
            let mut flags = FopenFlags::FOPEN_CACHE_DIR;
            if files.unchanged_since_last_open(ino.0, &a) {
                flags |= FopenFlags::FOPEN_KEEP_CACHE;
            }
            reply.opened(FileHandle(id), flags);
        });
    }

    /// The page after `offset` of listing `fh` of directory `ino`, to
    /// await on the runtime, and the listing's key.
    fn page_of(
        &self,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
    ) -> Result<(u64, impl Future<Output = client::Result<DirPage>> + Send + 'static), Errno> {
        let dir = self.dots(ino, self.handle(ino)?);
        let (c, dirs) = (self.client.clone(), self.dirs.clone());
        let key = Listings::key(ino.0, fh.0);
        Ok((key, async move { dirs.page(&c, key, &dir, offset).await }))
    }

    pub(crate) fn list(&self, ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let (key, page) = match self.page_of(ino, fh, offset) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let (inodes, dirs) = (self.inodes.clone(), self.dirs.clone());
        self.spawn(async move {
            let page = match page.await {
                Ok(p) => p,
                Err(e) => return reply.error(errno(&e)),
            };
            let mut all = true;
            for e in &page.entries {
                // An entry the kernel never looked up has no node id yet:
                // its file id stands in (readdir ids are only reported).
                let id = e.name_handle.as_ref().and_then(|h| inodes.known(h)).unwrap_or(e.fileid);
                let t = e.name_attributes.as_ref().map_or(fuser::FileType::RegularFile, |a| kind(a.r#type));
                if reply.add(INodeNo(id), e.cookie, t, OsStr::from_bytes(&e.name)) {
                    all = false;
                    break;
                }
            }
            if all && page.eof {
                dirs.ended(key, page.entries.last().map_or(offset, |e| e.cookie));
            }
            reply.ok();
        });
    }

    pub(crate) fn list_plus(&self, ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectoryPlus) {
        let (key, page) = match self.page_of(ino, fh, offset) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let (c, inodes, dirs, ttl) =
            (self.client.clone(), self.inodes.clone(), self.dirs.clone(), self.settings.attr_ttl);
        let names = self.names.clone();
        let lookup_dir = self.handle(ino).ok();
        self.spawn(async move {
            let page = match page.await {
                Ok(p) => p,
                Err(e) => return reply.error(errno(&e)),
            };
            let mut all = true;
            for e in &page.entries {
                let name = OsStr::from_bytes(&e.name);
                let dot = e.name[..] == b"."[..] || e.name[..] == b".."[..];
                let full = match (&e.name_handle, &e.name_attributes) {
                    // `.` and `..`: the kernel takes no node from them.
                    (_, a) if dot => {
                        let a = a.clone().unwrap_or(Fattr { r#type: ftype3::NF3DIR, ..Default::default() });
                        reply.add(INodeNo(0), e.cookie, name, &Duration::ZERO, &file_attr(e.fileid, &a), GENERATION)
                    }
                    (Some(h), Some(a)) => {
                        // The kernel counts a lookup for every entry but
                        // `.` and `..` it accepts; one it has no room for
                        // is given back.
                        let id = inodes.remember(h);
                        let full = reply.add(INodeNo(id), e.cookie, name, &ttl, &file_attr(id, a), GENERATION);
                        if full {
                            inodes.forget(id, 1);
                        } else if let Some(name) = name.to_str() {
                            names.named(ino.0, name, id);
                        }
                        full
                    }
                    _ => {
                        // The server gave no handle or attributes for the
                        // entry (an attribute error): an entry's id is the
                        // node the kernel would take, so it is looked up
                        // rather than listed under a node id nothing knows.
                        let found = match (name.to_str(), &lookup_dir) {
                            (Some(n), Some(d)) => c.lookup_in(d, n).await.ok(),
                            _ => None,
                        };
                        let Some((h, a)) = found else { continue };
                        let id = inodes.remember(&h);
                        let full = reply.add(INodeNo(id), e.cookie, name, &ttl, &file_attr(id, &a), GENERATION);
                        if full {
                            inodes.forget(id, 1);
                        } else if let Some(name) = name.to_str() {
                            names.named(ino.0, name, id);
                        }
                        full
                    }
                };
                if full {
                    all = false;
                    break;
                }
            }
            if all && page.eof {
                dirs.ended(key, page.entries.last().map_or(offset, |e| e.cookie));
            }
            reply.ok();
        });
    }
}

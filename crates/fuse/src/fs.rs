//! The FUSE operations, each answered by a task on the client's runtime so
//! the kernel's request loop never waits on the network: many calls are
//! in flight at once, as from an NFS client in the kernel.

use std::ffi::OsStr;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use client::{Client, Fattr, NodeKind, OpenOptions};
use fuser::{
    Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use proto::nfs3::{nfs_fh3, specdata3};

use crate::attr::{errno, file_attr, sattr};
use crate::dirs::Listings;
use crate::files::OpenFiles;
use crate::inodes::Inodes;
use crate::locks::LockRequest;
use crate::names::Names;
use crate::remove::Namespace;
use crate::unlinked::Unlinked;

/// Node ids are not reused, so the kernel never needs a generation.
pub(crate) const GENERATION: Generation = Generation(0);

/// Settings of one mount.
#[derive(Debug, Clone)]
pub struct MountSettings {
    /// How long the kernel may use attributes and names without asking
    /// again (the NFS client's `actimeo`). Default 1 s.
    pub attr_ttl: Duration,
    /// Largest write the kernel hands over at once. Default 1 MiB.
    pub max_write: u32,
    /// The kernel's readahead window for files on the mount (capped by
    /// the kernel). Default 1 MiB.
    pub max_readahead: u32,
    /// Ask the kernel to send no OPENDIR/RELEASEDIR: it then keeps each
    /// directory's listing and revalidates it by the directory's mtime
    /// (attributes older than `attr_ttl` are fetched again), two trips
    /// through the mount fewer per directory listed. false: every opendir
    /// asks whether the directory changed. Default true.
    pub no_opendir: bool,
}

impl Default for MountSettings {
    fn default() -> Self {
        MountSettings { attr_ttl: Duration::from_secs(1), max_write: 1 << 20, max_readahead: 1 << 20, no_opendir: true }
    }
}

pub struct NfsFs {
    pub(crate) client: Arc<Client>,
    pub(crate) rt: tokio::runtime::Handle,
    pub(crate) inodes: Arc<Inodes>,
    pub(crate) files: Arc<OpenFiles>,
    /// Directory listings in progress.
    pub(crate) dirs: Arc<Listings>,
    /// The names the kernel holds, and open files whose name went.
    pub(crate) names: Arc<Names>,
    pub(crate) unlinked: Arc<Unlinked>,
    pub(crate) settings: MountSettings,
    /// Tells the kernel to drop what it cached; set once the session runs.
    pub(crate) notifier: Arc<OnceLock<fuser::Notifier>>,
}

fn utf8(name: &OsStr) -> Result<String, Errno> {
    // The client's names are UTF-8; a name that is not cannot be sent.
    name.to_str().map(str::to_owned).ok_or(Errno::EINVAL)
}

impl NfsFs {
    pub fn new(client: Arc<Client>, rt: tokio::runtime::Handle, settings: MountSettings) -> NfsFs {
        let inodes = Arc::new(Inodes::new(client.root().clone()));
        let (names, notifier) = (Arc::<Names>::default(), Arc::<OnceLock<fuser::Notifier>>::default());
        // Changes notified in delegated directories reach the kernel.
        crate::notify::listen(&client, inodes.clone(), names.clone(), notifier.clone());
        NfsFs {
            client,
            rt,
            inodes,
            files: Arc::new(OpenFiles::default()),
            dirs: Arc::default(),
            names,
            unlinked: Arc::default(),
            settings,
            notifier,
        }
    }

    /// Where the session's notifier goes once the mount runs.
    pub fn notifier_slot(&self) -> Arc<OnceLock<fuser::Notifier>> {
        self.notifier.clone()
    }

    /// What removals and renames touch; also what removes the hidden
    /// names of files still open when the mount ends.
    pub fn namespace(&self) -> Namespace {
        Namespace {
            client: self.client.clone(),
            inodes: self.inodes.clone(),
            files: self.files.clone(),
            names: self.names.clone(),
            unlinked: self.unlinked.clone(),
        }
    }

    pub(crate) fn spawn(&self, f: impl Future<Output = ()> + Send + 'static) {
        self.rt.spawn(f);
    }

    /// A lock request on the open file `ino`.
    fn lock_request(
        &self,
        ino: INodeNo,
        owner: LockOwner,
        start: u64,
        end: u64,
        typ: i32,
    ) -> Result<LockRequest, Errno> {
        let file = self.files.get(ino.0).ok_or(Errno::EBADF)?;
        let (client, fh) = (self.client.clone(), self.handle(ino)?);
        Ok(LockRequest { client, fh, file, owner: owner.0, start, end, typ })
    }

    pub(crate) fn handle(&self, ino: INodeNo) -> Result<nfs_fh3, Errno> {
        self.inodes.handle(ino.0).ok_or(Errno::ESTALE)
    }

    /// Runs `make` (which looks up or creates `name` in `parent`) and
    /// replies with the entry, counting the kernel's lookup of the node
    /// and remembering the name it now holds.
    fn make_entry<F>(
        &self,
        parent: INodeNo,
        name: &str,
        reply: ReplyEntry,
        make: impl FnOnce(Arc<Client>, nfs_fh3) -> F,
    ) where
        F: Future<Output = client::Result<(nfs_fh3, Fattr)>> + Send + 'static,
    {
        let dir = match self.handle(parent) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let (inodes, names, unlinked, ttl) =
            (self.inodes.clone(), self.names.clone(), self.unlinked.clone(), self.settings.attr_ttl);
        let name = name.to_string();
        let fut = make(self.client.clone(), dir);
        self.spawn(async move {
            match fut.await {
                Ok((fh, a)) => {
                    let ino = inodes.remember(&fh);
                    names.named(parent.0, &name, ino);
                    reply.entry(&ttl, &unlinked.shown_attr(ino, &a), GENERATION);
                }
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    /// Runs `op` on the directory `parent` and replies with its outcome.
    fn dir_op<F>(&self, parent: INodeNo, reply: ReplyEmpty, op: impl FnOnce(Arc<Client>, nfs_fh3) -> F)
    where
        F: Future<Output = client::Result<()>> + Send + 'static,
    {
        let dir = match self.handle(parent) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let fut = op(self.client.clone(), dir);
        self.spawn(async move {
            match fut.await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    /// Writes back what is cached for `ino`: through its open file, or
    /// the client's cache when none is open.
    async fn write_back(client: &Client, files: &OpenFiles, ino: u64, fh: &nfs_fh3) -> client::Result<()> {
        match files.get(ino) {
            Some(f) => f.lock().await.flush().await,
            None => client.flush_handle(fh).await,
        }
    }
}

impl Filesystem for NfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        use fuser::InitFlags as F;
        // Each capability on its own: an old kernel lacking one still
        // gets the others.
        for cap in [
            F::FUSE_ASYNC_READ,
            F::FUSE_BIG_WRITES,
            F::FUSE_MAX_PAGES,
            F::FUSE_PARALLEL_DIROPS,
            F::FUSE_DO_READDIRPLUS,
            F::FUSE_READDIRPLUS_AUTO,
            F::FUSE_CACHE_SYMLINKS,
            // Reads check the attributes (when the kernel holds them no
            // longer valid) and drop cached pages of a changed file.
            F::FUSE_AUTO_INVAL_DATA,
        ] {
            let _ = config.add_capabilities(cap);
        }
        if self.settings.no_opendir {
            let _ = config.add_capabilities(F::FUSE_NO_OPENDIR_SUPPORT);
        }
        // Locks go to the server where it takes them (NFSv4.1, or NLM
        // over NFSv3); otherwise the kernel keeps them on this machine.
        if self.client.locks_at_server() {
            let _ = config.add_capabilities(F::FUSE_POSIX_LOCKS);
            let _ = config.add_capabilities(F::FUSE_FLOCK_LOCKS);
        }
        let _ = config.set_max_write(self.settings.max_write).or_else(|max| config.set_max_write(max));
        // The kernel's readahead window bounds how much of a sequential
        // read is asked for ahead of the program; as large as it allows.
        let _ = config.set_max_readahead(self.settings.max_readahead).or_else(|max| config.set_max_readahead(max));
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let name = match utf8(name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        self.make_entry(parent, &name.clone(), reply, |c, dir| async move { c.lookup_in(&dir, &name).await });
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inodes.forget(ino.0, nlookup);
        if self.inodes.handle(ino.0).is_none() {
            self.files.forget(ino.0);
            self.dirs.forget_node(ino.0);
            self.names.forget_node(ino.0);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let (c, files, ttl) = (self.client.clone(), self.files.clone(), self.settings.attr_ttl);
        let unlinked = self.unlinked.clone();
        self.spawn(async move {
            // As the Linux NFS client: writes still cached here would make
            // the server's size and mtime wrong, so they go first.
            let r = if c.has_cached_writes(&fh) {
                match Self::write_back(&c, &files, ino.0, &fh).await {
                    Ok(()) => c.getattr_fresh(&fh).await,
                    Err(e) => Err(e),
                }
            } else {
                c.getattr(&fh).await
            };
            match r {
                Ok(a) => reply.attr(&ttl, &unlinked.shown_attr(ino.0, &a)),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        open_file: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let set = match sattr(mode, uid, gid, size, atime, mtime) {
            Ok(set) => set,
            Err(e) => return reply.error(e),
        };
        let (c, files, ttl) = (self.client.clone(), self.files.clone(), self.settings.attr_ttl);
        let unlinked = self.unlinked.clone();
        let through_open = open_file.is_some();
        self.spawn(async move {
            if size.is_some() {
                if let Some(f) = files.get(ino.0) {
                    // Cached writes go out before the size changes, and
                    // data read ahead past the new end is forgotten.
                    let mut f = f.lock().await;
                    if let Err(e) = f.flush().await {
                        return reply.error(errno(&e));
                    }
                    f.forget_readahead();
                    // ftruncate(2) (the kernel names the open file): the
                    // size changes under this file's open, which must then
                    // be one for writing; an open made by a first read is
                    // not, and a server refuses a size change under it
                    // (NFS4ERR_OPENMODE).
                    if through_open {
                        if let Err(e) = f.open_on_server(true).await {
                            return reply.error(errno(&e));
                        }
                    }
                }
            }
            match c.setattr_handle(&fh, set).await {
                Ok(a) => reply.attr(&ttl, &unlinked.shown_attr(ino.0, &a)),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let c = self.client.clone();
        self.spawn(async move {
            match c.readlink_handle(&fh).await {
                Ok(target) => reply.data(&target),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    fn mknod(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, rdev: u32, reply: ReplyEntry) {
        let name = match utf8(name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let attrs = crate::attr::owned(req, self.client.kerberos(), Some(mode & !umask & 0o7777));
        let spec = specdata3 { specdata1: libc::major(rdev.into()), specdata2: libc::minor(rdev.into()) };
        let kind = match mode & libc::S_IFMT {
            libc::S_IFREG => None,
            libc::S_IFIFO => Some(NodeKind::Fifo),
            libc::S_IFSOCK => Some(NodeKind::Socket),
            libc::S_IFCHR => Some(NodeKind::Char(spec)),
            libc::S_IFBLK => Some(NodeKind::Block(spec)),
            _ => return reply.error(Errno::EINVAL),
        };
        self.make_entry(parent, &name.clone(), reply, |c, dir| async move {
            match kind {
                None => c.mknod_file_in(&dir, &name, attrs).await,
                Some(kind) => c.mknod_in(&dir, &name, kind, attrs).await,
            }
        });
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let name = match utf8(name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let attrs = crate::attr::owned(req, self.client.kerberos(), Some(mode & !umask & 0o7777));
        self.make_entry(parent, &name.clone(), reply, |c, dir| async move { c.mkdir_in(&dir, &name, attrs).await });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = match utf8(name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let dir = match self.handle(parent) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let ns = self.namespace();
        self.spawn(async move {
            match ns.unlink(parent.0, dir, name).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let name = match utf8(name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let names = self.names.clone();
        self.dir_op(parent, reply, move |c, dir| async move {
            c.rmdir_in(&dir, &name).await?;
            names.unnamed(parent.0, &name);
            Ok(())
        });
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let name = match utf8(link_name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let target = std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec();
        let attrs = crate::attr::owned(req, self.client.kerberos(), None);
        self.make_entry(parent, &name.clone(), reply, |c, dir| async move {
            c.symlink_in(&dir, &name, &target, attrs).await
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (name, newname) = match (utf8(name), utf8(newname)) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return reply.error(Errno::EINVAL),
        };
        // NFSv3 RENAME always replaces; an exchange cannot be said at all.
        if flags.intersects(RenameFlags::RENAME_EXCHANGE | RenameFlags::RENAME_WHITEOUT) {
            return reply.error(Errno::EINVAL);
        }
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        let to = match self.handle(newparent) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let from = match self.handle(parent) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let ns = self.namespace();
        self.spawn(async move {
            if noreplace {
                // Checked, not atomic: NFSv3 has no exclusive rename.
                match ns.client.lookup_in(&to, &newname).await {
                    Ok(_) => return reply.error(Errno::EEXIST),
                    Err(e) if e.status() == Some(proto::nfs3::nfsstat3::NFS3ERR_NOENT) => {}
                    Err(e) => return reply.error(errno(&e)),
                }
            }
            match ns.rename((parent.0, from, name), (newparent.0, to, newname)).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        });
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let name = match utf8(newname) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        self.make_entry(newparent, &name.clone(), reply, |c, dir| async move {
            let a = c.link_in(&fh, &dir, &name).await?;
            Ok((fh, a))
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let (c, files, notifier) = (self.client.clone(), self.files.clone(), self.notifier.clone());
        self.spawn(async move {
            // Close-to-open: fresh attributes at every open, and the
            // kernel keeps its cached pages only if the file is unchanged.
            let a = match c.getattr_fresh(&fh).await {
                Ok(a) => a,
                Err(e) => return reply.error(errno(&e)),
            };
            let keep = files.unchanged_since_last_open(ino.0, &a);
            if !keep {
                // The size and times the kernel holds (from a lookup or a
                // listing) may predate the change: it asks again before
                // the next read. Attributes only, so no page lock is taken
                // while the kernel waits for this open.
                if let Some(n) = notifier.get() {
                    let _ = n.inval_inode(INodeNo(ino.0), -1, 0);
                }
            }
            files.open(ino.0, || c.open_handle(fh, a, OpenOptions::read_write()));
            let flags = if keep { FopenFlags::FOPEN_KEEP_CACHE } else { FopenFlags::empty() };
            reply.opened(FileHandle(ino.0), flags);
        });
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let Some(file) = self.files.get(ino.0) else { return reply.error(Errno::EBADF) };
        self.spawn(async move {
            let mut buf = vec![0u8; size as usize];
            match file.lock().await.read(offset, &mut buf).await {
                Ok(n) => match buf.get(..n) {
                    Some(data) => reply.data(data),
                    None => reply.error(Errno::EIO),
                },
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let Some(file) = self.files.get(ino.0) else { return reply.error(Errno::EBADF) };
        let data = data.to_vec();
        // O_SYNC and O_DSYNC writes are stable before write(2) returns.
        let sync = flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0;
        self.spawn(async move {
            let mut f = file.lock().await;
            let mut r = f.write(offset, &data).await;
            if sync && r.is_ok() {
                r = f.flush().await;
            }
            match r {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    /// close(2) of one descriptor: what was written through the mount goes
    /// to the server now, and close(2) reports it if that fails.
    fn flush(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, lock_owner: LockOwner, reply: ReplyEmpty) {
        let Some(file) = self.files.get(ino.0) else { return reply.ok() };
        let (c, fh) = (self.client.clone(), self.handle(ino));
        self.spawn(async move {
            if let Err(e) = file.lock().await.flush().await {
                return reply.error(errno(&e));
            }
            // close(2) drops the caller's POSIX locks on the file.
            match fh {
                Ok(fh) => match crate::locks::release_owner(&c, &fh, lock_owner.0).await {
                    Ok(()) => reply.ok(),
                    Err(e) => reply.error(e),
                },
                Err(_) => reply.ok(),
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // The flock locks of the open file description go with it (the
        // kernel names their owner only then), before the file is closed.
        let flock = lock_owner.zip(self.handle(ino).ok());
        let (c, file, ns) = (self.client.clone(), self.files.release(ino.0), self.namespace());
        self.spawn(async move {
            if let Some((owner, fh)) = flock {
                let _ = crate::locks::release_owner(&c, &fh, owner.0).await;
            }
            match file.map(crate::files::close_last) {
                Some(closing) => {
                    let r = closing.await;
                    ns.closed(ino.0).await;
                    match r {
                        Ok(()) => reply.ok(),
                        Err(e) => reply.error(errno(&e)),
                    }
                }
                None => reply.ok(),
            }
        });
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let (c, files) = (self.client.clone(), self.files.clone());
        self.spawn(async move {
            match Self::write_back(&c, &files, ino.0, &fh).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.list_open(ino, reply);
    }

    // Listings are in listing.rs.
    fn readdir(&self, _req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, reply: ReplyDirectory) {
        self.list(ino, fh, offset, reply);
    }

    fn readdirplus(&self, _req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, reply: ReplyDirectoryPlus) {
        self.list_plus(ino, fh, offset, reply);
    }

    // The NFSv4.2 calls are in v42.rs (ENOSYS without NFSv4.2).
    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: fuser::ReplyXattr) {
        self.v42_getxattr(ino, name, size, reply);
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: fuser::ReplyXattr) {
        self.v42_listxattr(ino, size, reply);
    }

    fn setxattr(&self, _: &Request, ino: INodeNo, name: &OsStr, v: &[u8], flags: i32, _: u32, reply: ReplyEmpty) {
        self.v42_setxattr(ino, name, v, flags, reply);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.v42_removexattr(ino, name, reply);
    }

    fn fallocate(&self, _: &Request, ino: INodeNo, _: FileHandle, off: u64, len: u64, mode: i32, reply: ReplyEmpty) {
        self.v42_fallocate(ino, off, len, mode, reply);
    }

    fn lseek(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: i64, whence: i32, reply: ReplyLseek) {
        self.v42_lseek(ino, offset, whence, reply);
    }

    fn copy_file_range(
        &self,
        _req: &Request,
        ino_in: INodeNo,
        _fh_in: FileHandle,
        offset_in: u64,
        ino_out: INodeNo,
        _fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        flags: fuser::CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        self.v42_copy_file_range((ino_in, offset_in), (ino_out, offset_out), len, flags, reply);
    }

    /// fcntl(F_GETLK): over NFSv4.1, LOCKT at the server.
    fn getlk(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        lock_owner: LockOwner,
        start: u64,
        end: u64,
        typ: i32,
        pid: u32,
        reply: fuser::ReplyLock,
    ) {
        match self.lock_request(ino, lock_owner, start, end, typ) {
            Ok(r) => self.spawn(crate::locks::test(r, pid, reply)),
            Err(e) => reply.error(e),
        }
    }

    /// fcntl(F_SETLK/F_SETLKW) and flock(2): over NFSv4.1, LOCK/LOCKU.
    fn setlk(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        lock_owner: LockOwner,
        start: u64,
        end: u64,
        typ: i32,
        _pid: u32,
        sleep: bool,
        reply: ReplyEmpty,
    ) {
        match self.lock_request(ino, lock_owner, start, end, typ) {
            Ok(r) => self.spawn(crate::locks::set(r, sleep, reply)),
            Err(e) => reply.error(e),
        }
    }

    /// No file on an NFS export is a terminal or takes device requests
    /// (programs ask, e.g. isatty(3) on every open file).
    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        reply.error(Errno::ENOTTY);
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.dirs.close(fh.0);
        reply.ok();
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let c = self.client.clone();
        self.spawn(async move {
            const BSIZE: u64 = 4096;
            match c.fsstat(&fh).await {
                Ok(s) => reply.statfs(
                    s.tbytes / BSIZE,
                    s.fbytes / BSIZE,
                    s.abytes / BSIZE,
                    s.tfiles,
                    s.ffiles,
                    BSIZE as u32,
                    255,
                    BSIZE as u32,
                ),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let name = match utf8(name) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let dir = match self.handle(parent) {
            Ok(d) => d,
            Err(e) => return reply.error(e),
        };
        let attrs = crate::attr::owned(req, self.client.kerberos(), Some(mode & !umask & 0o7777));
        let exclusive = flags & libc::O_EXCL != 0;
        let (c, inodes, files, ttl) =
            (self.client.clone(), self.inodes.clone(), self.files.clone(), self.settings.attr_ttl);
        let names = self.names.clone();
        self.spawn(async move {
            match c.create_in(&dir, &name, attrs, exclusive).await {
                Ok((fh, a)) => {
                    let ino = inodes.remember(&fh);
                    names.named(parent.0, &name, ino);
                    files.unchanged_since_last_open(ino, &a);
                    files.open(ino, || c.open_handle(fh, a.clone(), OpenOptions::read_write()));
                    reply.created(&ttl, &file_attr(ino, &a), GENERATION, FileHandle(ino), FopenFlags::empty());
                }
                Err(e) => reply.error(errno(&e)),
            }
        });
    }
}

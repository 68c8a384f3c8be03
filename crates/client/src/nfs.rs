//! The protocol under the file API: NFSv3 or NFSv4.1, one set of calls.
//! Each answers in the client's own types (`crate::results`, attributes
//! as [`Fattr`]): NFSv3's replies convert into them; NFSv4.1 fills what
//! NFSv3 would have sent (a new object's handle and attributes) from the
//! same compound. What is set goes as [`Sattr`]: NFSv3 refuses a time its
//! 32-bit seconds cannot carry ([`Error::TimeRange`]), NFSv4.1 sends it
//! whole.

use std::sync::Arc;

use bytes::Bytes;
use client_core::fattr::{Fattr, Sattr};
use client_core::stats::Stats;
use proto::nfs3::*;
use proto::nfs4::{createtype4, specdata4};

use crate::error::Result;
use crate::nfs3::{dirop, Nfs3};
use crate::nfs41::{LockConflict, Nfs41, OpenAccess};
pub use crate::results::*;

pub enum Nfs {
    V3(Box<Nfs3>),
    V41(Arc<Nfs41>),
}

fn made(obj: nfs_fh3, a: Fattr) -> Made {
    Made { obj: Some(obj), obj_attributes: Some(a), dir_after: None }
}

/// What a server says about its file system at mount.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsLimits {
    /// Largest READ and WRITE (0 when it does not say).
    pub rtmax: u32,
    pub wtmax: u32,
    /// The granularity of its times in ns, when it says.
    pub time_delta_ns: Option<u64>,
}

/// A lock's outcome: the lock in the way, or granted (with the file's
/// attributes as of then, when asked for).
#[derive(Debug, Clone, Default)]
pub struct Locked {
    pub conflict: Option<LockConflict>,
    pub attrs: Option<Fattr>,
}

impl Nfs {
    /// The NFSv4.1 session, when that is the protocol in use.
    pub fn v41(&self) -> Option<&Arc<Nfs41>> {
        match self {
            Nfs::V41(n) => Some(n),
            Nfs::V3(_) => None,
        }
    }

    /// "3" or "4.1", for reports.
    pub fn version(&self) -> &'static str {
        match self {
            Nfs::V3(_) => "3",
            Nfs::V41(n) if n.minor == 2 => "4.2",
            Nfs::V41(_) => "4.1",
        }
    }

    pub fn stats(&self) -> Stats {
        match self {
            Nfs::V3(n) => n.stats(),
            Nfs::V41(n) => n.stats(),
        }
    }

    pub async fn getattr(&self, fh: &nfs_fh3) -> Result<Fattr> {
        match self {
            Nfs::V3(n) => n.getattr(fh).await.map(Fattr::from),
            Nfs::V41(n) => n.getattr(&fh.data).await,
        }
    }

    /// SETATTR; the file's attributes after it, when the reply has them.
    pub async fn setattr(&self, fh: &nfs_fh3, set: Sattr) -> Result<Option<Fattr>> {
        match self {
            Nfs::V3(n) => Ok(n.setattr(fh, sattr3::try_from(&set)?).await?.obj_wcc.after.map(Fattr::from)),
            Nfs::V41(n) => n.setattr(&fh.data, set).await.map(Some),
        }
    }

    pub async fn lookup(&self, dir: &nfs_fh3, name: &str) -> Result<Looked> {
        match self {
            Nfs::V3(n) => n.lookup(dir, name).await.map(Looked::from),
            Nfs::V41(n) => n.lookup(&dir.data, name).await,
        }
    }

    pub async fn read(&self, fh: &nfs_fh3, offset: u64, count: u32) -> Result<ReadOk> {
        match self {
            Nfs::V3(n) => n.read(fh, offset, count).await.map(ReadOk::from),
            Nfs::V41(n) => n.read(&fh.data, offset, count).await,
        }
    }

    pub async fn write(&self, fh: &nfs_fh3, offset: u64, data: Bytes, stable: stable_how) -> Result<Written> {
        match self {
            Nfs::V3(n) => n.write(fh, offset, data, stable).await.map(Written::from),
            Nfs::V41(n) => n.write(&fh.data, offset, data, stable).await,
        }
    }

    /// COMMIT of the whole file; the server's write verifier.
    pub async fn commit(&self, fh: &nfs_fh3) -> Result<writeverf3> {
        match self {
            Nfs::V3(n) => n.commit(fh).await.map(|ok| ok.verf),
            Nfs::V41(n) => n.commit(&fh.data).await,
        }
    }

    /// A regular file. Over NFSv4.1 it is created open; the next
    /// [`Nfs::open`] of it takes that open over.
    pub async fn create(&self, dir: &nfs_fh3, name: &str, how: CreateHow) -> Result<Made> {
        match self {
            Nfs::V3(n) => {
                let how = match how {
                    CreateHow::Unchecked(a) => createhow3::UNCHECKED(sattr3::try_from(&a)?),
                    CreateHow::Guarded(a) => createhow3::GUARDED(sattr3::try_from(&a)?),
                    CreateHow::Exclusive(verf) => createhow3::EXCLUSIVE(verf),
                };
                let ok = n.create(dir, name, how).await?;
                Ok(Made::v3(ok.obj, ok.obj_attributes, ok.dir_wcc))
            }
            Nfs::V41(n) => n.create(&dir.data, name, how).await,
        }
    }

    pub async fn mkdir(&self, dir: &nfs_fh3, name: &str, attributes: Sattr) -> Result<Made> {
        match self {
            Nfs::V3(n) => {
                let args = MKDIR3args { r#where: dirop(dir, name), attributes: sattr3::try_from(&attributes)? };
                let ok = n.call::<_, MKDIR3res>(NFS3_MKDIR, &args).await?;
                Ok(Made::v3(ok.obj, ok.obj_attributes, ok.dir_wcc))
            }
            Nfs::V41(n) => {
                let (fh, a) = n.create_other(&dir.data, name, createtype4::NF4DIR, &attributes).await?;
                Ok(made(fh, a))
            }
        }
    }

    pub async fn symlink(&self, dir: &nfs_fh3, name: &str, target: &[u8], attrs: Sattr) -> Result<Made> {
        match self {
            Nfs::V3(n) => {
                let symlink_attributes = sattr3::try_from(&attrs)?;
                let symlink = symlinkdata3 { symlink_attributes, symlink_data: Bytes::copy_from_slice(target) };
                let args = SYMLINK3args { r#where: dirop(dir, name), symlink };
                let ok = n.call::<_, SYMLINK3res>(NFS3_SYMLINK, &args).await?;
                Ok(Made::v3(ok.obj, ok.obj_attributes, ok.dir_wcc))
            }
            Nfs::V41(n) => {
                let kind = createtype4::NF4LNK(Bytes::copy_from_slice(target));
                let (fh, a) = n.create_other(&dir.data, name, kind, &attrs).await?;
                Ok(made(fh, a))
            }
        }
    }

    pub async fn mknod(&self, dir: &nfs_fh3, name: &str, kind: NodeKind, attrs: Sattr) -> Result<Made> {
        match self {
            Nfs::V3(n) => {
                let a = sattr3::try_from(&attrs)?;
                let device = |spec: specdata3| devicedata3 { dev_attributes: a.clone(), spec };
                let what = match kind {
                    NodeKind::Char(spec) => mknoddata3::NF3CHR(device(spec)),
                    NodeKind::Block(spec) => mknoddata3::NF3BLK(device(spec)),
                    NodeKind::Socket => mknoddata3::NF3SOCK(a.clone()),
                    NodeKind::Fifo => mknoddata3::NF3FIFO(a.clone()),
                };
                let ok = n.call::<_, MKNOD3res>(NFS3_MKNOD, &MKNOD3args { r#where: dirop(dir, name), what }).await?;
                Ok(Made::v3(ok.obj, ok.obj_attributes, ok.dir_wcc))
            }
            Nfs::V41(n) => {
                let dev = |d: specdata3| specdata4 { specdata1: d.specdata1, specdata2: d.specdata2 };
                let kind = match kind {
                    NodeKind::Char(d) => createtype4::NF4CHR(dev(d)),
                    NodeKind::Block(d) => createtype4::NF4BLK(dev(d)),
                    NodeKind::Socket => createtype4::NF4SOCK,
                    NodeKind::Fifo => createtype4::NF4FIFO,
                };
                let (fh, a) = n.create_other(&dir.data, name, kind, &attrs).await?;
                Ok(made(fh, a))
            }
        }
    }

    /// REMOVE; the directory's attributes after it, when the reply has them.
    pub async fn remove(&self, dir: &nfs_fh3, name: &str) -> Result<Option<Fattr>> {
        match self {
            Nfs::V3(n) => Ok(n.remove(dir, name).await?.dir_wcc.after.map(Fattr::from)),
            Nfs::V41(n) => n.remove(&dir.data, name).await.map(|_| None),
        }
    }

    pub async fn rmdir(&self, dir: &nfs_fh3, name: &str) -> Result<Option<Fattr>> {
        match self {
            Nfs::V3(n) => Ok(n.rmdir(dir, name).await?.dir_wcc.after.map(Fattr::from)),
            Nfs::V41(n) => n.remove(&dir.data, name).await.map(|_| None),
        }
    }

    pub async fn rename(&self, from: &nfs_fh3, from_name: &str, to: &nfs_fh3, to_name: &str) -> Result<Renamed> {
        match self {
            Nfs::V3(n) => n.rename(from, from_name, to, to_name).await.map(Renamed::from),
            Nfs::V41(n) => {
                n.rename(&from.data, from_name, &to.data, to_name).await?;
                Ok(Renamed::default())
            }
        }
    }

    pub async fn link(&self, fh: &nfs_fh3, dir: &nfs_fh3, name: &str) -> Result<Linked> {
        match self {
            Nfs::V3(n) => {
                let args = LINK3args { file: fh.clone(), link: dirop(dir, name) };
                n.call::<_, LINK3res>(NFS3_LINK, &args).await.map(Linked::from)
            }
            Nfs::V41(n) => {
                let a = n.link(&fh.data, &dir.data, name).await?;
                Ok(Linked { file_attributes: Some(a), dir_after: None })
            }
        }
    }

    pub async fn readlink(&self, fh: &nfs_fh3) -> Result<Bytes> {
        match self {
            Nfs::V3(n) => {
                let ok = n.call::<_, READLINK3res>(NFS3_READLINK, &READLINK3args { symlink: fh.clone() }).await?;
                Ok(ok.data)
            }
            Nfs::V41(n) => n.readlink(&fh.data).await,
        }
    }

    pub async fn readdirplus(&self, dir: &nfs_fh3, cookie: u64, verf: cookieverf3, maxcount: u32) -> Result<Listed> {
        match self {
            Nfs::V3(n) => n.readdirplus(dir, cookie, verf, maxcount).await.map(Listed::from),
            Nfs::V41(n) => n.readdirplus(&dir.data, cookie, verf, maxcount).await,
        }
    }

    pub async fn fsstat(&self, fh: &nfs_fh3) -> Result<FsStat> {
        match self {
            Nfs::V3(n) => {
                let args = FSSTAT3args { fsroot: fh.clone() };
                n.call::<_, FSSTAT3res>(NFS3_FSSTAT, &args).await.map(FsStat::from)
            }
            Nfs::V41(n) => n.fsstat(&fh.data).await,
        }
    }

    /// The server's largest READ and WRITE and the granularity of its
    /// times.
    pub async fn io_limits(&self, root: &nfs_fh3) -> Result<FsLimits> {
        match self {
            Nfs::V3(n) => n.fsinfo(root).await.map(|i| FsLimits {
                rtmax: i.rtmax,
                wtmax: i.wtmax,
                time_delta_ns: Some(i.time_delta.seconds as u64 * 1_000_000_000 + i.time_delta.nseconds as u64),
            }),
            Nfs::V41(n) => n.io_limits(&root.data).await,
        }
    }

    /// Opens `fh` on the server for I/O (NFSv4.1: OPEN by handle, or the
    /// open a create left; NFSv3 has nothing to do). Returns whether there
    /// is an open to close later.
    pub async fn open(&self, fh: &nfs_fh3, read: bool, write: bool) -> Result<bool> {
        match self {
            Nfs::V3(_) => Ok(false),
            Nfs::V41(n) => {
                let access = OpenAccess::new(read, write);
                if !n.take_spare(&fh.data) && !n.open_local(&fh.data, access) {
                    n.open_fh(&fh.data, access).await?;
                }
                Ok(true)
            }
        }
    }

    /// The end of an [`Nfs::open`] that returned true (`wrote`: one with
    /// `write`).
    pub async fn close(&self, fh: &nfs_fh3, wrote: bool) -> Result<()> {
        match self {
            Nfs::V3(_) => Ok(()),
            Nfs::V41(n) => n.close(&fh.data, wrote).await,
        }
    }

    /// A file [`Nfs::create`] made that no [`Nfs::open`] will take over
    /// (mknod(2)): over NFSv4.1 its open goes.
    pub async fn drop_spare(&self, fh: &nfs_fh3) -> Result<()> {
        match self {
            Nfs::V41(n) if n.take_spare(&fh.data) => n.close(&fh.data, true).await,
            _ => Ok(()),
        }
    }

    /// A byte-range lock for `owner` (NFSv4.1 LOCK; over NFSv3 NLM LOCK,
    /// NOTSUPP when the server has no lock manager), with the file's
    /// attributes once it is granted when `attrs` (NFSv4.1: a GETATTR in
    /// the LOCK's compound; NFSv3: a GETATTR after it).
    pub async fn lock(
        &self,
        fh: &nfs_fh3,
        owner: u64,
        range: (u64, u64),
        write: bool,
        wait: bool,
        attrs: bool,
    ) -> Result<Locked> {
        match self {
            Nfs::V3(n) => {
                let nlm = n.nlm_or_notsupp("NLM_LOCK")?;
                let conflict = nlm.lock(&fh.data, owner, range.0, range.1, write, wait).await?;
                let attrs = match conflict {
                    None if attrs => Some(n.getattr(fh).await?.into()),
                    _ => None,
                };
                Ok(Locked { conflict, attrs })
            }
            Nfs::V41(n) => n.lock(&fh.data, owner, range.0, range.1, write, wait, attrs).await,
        }
    }

    pub async fn test_lock(
        &self,
        fh: &nfs_fh3,
        owner: u64,
        range: (u64, u64),
        write: bool,
    ) -> Result<Option<LockConflict>> {
        match self {
            Nfs::V3(n) => n.nlm_or_notsupp("NLM_TEST")?.test_lock(&fh.data, owner, range.0, range.1, write).await,
            Nfs::V41(n) => n.test_lock(&fh.data, owner, range.0, range.1, write).await,
        }
    }

    pub async fn unlock(&self, fh: &nfs_fh3, owner: u64, range: (u64, u64)) -> Result<()> {
        match self {
            Nfs::V3(n) => n.nlm_or_notsupp("NLM_UNLOCK")?.unlock(&fh.data, owner, range.0, range.1).await,
            Nfs::V41(n) => n.unlock(&fh.data, owner, range.0, range.1).await,
        }
    }

    /// Whether some lock owner of this client has lock state on `fh`.
    pub fn has_lock_state(&self, fh: &nfs_fh3) -> bool {
        match self {
            Nfs::V3(n) => n.nlm().is_some_and(|l| l.has_lock_state(&fh.data)),
            Nfs::V41(n) => n.has_lock_state(&fh.data),
        }
    }

    /// Whether locks go to the server (NFSv4.1, or NFSv3 with a lock
    /// manager found through the portmapper).
    pub fn locks_at_server(&self) -> bool {
        match self {
            Nfs::V3(n) => n.nlm().is_some(),
            Nfs::V41(_) => true,
        }
    }

    /// Whether the server promised to report changes to `fh` (an NFSv4.1
    /// delegation): cached attributes need no check on open.
    pub fn delegated(&self, fh: &nfs_fh3) -> bool {
        self.v41().is_some_and(|n| n.has_delegation(&fh.data))
    }

    /// Whether the server keeps `fh`, open here, after its last name is
    /// removed (NFSv4.1 OPEN4_RESULT_PRESERVE_UNLINKED): removing it then
    /// needs no hidden name.
    pub fn preserves_unlinked(&self, fh: &nfs_fh3) -> bool {
        self.v41().is_some_and(|n| n.preserves_unlinked(&fh.data))
    }
}

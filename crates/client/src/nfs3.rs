//! The raw NFSv3 call layer: one typed method per procedure the file API
//! needs, spread round-robin over the client's connections (like the Linux
//! `nconnect` option). Results come back as the RFC 1813 `...resok`
//! structures; a non-OK status becomes [`Error::Nfs`].

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use client_core::stats::{procedure_name, Stats};
use proto::nfs3::*;
use xdr::{Decode, Decoder, Encode, Encoder};

use crate::error::{Error, Result};
use crate::nlm::Nlm;
use crate::transport::Connection;

/// Turns a result union into the Rust result of its OK arm.
pub trait Nfs3Result: Decode {
    type Ok;
    fn into_result(self) -> std::result::Result<Self::Ok, nfsstat3>;
}

macro_rules! results {
    ($($res:ident => $ok:ident),* $(,)?) => {$(
        impl Nfs3Result for $res {
            type Ok = $ok;
            fn into_result(self) -> std::result::Result<$ok, nfsstat3> {
                match self {
                    $res::NFS3_OK(ok) => Ok(ok),
                    $res::default(status, ..) => Err(status),
                }
            }
        }
    )*};
}

results! {
    GETATTR3res => GETATTR3resok, SETATTR3res => SETATTR3resok, LOOKUP3res => LOOKUP3resok,
    ACCESS3res => ACCESS3resok, READ3res => READ3resok, WRITE3res => WRITE3resok, CREATE3res => CREATE3resok,
    MKDIR3res => MKDIR3resok, REMOVE3res => REMOVE3resok, RMDIR3res => RMDIR3resok, RENAME3res => RENAME3resok,
    READDIRPLUS3res => READDIRPLUS3resok, FSINFO3res => FSINFO3resok, FSSTAT3res => FSSTAT3resok,
    READLINK3res => READLINK3resok, SYMLINK3res => SYMLINK3resok, MKNOD3res => MKNOD3resok, LINK3res => LINK3resok,
    COMMIT3res => COMMIT3resok,
}

pub struct Nfs3 {
    conns: Vec<Connection>,
    next: AtomicUsize,
    nlm: Option<Nlm>,
}

impl Nfs3 {
    pub fn new(conns: Vec<Connection>) -> Nfs3 {
        assert!(!conns.is_empty(), "at least one connection");
        Nfs3 { conns, next: AtomicUsize::new(0), nlm: None }
    }

    /// Locks go through `nlm` (without one they fail with NOTSUPP).
    pub fn with_lock_manager(mut self, nlm: Nlm) -> Nfs3 {
        self.nlm = Some(nlm);
        self
    }

    /// The server's lock manager, when one was found.
    pub fn nlm(&self) -> Option<&Nlm> {
        self.nlm.as_ref().filter(|n| n.available())
    }

    /// Any procedure of NFS v3, with typed arguments and results.
    pub async fn call<A: Encode, R: Nfs3Result>(&self, proc_: u32, args: &A) -> Result<R::Ok> {
        let name = procedure_name(NFS_PROGRAM, NFS_V3, proc_);
        let mut e = Encoder::new();
        args.encode(&mut e);
        let next = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        let conn = self.conns.get(next).ok_or_else(|| Error::Invalid("no NFSv3 connection".into()))?;
        let bytes: Bytes = conn
            .call(NFS_PROGRAM, NFS_V3, proc_, e.into_segments())
            .await
            .map_err(|err| Error::Rpc { proc: name, err })?;
        let res = R::decode(&mut Decoder::new(bytes)).map_err(|e| Error::Decode { proc: name, why: e.to_string() })?;
        res.into_result().map_err(|status| Error::Nfs { proc: name, status })
    }

    pub async fn null(&self) -> Result<()> {
        let conn = self.conns.first().ok_or_else(|| Error::Invalid("no NFSv3 connection".into()))?;
        conn.call(NFS_PROGRAM, NFS_V3, NFS3_NULL, vec![]).await.map_err(|err| Error::Rpc { proc: "NULL", err })?;
        Ok(())
    }

    pub async fn getattr(&self, fh: &nfs_fh3) -> Result<fattr3> {
        let ok: GETATTR3resok = self.call::<_, GETATTR3res>(NFS3_GETATTR, &GETATTR3args { object: fh.clone() }).await?;
        Ok(ok.obj_attributes)
    }

    pub async fn setattr(&self, fh: &nfs_fh3, attrs: sattr3) -> Result<SETATTR3resok> {
        let args = SETATTR3args { object: fh.clone(), new_attributes: attrs, guard: None };
        self.call::<_, SETATTR3res>(NFS3_SETATTR, &args).await
    }

    pub async fn lookup(&self, dir: &nfs_fh3, name: &str) -> Result<LOOKUP3resok> {
        self.call::<_, LOOKUP3res>(NFS3_LOOKUP, &LOOKUP3args { what: dirop(dir, name) }).await
    }

    pub async fn read(&self, fh: &nfs_fh3, offset: u64, count: u32) -> Result<READ3resok> {
        self.call::<_, READ3res>(NFS3_READ, &READ3args { file: fh.clone(), offset, count }).await
    }

    pub async fn write(&self, fh: &nfs_fh3, offset: u64, data: Bytes, stable: stable_how) -> Result<WRITE3resok> {
        let args = WRITE3args { file: fh.clone(), offset, count: data.len() as u32, stable, data };
        self.call::<_, WRITE3res>(NFS3_WRITE, &args).await
    }

    /// COMMIT of the whole file (offset 0, count 0).
    pub async fn commit(&self, fh: &nfs_fh3) -> Result<COMMIT3resok> {
        self.call::<_, COMMIT3res>(NFS3_COMMIT, &COMMIT3args { file: fh.clone(), offset: 0, count: 0 }).await
    }

    pub async fn create(&self, dir: &nfs_fh3, name: &str, how: createhow3) -> Result<CREATE3resok> {
        self.call::<_, CREATE3res>(NFS3_CREATE, &CREATE3args { r#where: dirop(dir, name), how }).await
    }

    pub async fn mkdir(&self, dir: &nfs_fh3, name: &str, mode: u32) -> Result<MKDIR3resok> {
        let attributes = sattr3 { mode: Some(mode), ..Default::default() };
        self.call::<_, MKDIR3res>(NFS3_MKDIR, &MKDIR3args { r#where: dirop(dir, name), attributes }).await
    }

    pub async fn remove(&self, dir: &nfs_fh3, name: &str) -> Result<REMOVE3resok> {
        self.call::<_, REMOVE3res>(NFS3_REMOVE, &REMOVE3args { object: dirop(dir, name) }).await
    }

    pub async fn rmdir(&self, dir: &nfs_fh3, name: &str) -> Result<RMDIR3resok> {
        self.call::<_, RMDIR3res>(NFS3_RMDIR, &RMDIR3args { object: dirop(dir, name) }).await
    }

    pub async fn rename(&self, from: &nfs_fh3, from_name: &str, to: &nfs_fh3, to_name: &str) -> Result<RENAME3resok> {
        let args = RENAME3args { from: dirop(from, from_name), to: dirop(to, to_name) };
        self.call::<_, RENAME3res>(NFS3_RENAME, &args).await
    }

    pub async fn readdirplus(
        &self,
        dir: &nfs_fh3,
        cookie: u64,
        cookieverf: [u8; 8],
        maxcount: u32,
    ) -> Result<READDIRPLUS3resok> {
        let args = READDIRPLUS3args { dir: dir.clone(), cookie, cookieverf, dircount: maxcount / 4, maxcount };
        self.call::<_, READDIRPLUS3res>(NFS3_READDIRPLUS, &args).await
    }

    pub async fn fsinfo(&self, root: &nfs_fh3) -> Result<FSINFO3resok> {
        self.call::<_, FSINFO3res>(NFS3_FSINFO, &FSINFO3args { fsroot: root.clone() }).await
    }

    /// The lock manager, or NOTSUPP for `proc_` when the server has none.
    pub(crate) fn nlm_or_notsupp(&self, proc_: &'static str) -> Result<&Nlm> {
        self.nlm().ok_or(Error::Nfs { proc: proc_, status: nfsstat3::NFS3ERR_NOTSUPP })
    }

    /// Counters of every connection, summed.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::default();
        for c in &self.conns {
            s.merge(&c.stats());
        }
        if let Some(n) = &self.nlm {
            s.merge(&n.stats());
        }
        s
    }
}

pub(crate) fn dirop(dir: &nfs_fh3, name: &str) -> diropargs3 {
    diropargs3 { dir: dir.clone(), name: Bytes::copy_from_slice(name.as_bytes()) }
}

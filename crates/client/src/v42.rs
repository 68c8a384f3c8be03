//! The NFSv4.2 calls by handle (RFC 7862, RFC 8276): server-side copy and
//! clone, holes, space reservation and extended attributes. Each writes
//! back what this client has cached for the files it reads first, and
//! forgets what it cached for the files it changes, so the path and
//! handle APIs stay as true as after a WRITE. Over NFSv3 or NFSv4.1 each
//! fails with [`Error::Nfs4`] NFS4ERR_NOTSUPP (mapped to NFS3ERR_NOTSUPP
//! by [`Error::status`]); callers fall back (the mount copies through
//! READ and WRITE).

use std::sync::Arc;

use bytes::Bytes;
use proto::nfs3::nfs_fh3;
use proto::nfs4::{nfsstat4, setxattr_option4, stable_how4};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::nfs41::Nfs41;

/// How a SETXATTR treats an attribute that is or is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XattrHow {
    Either,
    /// Fails if it is set.
    Create,
    /// Fails if it is not set.
    Replace,
}

impl Client {
    /// Whether the session speaks NFSv4.2 (COPY, CLONE, SEEK, xattrs...).
    pub fn has_v42(&self) -> bool {
        self.inner.nfs.v41().is_some_and(|n| n.has_v42())
    }

    fn v42(&self, op: &'static str) -> Result<&Arc<Nfs41>> {
        match self.inner.nfs.v41() {
            Some(n) if n.has_v42() => Ok(n),
            _ => Err(Error::Nfs4 { op, status: nfsstat4::NFS4ERR_NOTSUPP }),
        }
    }

    /// This client changed `fh` on the server by other means than WRITE:
    /// its cached data and attributes go.
    fn changed_on_server(&self, fh: &nfs_fh3) {
        self.inner.data.lock().invalidate(&fh.data);
        self.inner.caches.invalidate_attrs(&fh.data);
    }

    /// Copies `count` bytes from `src` at `src_offset` to `dst` at
    /// `dst_offset` inside the server (COPY), and returns how many were
    /// copied: fewer only where the source ends. Data copied unstable is
    /// committed before this returns; if the server restarted meanwhile
    /// (a new write verifier) the copy is made again, once.
    pub async fn copy_range_handle(
        &self,
        src: &nfs_fh3,
        src_offset: u64,
        dst: &nfs_fh3,
        dst_offset: u64,
        count: u64,
    ) -> Result<u64> {
        let nfs = self.v42("COPY")?.clone();
        self.flush_handle(src).await?;
        self.flush_handle(dst).await?;
        let mut attempt = 0;
        let r = loop {
            attempt += 1;
            let r = copy_all(&nfs, src, src_offset, dst, dst_offset, count).await;
            match r {
                Err(Error::Nfs4 {
                    status: nfsstat4::NFS4ERR_STALE_STATEID | nfsstat4::NFS4ERR_BAD_STATEID, ..
                }) if attempt == 1 => {}
                Ok(None) if attempt == 1 => {}
                Ok(None) => break Err(Error::Invalid("the server restarted twice during a copy".into())),
                Ok(Some(n)) => break Ok(n),
                Err(e) => break Err(e),
            }
        };
        self.changed_on_server(dst);
        r
    }

    /// Makes `dst`'s range share `src`'s blocks (CLONE; `count` 0: to the
    /// source's end). NFS4ERR_NOTSUPP where the server cannot reflink.
    pub async fn clone_range_handle(
        &self,
        src: &nfs_fh3,
        src_offset: u64,
        dst: &nfs_fh3,
        dst_offset: u64,
        count: u64,
    ) -> Result<()> {
        let nfs = self.v42("CLONE")?;
        self.flush_handle(src).await?;
        self.flush_handle(dst).await?;
        let r = nfs.clone_range(&src.data, src_offset, &dst.data, dst_offset, count).await;
        self.changed_on_server(dst);
        r
    }

    /// lseek(2) SEEK_DATA (`data`) or SEEK_HOLE from `offset`: where it
    /// starts, and whether that is the end of the file.
    pub async fn seek_handle(&self, fh: &nfs_fh3, offset: u64, data: bool) -> Result<(u64, bool)> {
        let nfs = self.v42("SEEK")?;
        self.flush_handle(fh).await?;
        nfs.seek(&fh.data, offset, data).await
    }

    /// fallocate(2): reserves `[offset, offset+len)` (growing the file),
    /// or with `punch` makes it a hole that reads as zeros.
    pub async fn allocate_handle(&self, fh: &nfs_fh3, offset: u64, len: u64, punch: bool) -> Result<()> {
        let nfs = self.v42(if punch { "DEALLOCATE" } else { "ALLOCATE" })?;
        // Cached writes into a punched range must not land after it.
        self.flush_handle(fh).await?;
        let r = nfs.allocate(&fh.data, offset, len, punch).await;
        self.changed_on_server(fh);
        r
    }

    /// READ_PLUS: the bytes of a READ (holes as zeros), how many of them
    /// were holes, and eof.
    pub async fn read_plus_handle(&self, fh: &nfs_fh3, offset: u64, count: u32) -> Result<(Bytes, u64, bool)> {
        let nfs = self.v42("READ_PLUS")?;
        self.flush_handle(fh).await?;
        nfs.read_plus(&fh.data, offset, count).await
    }

    /// The value of extended attribute `name` (the server's `user.`
    /// namespace, without the prefix).
    pub async fn getxattr_handle(&self, fh: &nfs_fh3, name: &str) -> Result<Bytes> {
        self.v42("GETXATTR")?.getxattr(&fh.data, name).await
    }

    pub async fn setxattr_handle(&self, fh: &nfs_fh3, name: &str, value: &[u8], how: XattrHow) -> Result<()> {
        let how = match how {
            XattrHow::Either => setxattr_option4::SETXATTR4_EITHER,
            XattrHow::Create => setxattr_option4::SETXATTR4_CREATE,
            XattrHow::Replace => setxattr_option4::SETXATTR4_REPLACE,
        };
        let r = self.v42("SETXATTR")?.setxattr(&fh.data, name, value, how).await;
        self.inner.caches.invalidate_attrs(&fh.data);
        r
    }

    pub async fn listxattrs_handle(&self, fh: &nfs_fh3) -> Result<Vec<Bytes>> {
        self.v42("LISTXATTRS")?.listxattrs(&fh.data).await
    }

    pub async fn removexattr_handle(&self, fh: &nfs_fh3, name: &str) -> Result<()> {
        let r = self.v42("REMOVEXATTR")?.removexattr(&fh.data, name).await;
        self.inner.caches.invalidate_attrs(&fh.data);
        r
    }

    /// [`Client::copy_range_handle`] by path: the whole of `from` (from
    /// its start) into `to`, which must exist.
    pub async fn copy_file(&self, from: &str, to: &str) -> Result<u64> {
        let (src, _) = self.lookup(from).await?;
        let (dst, _) = self.lookup(to).await?;
        self.flush_handle(&src).await?;
        let size = self.getattr_fresh(&src).await?.size;
        self.copy_range_handle(&src, 0, &dst, 0, size).await
    }
}

/// COPYs until `count` bytes are copied or the source ends, then COMMITs
/// what was copied unstable. `None` when the COMMIT's verifier differs
/// from the COPYs' (the server restarted: unstable data may be lost).
async fn copy_all(
    nfs: &Nfs41,
    src: &nfs_fh3,
    src_offset: u64,
    dst: &nfs_fh3,
    dst_offset: u64,
    count: u64,
) -> Result<Option<u64>> {
    let mut done = 0u64;
    let mut unstable = None;
    while done < count {
        let c = nfs.copy(&src.data, src_offset + done, &dst.data, dst_offset + done, count - done).await;
        let c = match c {
            Ok(c) => c,
            // The source ended before `count` (RFC 7862: a range past
            // the end is INVAL): what remains is copied to its end.
            Err(Error::Nfs4 { status: nfsstat4::NFS4ERR_INVAL, .. }) if done > 0 || count > 0 => {
                let c = nfs.copy(&src.data, src_offset + done, &dst.data, dst_offset + done, 0).await?;
                done += c.count;
                if c.committed == stable_how4::UNSTABLE4 {
                    unstable = Some(c.verf);
                }
                break;
            }
            Err(e) => return Err(e),
        };
        if c.count == 0 {
            break;
        }
        done += c.count;
        if c.committed == stable_how4::UNSTABLE4 {
            if unstable.is_some_and(|v| v != c.verf) {
                return Ok(None);
            }
            unstable = Some(c.verf);
        }
    }
    if let Some(verf) = unstable {
        if nfs.commit(&dst.data).await? != verf {
            return Ok(None);
        }
    }
    Ok(Some(done))
}

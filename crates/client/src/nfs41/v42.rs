//! NFSv4.2 (RFC 7862) and extended attributes (RFC 8276) over a session
//! made at minor version 2: server-side COPY (waiting for CB_OFFLOAD when
//! the server copies in the background), CLONE, SEEK, ALLOCATE,
//! DEALLOCATE, READ_PLUS and the xattr operations. At minor version 1
//! each of them fails with NFS4ERR_NOTSUPP without a call, so callers fall
//! back (a copy through READ and WRITE, no sparse-file calls).

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use tokio::sync::oneshot;

use super::Nfs41;
use crate::error::{Error, Result};

/// How often a client waiting for CB_OFFLOAD asks OFFLOAD_STATUS: the
/// callback may be lost (back channel down), or the server may have
/// restarted, which ends the copy without one.
const OFFLOAD_POLL: Duration = Duration::from_secs(2);
/// CB_OFFLOADs kept for copies whose COPY reply has not been seen yet
/// (the callback can overtake it, RFC 7862 section 16.1.3).
const MAX_EARLY_OFFLOADS: usize = 256;

/// What a COPY did: bytes copied, how stable, and the verifier a COMMIT
/// must match when it was not stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    pub count: u64,
    pub committed: stable_how4,
    pub verf: verifier4,
}

/// Asynchronous copies this client waits for, by copy stateid.
#[derive(Debug, Default)]
pub(crate) struct Offloads {
    waiting: HashMap<[u8; 12], oneshot::Sender<offload_info4>>,
    early: HashMap<[u8; 12], offload_info4>,
}

impl Offloads {
    /// A CB_OFFLOAD arrived: to its waiter, or kept for one to come.
    pub(crate) fn deliver(&mut self, args: CB_OFFLOAD4args) {
        let key = args.coa_stateid.other;
        match self.waiting.remove(&key) {
            Some(tx) => {
                let _ = tx.send(args.coa_offload_info);
            }
            None if self.early.len() < MAX_EARLY_OFFLOADS => {
                self.early.insert(key, args.coa_offload_info);
            }
            None => tracing::warn!("CB_OFFLOAD for a copy nobody waits for; dropped"),
        }
    }
}

/// The outcome of a background copy as `Copied`, or its error.
fn finished(info: offload_info4) -> Result<Copied> {
    match info {
        offload_info4::NFS4_OK(w) => Ok(Copied { count: w.wr_count, committed: w.wr_committed, verf: w.wr_writeverf }),
        offload_info4::default(status, _copied) => Err(Error::Nfs4 { op: "COPY", status }),
    }
}

fn putfh(fh: &Bytes) -> nfs_argop4 {
    nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() })
}

fn result<T>(op: &'static str, r: Option<&nfs_resop4>, pick: impl FnOnce(&nfs_resop4) -> Option<T>) -> Result<T> {
    r.and_then(pick).ok_or_else(|| Error::Decode { proc: op, why: format!("{op} missing from the reply") })
}

impl Nfs41 {
    /// Whether the session speaks minor version 2.
    pub fn has_v42(&self) -> bool {
        self.minor >= 2
    }

    fn need_v42(&self, op: &'static str) -> Result<()> {
        if self.has_v42() {
            Ok(())
        } else {
            Err(Error::Nfs4 { op, status: nfsstat4::NFS4ERR_NOTSUPP })
        }
    }

    /// COPY of `count` bytes (0: to the source's end) from `src` to
    /// `dst` inside the server. The count may come back short (the server
    /// caps what one COPY does); a background copy is waited for.
    pub async fn copy(&self, src: &Bytes, src_offset: u64, dst: &Bytes, dst_offset: u64, count: u64) -> Result<Copied> {
        self.need_v42("COPY")?;
        let args = COPY4args {
            ca_src_stateid: self.io_stateid(src, false),
            ca_dst_stateid: self.io_stateid(dst, true),
            ca_src_offset: src_offset,
            ca_dst_offset: dst_offset,
            ca_count: count,
            ca_consecutive: true,
            ca_synchronous: false,
            ca_source_server: vec![],
        };
        let res = self.compound(vec![putfh(src), nfs_argop4::OP_SAVEFH, putfh(dst), nfs_argop4::OP_COPY(args)]).await?;
        let ok = result("COPY", res.get(3), |r| match r {
            nfs_resop4::OP_COPY(COPY4res::NFS4_OK(ok)) => Some(ok.clone()),
            _ => None,
        })?;
        let w = ok.cr_response;
        match w.wr_callback_id.first() {
            None => Ok(Copied { count: w.wr_count, committed: w.wr_committed, verf: w.wr_writeverf }),
            Some(id) => self.wait_offload(dst, id).await,
        }
    }

    /// Waits for the CB_OFFLOAD of copy `id`, asking OFFLOAD_STATUS now
    /// and then in case it never comes.
    async fn wait_offload(&self, dst: &Bytes, id: &stateid4) -> Result<Copied> {
        let mut rx = {
            let mut o = self.offloads.lock();
            if let Some(info) = o.early.remove(&id.other) {
                return finished(info);
            }
            let (tx, rx) = oneshot::channel();
            o.waiting.insert(id.other, tx);
            rx
        };
        loop {
            match tokio::time::timeout(OFFLOAD_POLL, &mut rx).await {
                Ok(Ok(info)) => return finished(info),
                Ok(Err(_)) => return Err(Error::Invalid("copy wait dropped".into())),
                Err(_) => {}
            }
            let status = nfs_argop4::OP_OFFLOAD_STATUS(OFFLOAD_STATUS4args { osa_stateid: id.clone() });
            match self.compound(vec![putfh(dst), status]).await {
                Ok(res) => {
                    let st = result("OFFLOAD_STATUS", res.get(1), |r| match r {
                        nfs_resop4::OP_OFFLOAD_STATUS(OFFLOAD_STATUS4res::NFS4_OK(ok)) => Some(ok.clone()),
                        _ => None,
                    })?;
                    if let Some(&s) = st.osr_complete.first() {
                        self.offloads.lock().waiting.remove(&id.other);
                        if s != nfsstat4::NFS4_OK {
                            return Err(Error::Nfs4 { op: "COPY", status: s });
                        }
                        // Done, and the server flushes a background copy's
                        // destination before it reports the end.
                        return Ok(Copied { count: st.osr_count, committed: stable_how4::FILE_SYNC4, verf: [0; 8] });
                    }
                }
                Err(e) => {
                    // The copy is gone (a server restart): the caller copies
                    // again or falls back.
                    self.offloads.lock().waiting.remove(&id.other);
                    return Err(e);
                }
            }
        }
    }

    /// CLONE: `dst`'s range shares `src`'s blocks (count 0: to the
    /// source's end); NOTSUPP where the server's file system cannot.
    pub async fn clone_range(
        &self,
        src: &Bytes,
        src_offset: u64,
        dst: &Bytes,
        dst_offset: u64,
        count: u64,
    ) -> Result<()> {
        self.need_v42("CLONE")?;
        let args = CLONE4args {
            cl_src_stateid: self.io_stateid(src, false),
            cl_dst_stateid: self.io_stateid(dst, true),
            cl_src_offset: src_offset,
            cl_dst_offset: dst_offset,
            cl_count: count,
        };
        self.compound(vec![putfh(src), nfs_argop4::OP_SAVEFH, putfh(dst), nfs_argop4::OP_CLONE(args)]).await.map(drop)
    }

    /// SEEK: where the next data (`data`) or hole starts at or after
    /// `offset`, and whether that is the end of the file.
    pub async fn seek(&self, fh: &Bytes, offset: u64, data: bool) -> Result<(u64, bool)> {
        self.need_v42("SEEK")?;
        let what = if data { data_content4::NFS4_CONTENT_DATA } else { data_content4::NFS4_CONTENT_HOLE };
        let args = SEEK4args { sa_stateid: self.io_stateid(fh, false), sa_offset: offset, sa_what: what };
        let res = self.compound(vec![putfh(fh), nfs_argop4::OP_SEEK(args)]).await?;
        result("SEEK", res.get(1), |r| match r {
            nfs_resop4::OP_SEEK(SEEK4res::NFS4_OK(ok)) => Some((ok.sr_offset, ok.sr_eof)),
            _ => None,
        })
    }

    /// ALLOCATE (`punch` false) or DEALLOCATE (`punch` true) of a range.
    pub async fn allocate(&self, fh: &Bytes, offset: u64, length: u64, punch: bool) -> Result<()> {
        self.need_v42(if punch { "DEALLOCATE" } else { "ALLOCATE" })?;
        let stateid = self.io_stateid(fh, true);
        let op = if punch {
            nfs_argop4::OP_DEALLOCATE(DEALLOCATE4args { da_stateid: stateid, da_offset: offset, da_length: length })
        } else {
            nfs_argop4::OP_ALLOCATE(ALLOCATE4args { aa_stateid: stateid, aa_offset: offset, aa_length: length })
        };
        self.compound(vec![putfh(fh), op]).await.map(drop)
    }

    /// READ_PLUS: up to `count` bytes with holes filled in as zeros, the
    /// number of bytes that were holes, and eof.
    pub async fn read_plus(&self, fh: &Bytes, offset: u64, count: u32) -> Result<(Bytes, u64, bool)> {
        self.need_v42("READ_PLUS")?;
        let read_plus = |stateid| {
            let args = READ_PLUS4args { rpa_stateid: stateid, rpa_offset: offset, rpa_count: count };
            vec![putfh(fh), nfs_argop4::OP_READ_PLUS(args)]
        };
        let res = self.with_io_stateid(fh, false, read_plus).await?;
        let ok = result("READ_PLUS", res.get(1), |r| match r {
            nfs_resop4::OP_READ_PLUS(READ_PLUS4res::NFS4_OK(ok)) => Some(ok.clone()),
            _ => None,
        })?;
        // One data segment from the offset asked for (a range without
        // holes): its bytes as received, not copied.
        if let [read_plus_content::NFS4_CONTENT_DATA(d)] = ok.rpr_contents.as_slice() {
            if d.d_offset == offset && d.d_data.len() as u64 <= u64::from(count) {
                return Ok((d.d_data.clone(), 0, ok.rpr_eof));
            }
        }
        let mut out = Vec::new();
        let mut holes = 0u64;
        let n = ok.rpr_contents.len();
        for (i, c) in ok.rpr_contents.into_iter().enumerate() {
            // Segments follow each other from `offset`; anything else is
            // a server bug we refuse to paper over.
            let (at, len) = match &c {
                read_plus_content::NFS4_CONTENT_DATA(d) => (d.d_offset, d.d_data.len() as u64),
                read_plus_content::NFS4_CONTENT_HOLE(h) => (h.di_offset, h.di_length),
                read_plus_content::default(_) => {
                    return Err(Error::Decode { proc: "READ_PLUS", why: "unknown segment".into() })
                }
            };
            if at != offset + out.len() as u64 || out.len() as u64 + len > u64::from(count) {
                let kind = if matches!(c, read_plus_content::NFS4_CONTENT_HOLE(_)) { "hole" } else { "data" };
                let expected = offset + out.len() as u64;
                let why =
                    format!("{kind} segment {} of {n} at {at}+{len} out of place (expected at {expected})", i + 1);
                return Err(Error::Decode { proc: "READ_PLUS", why });
            }
            match c {
                read_plus_content::NFS4_CONTENT_DATA(d) => out.extend_from_slice(&d.d_data),
                _ => {
                    holes += len;
                    out.resize(out.len() + len as usize, 0);
                }
            }
        }
        Ok((Bytes::from(out), holes, ok.rpr_eof))
    }

    pub async fn getxattr(&self, fh: &Bytes, name: &str) -> Result<Bytes> {
        self.need_v42("GETXATTR")?;
        let op = nfs_argop4::OP_GETXATTR(GETXATTR4args { gxa_name: Bytes::copy_from_slice(name.as_bytes()) });
        let res = self.compound(vec![putfh(fh), op]).await?;
        result("GETXATTR", res.get(1), |r| match r {
            nfs_resop4::OP_GETXATTR(GETXATTR4res::NFS4_OK(v)) => Some(v.clone()),
            _ => None,
        })
    }

    pub async fn setxattr(&self, fh: &Bytes, name: &str, value: &[u8], how: setxattr_option4) -> Result<()> {
        self.need_v42("SETXATTR")?;
        let op = nfs_argop4::OP_SETXATTR(SETXATTR4args {
            sxa_option: how,
            sxa_key: Bytes::copy_from_slice(name.as_bytes()),
            sxa_value: Bytes::copy_from_slice(value),
        });
        self.compound(vec![putfh(fh), op]).await.map(drop)
    }

    /// Every extended attribute name, paging through LISTXATTRS.
    pub async fn listxattrs(&self, fh: &Bytes) -> Result<Vec<Bytes>> {
        self.need_v42("LISTXATTRS")?;
        let mut names = Vec::new();
        let mut cookie = 0;
        loop {
            let op = nfs_argop4::OP_LISTXATTRS(LISTXATTRS4args { lxa_cookie: cookie, lxa_maxcount: 65536 });
            let res = self.compound(vec![putfh(fh), op]).await?;
            let ok = result("LISTXATTRS", res.get(1), |r| match r {
                nfs_resop4::OP_LISTXATTRS(LISTXATTRS4res::NFS4_OK(ok)) => Some(ok.clone()),
                _ => None,
            })?;
            let progress = !ok.lxr_names.is_empty();
            names.extend(ok.lxr_names);
            if ok.lxr_eof || !progress {
                return Ok(names);
            }
            cookie = ok.lxr_cookie;
        }
    }

    pub async fn removexattr(&self, fh: &Bytes, name: &str) -> Result<()> {
        self.need_v42("REMOVEXATTR")?;
        let op = nfs_argop4::OP_REMOVEXATTR(REMOVEXATTR4args { rxa_name: Bytes::copy_from_slice(name.as_bytes()) });
        self.compound(vec![putfh(fh), op]).await.map(drop)
    }
}

//! The NFSv4.2 calls through the mount: copy_file_range(2) as a
//! server-side COPY, lseek(2) SEEK_DATA/SEEK_HOLE as SEEK, fallocate(2) as
//! ALLOCATE/DEALLOCATE, and the `user.` extended attributes (RFC 8276).
//!
//! A session without NFSv4.2 (NFSv3, NFSv4.1) answers each with ENOSYS:
//! the kernel then never asks this mount again and does what it does for a
//! file system without the call (copy_file_range copies through read and
//! write, lseek treats the whole file as data, fallocate and the xattr
//! calls fail with EOPNOTSUPP), so those mounts pay nothing for them.

use std::ffi::OsStr;
use std::future::Future;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use bytes::Bytes;
use client::{Client, XattrHow};
use fuser::{CopyFileRangeFlags, Errno, INodeNo, ReplyEmpty, ReplyLseek, ReplyWrite, ReplyXattr};
use proto::nfs3::nfs_fh3;

use crate::attr::errno;
use crate::fs::NfsFs;

/// Largest copy answered at once: the reply's count is 32 bits, and a
/// whole number of pages keeps the kernel's next call aligned. Callers of
/// copy_file_range(2) loop over short copies.
const MAX_COPY: u64 = u32::MAX as u64 & !0xfff;

/// The name without its `user.` prefix: the only namespace the server
/// stores (the host's `user.` attributes). `None` for another namespace.
fn user_name(name: &OsStr) -> Option<Result<String, Errno>> {
    let rest = name.as_bytes().strip_prefix(b"user.")?;
    Some(match std::str::from_utf8(rest) {
        Ok(n) if !n.is_empty() => Ok(n.to_owned()),
        _ => Err(Errno::EINVAL),
    })
}

/// The FUSE size protocol of getxattr and listxattr: size 0 asks how large
/// the value is; a buffer too small for it is ERANGE.
fn reply_sized(reply: ReplyXattr, size: u32, data: &[u8]) {
    if size == 0 {
        reply.size(u32::try_from(data.len()).unwrap_or(u32::MAX));
    } else if data.len() > size as usize {
        reply.error(Errno::ERANGE);
    } else {
        reply.data(data);
    }
}

/// listxattr(2)'s answer: each name with its prefix, NUL-terminated. A
/// name with a NUL in it could not be asked for again, so it is left out.
fn name_list(names: &[Bytes]) -> Vec<u8> {
    let mut out = Vec::new();
    for n in names.iter().filter(|n| !n.is_empty() && !n.contains(&0)) {
        out.extend_from_slice(b"user.");
        out.extend_from_slice(n);
        out.push(0);
    }
    out
}

impl NfsFs {
    /// Runs `fut`, which changes `ino` on the server, while holding its
    /// open file, if it has one, so no read of the file runs meanwhile;
    /// then drops what the file read ahead (the client drops its own
    /// cached data and attributes of the file itself).
    fn changing<T, F>(&self, ino: INodeNo, fut: F, done: impl FnOnce(client::Result<T>) + Send + 'static)
    where
        F: Future<Output = client::Result<T>> + Send + 'static,
    {
        let file = self.files.get(ino.0);
        self.spawn(async move {
            let mut guard = match &file {
                Some(f) => Some(f.lock().await),
                None => None,
            };
            let r = fut.await;
            if let Some(f) = guard.as_mut() {
                f.forget_readahead();
            }
            drop(guard);
            done(r);
        });
    }

    /// Runs the xattr change `op` on `ino`'s attribute `name` and replies.
    fn xattr_change<F>(
        &self,
        ino: INodeNo,
        name: &OsStr,
        reply: ReplyEmpty,
        op: impl FnOnce(Arc<Client>, nfs_fh3, String) -> F,
    ) where
        F: Future<Output = client::Result<()>> + Send + 'static,
    {
        // Only `user.` attributes are stored on the server: the others are
        // EOPNOTSUPP, as on a file system without them, with no call made.
        let name = match user_name(name) {
            None => return reply.error(Errno::EOPNOTSUPP),
            Some(Err(e)) => return reply.error(e),
            Some(Ok(n)) => n,
        };
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let fut = op(self.client.clone(), fh, name);
        self.spawn(async move {
            match fut.await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    /// copy_file_range(2): a COPY inside the server, the data never
    /// crossing the network. The kernel has written back its own dirty
    /// pages of both ranges and drops its cached pages of the destination
    /// range after the reply.
    pub(crate) fn v42_copy_file_range(
        &self,
        (ino_in, offset_in): (INodeNo, u64),
        (ino_out, offset_out): (INodeNo, u64),
        len: u64,
        flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        if !flags.is_empty() {
            return reply.error(Errno::EINVAL);
        }
        // The kernel falls back to read and write, for good.
        if !self.client.has_v42() {
            return reply.error(Errno::ENOSYS);
        }
        let (src, dst) = match (self.handle(ino_in), self.handle(ino_out)) {
            (Ok(s), Ok(d)) => (s, d),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        let (c, len) = (self.client.clone(), len.min(MAX_COPY));
        self.changing(
            ino_out,
            async move { c.copy_range_handle(&src, offset_in, &dst, offset_out, len).await },
            move |r| match r {
                // At most MAX_COPY, so it fits.
                Ok(n) => reply.written(n as u32),
                // EOPNOTSUPP and EXDEV (a server refusing this copy) make
                // the kernel copy this one through read and write, and
                // still ask for the next.
                Err(e) => reply.error(errno(&e)),
            },
        );
    }

    /// lseek(2) SEEK_DATA and SEEK_HOLE (the kernel keeps SEEK_SET, CUR
    /// and END to itself), with the answers of a local file system: ENXIO
    /// for an offset at or past the end, and for SEEK_DATA with no data
    /// after the offset.
    pub(crate) fn v42_lseek(&self, ino: INodeNo, offset: i64, whence: i32, reply: ReplyLseek) {
        let data = match whence {
            libc::SEEK_DATA => true,
            libc::SEEK_HOLE => false,
            _ => return reply.error(Errno::EINVAL),
        };
        // The kernel answers as for a file that is data to its end.
        if !self.client.has_v42() {
            return reply.error(Errno::ENOSYS);
        }
        let Ok(offset) = u64::try_from(offset) else { return reply.error(Errno::ENXIO) };
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let c = self.client.clone();
        self.spawn(async move {
            match c.seek_handle(&fh, offset, data).await {
                // RFC 7862: no data found is eof (the Linux NFS client's
                // reading too).
                Ok((_, true)) if data => reply.error(Errno::ENXIO),
                // The virtual hole at the end, asked for at the end itself:
                // Linux says ENXIO for an offset not before the size.
                Ok((found, true)) if found == offset => reply.error(Errno::ENXIO),
                Ok((found, _)) => reply.offset(i64::try_from(found).unwrap_or(i64::MAX)),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    /// fallocate(2): mode 0 reserves the range (growing the file),
    /// PUNCH_HOLE|KEEP_SIZE makes it a hole. Other modes (KEEP_SIZE
    /// alone, ZERO_RANGE, COLLAPSE_RANGE...) have no NFSv4.2 operation:
    /// EOPNOTSUPP, which programs take as "not on this file system".
    pub(crate) fn v42_fallocate(&self, ino: INodeNo, offset: u64, length: u64, mode: i32, reply: ReplyEmpty) {
        // The kernel says EOPNOTSUPP itself from then on.
        if !self.client.has_v42() {
            return reply.error(Errno::ENOSYS);
        }
        let punch = match mode {
            0 => false,
            m if m == libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE => true,
            _ => return reply.error(Errno::EOPNOTSUPP),
        };
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let c = self.client.clone();
        // The kernel drops its cached attributes (and, for a hole, its
        // cached pages of the range) after the reply.
        self.changing(ino, async move { c.allocate_handle(&fh, offset, length, punch).await }, move |r| match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        });
    }

    pub(crate) fn v42_getxattr(&self, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if !self.client.has_v42() {
            return reply.error(Errno::ENOSYS);
        }
        // security.capability is asked for before every write: answered
        // here, without a call.
        let name = match user_name(name) {
            None => return reply.error(Errno::ENODATA),
            Some(Err(e)) => return reply.error(e),
            Some(Ok(n)) => n,
        };
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let c = self.client.clone();
        self.spawn(async move {
            match c.getxattr_handle(&fh, &name).await {
                Ok(v) => reply_sized(reply, size, &v),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    pub(crate) fn v42_listxattr(&self, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if !self.client.has_v42() {
            return reply.error(Errno::ENOSYS);
        }
        let fh = match self.handle(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        let c = self.client.clone();
        self.spawn(async move {
            match c.listxattrs_handle(&fh).await {
                Ok(names) => reply_sized(reply, size, &name_list(&names)),
                Err(e) => reply.error(errno(&e)),
            }
        });
    }

    pub(crate) fn v42_setxattr(&self, ino: INodeNo, name: &OsStr, value: &[u8], flags: i32, reply: ReplyEmpty) {
        if !self.client.has_v42() {
            return reply.error(Errno::ENOSYS);
        }
        let how = match flags {
            0 => XattrHow::Either,
            libc::XATTR_CREATE => XattrHow::Create,
            libc::XATTR_REPLACE => XattrHow::Replace,
            _ => return reply.error(Errno::EINVAL),
        };
        let value = value.to_vec();
        self.xattr_change(ino, name, reply, move |c, fh, name| async move {
            c.setxattr_handle(&fh, &name, &value, how).await
        });
    }

    pub(crate) fn v42_removexattr(&self, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if !self.client.has_v42() {
            return reply.error(Errno::ENOSYS);
        }
        self.xattr_change(ino, name, reply, |c, fh, name| async move { c.removexattr_handle(&fh, &name).await });
    }
}

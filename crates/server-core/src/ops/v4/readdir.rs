//! READDIR (RFC 8881 section 18.23).
//!
//! Cookies 0, 1 and 2 are reserved by the RFC: every backend cookie `c`
//! (never 0, by the `Vfs::readdir` contract) goes on the wire as `c + 2`;
//! pseudo-fs directories number their entries from 3. `.` and `..` are
//! not listed. A client sending 1 or 2, or a cookie the backend never
//! gave, gets NFS4ERR_BAD_COOKIE; a cookie with another directory
//! incarnation's verifier NFS4ERR_NOT_SAME (a zero verifier is accepted,
//! see `check_cookie`).
//!
//! The reply is filled up to `maxcount` (capped by `max_readdir_reply`)
//! using each entry's exact encoded size, and `dircount` (names and
//! cookies only) is honoured as well, always allowing one entry. Entries
//! whose attributes cannot be read carry rdattr_error when the client
//! asked for it; otherwise the whole READDIR fails. Pseudo directories
//! list only the exports the client is admitted to.

use bytes::Bytes;
use proto::nfs4::*;
use vfs::{Access, VfsError};

use super::attrs::{self, Subject};
use super::dirops::directory;
use super::status::stat4;
use super::{Compound, Fh, Obj};
use crate::auth::may;
use crate::fh::HandleData;
use crate::ops::listing::{entries_that_fit, read_batch};

/// Added to backend cookies on the wire.
const COOKIE_OFFSET: u64 = 2;
/// Verifier, the list terminator and eof: what `maxcount` counts besides
/// the entries (RFC 8881 18.23.3 — the status is not part of it).
const FIXED_REPLY: usize = 8 + 4 + 4;
/// The smallest entry with attributes: list marker, cookie, a one-byte
/// name, one bitmap word and one 4-byte attribute.
const MIN_ENTRY: usize = 4 + 8 + 8 + 8 + 8;

fn xdr_len(n: usize) -> usize {
    4 + n + xdr::pad_len(n)
}

struct Reply {
    entries: Vec<entry4>,
    used: usize,
    limit: usize,
    dir_used: usize,
    dircount: usize,
}

impl Reply {
    /// Adds an entry if it fits; false when the reply is full.
    fn offer(&mut self, cookie: u64, name: Bytes, attrs: fattr4) -> bool {
        let dir_size = 8 + xdr_len(name.len());
        let size = 4 + dir_size + 4 + 4 * attrs.attrmask.len() + xdr_len(attrs.attr_vals.len());
        if self.used + size > self.limit {
            return false;
        }
        if self.dircount != 0 && !self.entries.is_empty() && self.dir_used + dir_size > self.dircount {
            return false;
        }
        self.used += size;
        self.dir_used += dir_size;
        self.entries.push(entry4 { cookie, name, attrs });
        true
    }

    /// About how many more entries fit.
    fn room(&self) -> usize {
        let by_size = entries_that_fit(
            self.limit.saturating_sub(self.used),
            self.used - FIXED_REPLY,
            self.entries.len(),
            MIN_ENTRY,
        );
        let by_dir =
            if self.dircount > 0 { self.dircount.saturating_sub(self.dir_used) / (8 + 8) + 1 } else { usize::MAX };
        by_size.min(by_dir)
    }
}

/// An entry's attributes: rdattr_error in place of failure when asked.
fn entry_attrs<'s>(
    cx: &Compound,
    request: &[u32],
    get: impl FnOnce() -> Result<Subject<'s>, nfsstat4>,
) -> Result<fattr4, nfsstat4> {
    if request.iter().all(|w| *w == 0) {
        return Ok(fattr4::default());
    }
    match get().and_then(|s| attrs::encode(cx, &s, request)) {
        Ok(f) => Ok(f),
        Err(e) if attrs::has(request, FATTR4_RDATTR_ERROR) => Ok(attrs::rdattr_error_only(e)),
        Err(e) => Err(e),
    }
}

pub(super) fn run(cx: &mut Compound, args: READDIR4args) -> Result<READDIR4resok, nfsstat4> {
    let fh = cx.cfh()?;
    if attrs::WRITE_ONLY.iter().any(|n| attrs::has(&args.attr_request, *n)) {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let limit = (args.maxcount as usize).min(cx.core.settings().max_readdir_reply as usize);
    let mut reply =
        Reply { entries: Vec::new(), used: FIXED_REPLY, limit, dir_used: 0, dircount: args.dircount as usize };
    let (cookieverf, eof) = match fh {
        Fh::Pseudo(node) => pseudo(cx, node, &args, &mut reply)?,
        fh => {
            let dir = cx.resolve(fh)?;
            export(cx, &dir, &args, &mut reply)?
        }
    };
    if (reply.entries.is_empty() && !eof) || FIXED_REPLY > limit {
        return Err(nfsstat4::NFS4ERR_TOOSMALL);
    }
    Ok(READDIR4resok { cookieverf, reply: dirlist4 { entries: reply.entries, eof } })
}

fn check_cookie(args: &READDIR4args, verf: &verifier4) -> Result<(), nfsstat4> {
    if args.cookie == 1 || args.cookie == 2 {
        return Err(nfsstat4::NFS4ERR_BAD_COOKIE);
    }
    // A zero verifier with a later cookie is taken as "none": libnfs
    // continues listings so, and the Linux server and NFS-Ganesha accept
    // it. The cookies (the directory's own offsets) stay valid anyway; a
    // verifier of another incarnation of the directory is still refused.
    if args.cookie != 0 && args.cookieverf != *verf && args.cookieverf != [0; 8] {
        return Err(nfsstat4::NFS4ERR_NOT_SAME);
    }
    Ok(())
}

fn pseudo(cx: &Compound, node: u32, args: &READDIR4args, reply: &mut Reply) -> Result<(verifier4, bool), nfsstat4> {
    let verf = u64::from(cx.state().boot).to_be_bytes();
    check_cookie(args, &verf)?;
    let children = &cx.core.pseudo.nodes.get(node as usize).ok_or(nfsstat4::NFS4ERR_STALE)?.children;
    let start = if args.cookie == 0 { 0 } else { (args.cookie - COOKIE_OFFSET) as usize };
    if start > children.len() {
        return Err(nfsstat4::NFS4ERR_BAD_COOKIE);
    }
    for (i, (name, child)) in children.iter().enumerate().skip(start) {
        let cookie = i as u64 + 1 + COOKIE_OFFSET;
        let fattr = match *child {
            super::pseudo::Child::Node(n) => entry_attrs(cx, &args.attr_request, || Ok(Subject::Pseudo(n)))?,
            super::pseudo::Child::Export(id) => {
                let Some(export) = cx.core.export_by_id(id) else { continue };
                if crate::exports::match_rule(&export.rules, cx.call.peer).is_none() {
                    continue;
                }
                entry_attrs(cx, &args.attr_request, || {
                    let root = export.fs.root();
                    let attrs = export.fs.getattr(root).map_err(stat4)?;
                    Ok(Subject::Obj { export, id: root, attrs })
                })?
            }
        };
        if !reply.offer(cookie, Bytes::copy_from_slice(name), fattr) {
            return Ok((verf, false));
        }
    }
    Ok((verf, true))
}

fn export(cx: &Compound, dir: &Obj, args: &READDIR4args, reply: &mut Reply) -> Result<(verifier4, bool), nfsstat4> {
    directory(dir, false)?;
    if !may(&dir.attrs, &dir.creds, Access::READ) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    let verf = cx.core.fh.cookieverf(&HandleData {
        export_id: dir.export.id,
        fileid: dir.id,
        generation: dir.attrs.generation,
    });
    check_cookie(args, &verf)?;
    let fs = dir.fs();
    let mut backend_cookie = args.cookie.saturating_sub(COOKIE_OFFSET);
    let max_batch = (cx.core.settings().readdir_batch as usize).max(1);
    // Without attributes to return, names are enough; with them, each
    // batch is read with its entries' objects and sized to what the reply
    // still has room for, so no attributes are read only to be dropped.
    let with_attrs = args.attr_request.iter().any(|w| *w != 0);
    loop {
        let batch = if with_attrs { reply.room().clamp(1, max_batch) } else { max_batch };
        let (entries, eof) = read_batch(fs, dir.id, backend_cookie, batch, with_attrs).map_err(stat4)?;
        let last = entries.last().map(|(e, _)| e.cookie);
        for (e, obj) in entries {
            let Some(wire) = e.cookie.checked_add(COOKIE_OFFSET).filter(|_| e.cookie != 0) else {
                tracing::error!(export = %dir.export.path, cookie = e.cookie, "backend returned a readdir cookie outside 1..=u64::MAX-2");
                return Err(nfsstat4::NFS4ERR_SERVERFAULT);
            };
            // Removed since the listing was read: not an entry any more.
            if matches!(obj, Some(Err(VfsError::NotFound))) {
                continue;
            }
            let fattr = entry_attrs(cx, &args.attr_request, || {
                let (id, attrs) = obj.unwrap_or(Err(VfsError::Invalid)).map_err(stat4)?;
                Ok(Subject::Obj { export: dir.export, id, attrs })
            })?;
            if !reply.offer(wire, e.name, fattr) {
                return Ok((verf, false));
            }
        }
        match last {
            _ if eof => return Ok((verf, true)),
            Some(last) => backend_cookie = last,
            None => {
                tracing::error!(export = %dir.export.path, "backend readdir returned no entries and no eof; treating as end");
                return Ok((verf, true));
            }
        }
    }
}

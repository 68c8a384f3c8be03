//! READDIR (RFC 1813 section 3.3.16), and the directory walk READDIRPLUS
//! shares.
//!
//! Cookies: `.` and `..` are listed first, with the reserved cookies 1 and
//! 2; every backend cookie `c` (never 0, by the `Vfs::readdir` contract)
//! goes on the wire as `c + 2`, so the two ranges never collide. A client
//! resuming at 1 gets `..` next, at 2 the first backend entry.
//!
//! The cookie verifier is derived from the directory's handle (export,
//! id, generation): backend cookies stay valid while the directory lives,
//! so the verifier only has to tell a recreated directory from the old.
//! Cookie 0 is accepted with any verifier; any other cookie needs the
//! current one (NFS3ERR_BAD_COOKIE otherwise).
//!
//! Replies are filled up to the client's byte limit (capped by
//! `max_readdir_reply`) using the exact encoded size of every entry.

use bytes::Bytes;
use proto::nfs3::{cookieverf3, dirlist3, entry3, nfsstat3, READDIR3args, READDIR3res, READDIR3resfail, READDIR3resok};
use vfs::{Access, Attrs, FileId};

use super::{fattr, stat, Ctx, Obj};
use crate::auth::may;
use crate::ops::listing::read_batch;

pub(super) const COOKIE_DOT: u64 = 1;
pub(super) const COOKIE_DOTDOT: u64 = 2;
/// Added to backend cookies on the wire (see the module documentation).
const COOKIE_OFFSET: u64 = 2;

/// Bytes of a reply that do not depend on the entries: status, directory
/// attributes, verifier, the list terminator and eof.
pub(super) const FIXED_REPLY: usize = 4 + POST_OP_ATTR_SIZE + 8 + 4 + 4;
/// A post_op_attr carrying a fattr3 (84 bytes) after its boolean.
pub(super) const POST_OP_ATTR_SIZE: usize = 4 + 84;

/// Encoded size of an entry3 (list marker, fileid, name, cookie); also
/// the "directory information" part of an entryplus3.
pub(super) const fn entry3_size(name_len: usize) -> usize {
    4 + 8 + 4 + name_len + xdr::pad_len(name_len) + 8
}

/// One entry offered to a reply being filled.
pub(super) struct Candidate {
    pub fileid: FileId,
    pub name: Bytes,
    /// The wire cookie (after the offset).
    pub cookie: u64,
    /// The object, when known: `.` and `..`, and every entry of a
    /// [`Listing::WithAttrs`] whose object could be read.
    pub known: Option<(FileId, Attrs)>,
}

/// Checks the verifier and READ permission before a listing.
pub(super) fn check_start(ctx: &Ctx, dir: &Obj, cookie: u64, verf: &cookieverf3) -> Result<cookieverf3, nfsstat3> {
    if !dir.is_dir() {
        return Err(nfsstat3::NFS3ERR_NOTDIR);
    }
    if !may(&dir.attrs, &dir.creds, Access::READ) {
        return Err(nfsstat3::NFS3ERR_ACCES);
    }
    let expected = ctx.cookieverf(dir);
    if cookie != 0 && *verf != expected {
        ctx.core.warn(
            crate::WarnKind::Garbage,
            || tracing::debug!(peer = %ctx.call.peer.addr, cookie, "READDIR with a stale cookie verifier"),
        );
        return Err(nfsstat3::NFS3ERR_BAD_COOKIE);
    }
    Ok(expected)
}

/// What a reply being filled says to an entry offered to it.
pub(super) enum Room {
    /// The entry did not fit: the reply is complete.
    Full,
    /// Taken; about this many more entries could still fit.
    Left(usize),
}

/// How the walk reads the backend.
#[derive(Clone, Copy)]
pub(super) enum Listing {
    /// Names only, in batches of `readdir_batch`.
    Names,
    /// Names with each entry's object (READDIRPLUS). The first batch is
    /// this many entries; later ones are what the reply says it has room
    /// for, so no entry's attributes are read only to be dropped.
    WithAttrs(usize),
}

/// Offers the entries after wire cookie `cookie` to `accept` until it
/// answers [`Room::Full`] or the directory ends; returns whether the end
/// was reached with every entry accepted (eof).
pub(super) fn walk(
    ctx: &Ctx,
    dir: &Obj,
    cookie: u64,
    listing: Listing,
    mut accept: impl FnMut(Candidate) -> Room,
) -> Result<bool, nfsstat3> {
    let fs = dir.fs();
    if cookie == 0 {
        let dot = Candidate {
            fileid: dir.attrs.fileid,
            name: Bytes::from_static(b"."),
            cookie: COOKIE_DOT,
            known: Some((dir.id, dir.attrs.clone())),
        };
        if let Room::Full = accept(dot) {
            return Ok(false);
        }
    }
    if cookie <= COOKIE_DOT {
        let parent = fs.lookup(dir.id, b"..").ok();
        let fileid = parent.as_ref().map_or(dir.attrs.fileid, |(_, a)| a.fileid);
        let dotdot = Candidate { fileid, name: Bytes::from_static(b".."), cookie: COOKIE_DOTDOT, known: parent };
        if let Room::Full = accept(dotdot) {
            return Ok(false);
        }
    }
    let mut backend_cookie = cookie.saturating_sub(COOKIE_OFFSET);
    let max_batch = (ctx.core.settings.readdir_batch as usize).max(1);
    let mut batch = match listing {
        Listing::Names => max_batch,
        Listing::WithAttrs(first) => first.clamp(1, max_batch),
    };
    let with_attrs = matches!(listing, Listing::WithAttrs(_));
    loop {
        let (entries, eof) = read_batch(fs, dir.id, backend_cookie, batch, with_attrs).map_err(stat)?;
        let last = entries.last().map(|(e, _)| e.cookie);
        for (e, known) in entries {
            let Some(wire) = e.cookie.checked_add(COOKIE_OFFSET).filter(|_| e.cookie != 0) else {
                tracing::error!(export = %dir.export.path, cookie = e.cookie, "backend returned a readdir cookie outside 1..=u64::MAX-2");
                return Err(nfsstat3::NFS3ERR_SERVERFAULT);
            };
            let known = known.and_then(Result::ok);
            match accept(Candidate { fileid: e.fileid, name: e.name, cookie: wire, known }) {
                Room::Full => return Ok(false),
                Room::Left(n) if with_attrs => batch = n.clamp(1, max_batch),
                Room::Left(_) => {}
            }
        }
        match last {
            _ if eof => return Ok(true),
            Some(last) => backend_cookie = last,
            None => {
                tracing::error!(export = %dir.export.path, "backend readdir returned no entries and no eof; treating as end");
                return Ok(true);
            }
        }
    }
}

pub(super) fn readdir(ctx: &Ctx, a: READDIR3args) -> READDIR3res {
    let dir = match ctx.resolve(&a.dir) {
        Ok(o) => o,
        Err(s) => return READDIR3res::default(s, READDIR3resfail { dir_attributes: None }),
    };
    let fail = |s| READDIR3res::default(s, READDIR3resfail { dir_attributes: Some(fattr(&dir.attrs)) });
    let verf = match check_start(ctx, &dir, a.cookie, &a.cookieverf) {
        Ok(v) => v,
        Err(s) => return fail(s),
    };
    let limit = (a.count as usize).min(ctx.core.settings.max_readdir_reply as usize);
    let mut used = FIXED_REPLY;
    let mut entries = Vec::new();
    let eof = walk(ctx, &dir, a.cookie, Listing::Names, |c| {
        let size = entry3_size(c.name.len());
        if used + size > limit {
            return Room::Full;
        }
        used += size;
        entries.push(entry3 { fileid: c.fileid, name: c.name, cookie: c.cookie });
        Room::Left(usize::MAX)
    });
    let eof = match eof {
        Ok(eof) => eof,
        Err(s) => return fail(s),
    };
    if entries.is_empty() && !eof {
        return fail(nfsstat3::NFS3ERR_TOOSMALL);
    }
    if FIXED_REPLY > limit {
        return fail(nfsstat3::NFS3ERR_TOOSMALL);
    }
    READDIR3res::NFS3_OK(READDIR3resok {
        dir_attributes: Some(fattr(&dir.attrs)),
        cookieverf: verf,
        reply: dirlist3 { entries, eof },
    })
}

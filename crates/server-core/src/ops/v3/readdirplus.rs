//! READDIRPLUS (RFC 1813 section 3.3.17): READDIR with each entry's
//! attributes and handle (found by looking the name up, so an entry that
//! vanished meanwhile is listed without them).
//!
//! `maxcount` bounds the whole reply and is enforced exactly; `dircount`
//! bounds the directory-information part (fileid, name, cookie) and is
//! applied from the second entry on, so a client's small `dircount` never
//! turns into NFS3ERR_TOOSMALL when `maxcount` has room for an entry.

use proto::nfs3::{
    dirlistplus3, entryplus3, nfsstat3, READDIRPLUS3args, READDIRPLUS3res, READDIRPLUS3resfail, READDIRPLUS3resok,
};

use super::readdir::{check_start, entry3_size, walk, Listing, Room, FIXED_REPLY, POST_OP_ATTR_SIZE};
use super::{fattr, Ctx};
use crate::ops::listing::entries_that_fit;

/// The smallest entry that carries attributes and a handle: a one-byte
/// name, the attributes, an empty handle. Bounds the first batch read.
const MIN_ENTRY: usize = entry3_size(1) + POST_OP_ATTR_SIZE + 8;

pub(super) fn readdirplus(ctx: &Ctx, a: READDIRPLUS3args) -> READDIRPLUS3res {
    let dir = match ctx.resolve(&a.dir) {
        Ok(o) => o,
        Err(s) => return READDIRPLUS3res::default(s, READDIRPLUS3resfail { dir_attributes: None }),
    };
    let fail = |s| READDIRPLUS3res::default(s, READDIRPLUS3resfail { dir_attributes: Some(fattr(&dir.attrs)) });
    let verf = match check_start(ctx, &dir, a.cookie, &a.cookieverf) {
        Ok(v) => v,
        Err(s) => return fail(s),
    };
    let limit = (a.maxcount as usize).min(ctx.core.settings.max_readdir_reply as usize);
    let dir_limit = a.dircount as usize;
    let mut used = FIXED_REPLY;
    let mut dir_used = 0usize;
    let mut entries: Vec<entryplus3> = Vec::new();
    let room = |used: usize, dir_used: usize, taken: usize| {
        let by_size = entries_that_fit(limit.saturating_sub(used), used - FIXED_REPLY, taken, MIN_ENTRY);
        let by_dir = if dir_limit > 0 { dir_limit.saturating_sub(dir_used) / entry3_size(1) + 1 } else { usize::MAX };
        by_size.min(by_dir)
    };
    let first = room(used, dir_used, 0);
    let eof = walk(ctx, &dir, a.cookie, Listing::WithAttrs(first), |c| {
        let obj = c.known;
        let name_handle = obj.as_ref().map(|(id, attrs)| ctx.handle(dir.export, *id, attrs));
        let name_attributes = obj.as_ref().map(|(_, attrs)| fattr(attrs));
        let dir_size = entry3_size(c.name.len());
        let attr_size = if name_attributes.is_some() { POST_OP_ATTR_SIZE } else { 4 };
        let fh_size = name_handle.as_ref().map_or(4, |h| 4 + 4 + h.data.len() + xdr::pad_len(h.data.len()));
        let size = dir_size + attr_size + fh_size;
        if used + size > limit || (!entries.is_empty() && dir_limit > 0 && dir_used + dir_size > dir_limit) {
            return Room::Full;
        }
        used += size;
        dir_used += dir_size;
        entries.push(entryplus3 { fileid: c.fileid, name: c.name, cookie: c.cookie, name_attributes, name_handle });
        Room::Left(room(used, dir_used, entries.len()))
    });
    let eof = match eof {
        Ok(eof) => eof,
        Err(s) => return fail(s),
    };
    if (entries.is_empty() && !eof) || FIXED_REPLY > limit {
        return fail(nfsstat3::NFS3ERR_TOOSMALL);
    }
    READDIRPLUS3res::NFS3_OK(READDIRPLUS3resok {
        dir_attributes: Some(fattr(&dir.attrs)),
        cookieverf: verf,
        reply: dirlistplus3 { entries, eof },
    })
}

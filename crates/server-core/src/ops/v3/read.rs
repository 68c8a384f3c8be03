//! READ (RFC 1813 section 3.3.6).
//!
//! The count is capped at `rtmax` (a short read is always allowed; the
//! reply's count and eof tell the client). The data is the backend's
//! `Bytes` and is encoded as its own reply segment, so it is not copied
//! again on its way to the socket. The attributes are taken after the
//! read so they describe the data returned.

use proto::nfs3::{nfsstat3, READ3args, READ3res, READ3resfail, READ3resok};

use super::{check_regular, fattr, stat, Ctx};
use crate::auth::may_read;

pub(super) fn read(ctx: &Ctx, a: READ3args) -> READ3res {
    let o = match ctx.resolve(&a.file) {
        Ok(o) => o,
        Err(s) => return READ3res::default(s, READ3resfail { file_attributes: None }),
    };
    let fail = |s| READ3res::default(s, READ3resfail { file_attributes: Some(fattr(&o.attrs)) });
    if let Err(s) = check_regular(&o) {
        return fail(s);
    }
    if !may_read(&o.attrs, &o.creds) {
        return fail(nfsstat3::NFS3ERR_ACCES);
    }
    let count = a.count.min(ctx.core.settings.rtmax);
    match o.fs().read(o.id, a.offset, count) {
        Ok(r) => {
            let n = u32::try_from(r.data.len()).unwrap_or(u32::MAX);
            let mut data = r.data;
            if n > count {
                // A backend handing back more than asked would break the
                // reply size the client sized its buffer for.
                tracing::error!(asked = count, got = n, "backend read returned more than requested; truncated");
                data.truncate(count as usize);
            }
            READ3res::NFS3_OK(READ3resok {
                file_attributes: o.post_op().or_else(|| Some(fattr(&o.attrs))),
                count: n.min(count),
                eof: r.eof && n <= count,
                data,
            })
        }
        Err(e) => fail(stat(e)),
    }
}

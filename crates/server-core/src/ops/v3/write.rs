//! WRITE (RFC 1813 section 3.3.7).
//!
//! - `count` larger than the data sent is NFS3ERR_INVAL (the request is
//!   inconsistent); a `count` smaller than the data writes `count` bytes
//!   (the extra bytes are ignored, as knfsd does).
//! - What both versions share (a short write beyond `wtmax`, the largest
//!   file, `stable` on `sync` and `async` exports) is `ops::write`.

use proto::nfs3::{nfsstat3, stable_how, WRITE3args, WRITE3res, WRITE3resfail, WRITE3resok};
use vfs::Stability;

use super::{file_for_write, stat, Ctx};
use crate::ops::write::{end_within, within_wtmax};

pub(crate) fn stability(s: stable_how) -> Stability {
    match s {
        stable_how::UNSTABLE => Stability::Unstable,
        stable_how::DATA_SYNC => Stability::DataSync,
        stable_how::FILE_SYNC => Stability::FileSync,
    }
}

fn stable_how_of(s: Stability) -> stable_how {
    match s {
        Stability::Unstable => stable_how::UNSTABLE,
        Stability::DataSync => stable_how::DATA_SYNC,
        Stability::FileSync => stable_how::FILE_SYNC,
    }
}

pub(super) fn write(ctx: &Ctx, a: WRITE3args) -> WRITE3res {
    let o = match file_for_write(ctx, &a.file) {
        Ok(o) => o,
        Err((s, file_wcc)) => return WRITE3res::default(s, WRITE3resfail { file_wcc }),
    };
    let fail = |s| WRITE3res::default(s, WRITE3resfail { file_wcc: o.wcc_unchanged() });
    let Some(data) = a.data.get(..a.count as usize) else {
        ctx.core.warn(crate::WarnKind::Garbage, || {
            tracing::warn!(peer = %ctx.call.peer.addr, count = a.count, len = a.data.len(), "WRITE count exceeds the data sent")
        });
        return fail(nfsstat3::NFS3ERR_INVAL);
    };
    let data = within_wtmax(ctx.core, data);
    if let Err(e) = end_within(ctx.core, a.offset, data.len() as u64) {
        return fail(stat(e));
    }
    if let Err(s) = super::delegations::recall_for(ctx, &o, true) {
        return fail(s);
    }
    match crate::ops::write::write(&o, a.offset, data, stability(a.stable)) {
        Ok(r) => WRITE3res::NFS3_OK(WRITE3resok {
            file_wcc: o.wcc(),
            count: r.count,
            committed: stable_how_of(r.committed),
            verf: ctx.core.write_verifier(),
        }),
        Err(e) => WRITE3res::default(stat(e), WRITE3resfail { file_wcc: o.wcc() }),
    }
}

//! COMMIT (RFC 1813 section 3.3.21). The flush and the write verifier's
//! fate when it fails are what both versions share (`ops::commit`).

use proto::nfs3::{COMMIT3args, COMMIT3res, COMMIT3resfail, COMMIT3resok};

use super::{file_for_write, stat, Ctx};

pub(super) fn commit(ctx: &Ctx, a: COMMIT3args) -> COMMIT3res {
    let o = match file_for_write(ctx, &a.file) {
        Ok(o) => o,
        Err((s, file_wcc)) => return COMMIT3res::default(s, COMMIT3resfail { file_wcc }),
    };
    match crate::ops::commit::commit(ctx.core, &o, a.offset, a.count) {
        Ok(verf) => COMMIT3res::NFS3_OK(COMMIT3resok { file_wcc: o.wcc(), verf }),
        Err(e) => COMMIT3res::default(stat(e), COMMIT3resfail { file_wcc: o.wcc() }),
    }
}

//! COMMIT (RFC 1813 section 3.3.21).
//!
//! `count == 0` means "to the end of the file" (the backend contract says
//! the same). A backend error here reports a write that failed after it
//! was acknowledged as UNSTABLE: the error goes back to the client, and on
//! a failed write-back the write verifier is changed so that every client
//! holding uncommitted data resends it instead of trusting a later COMMIT
//! (`ops::commit`).

use proto::nfs3::{COMMIT3args, COMMIT3res, COMMIT3resfail, COMMIT3resok};

use super::{file_for_write, stat, Ctx};

pub(super) fn commit(ctx: &Ctx, a: COMMIT3args) -> COMMIT3res {
    let o = match file_for_write(ctx, &a.file) {
        Ok(o) => o,
        Err((s, file_wcc)) => return COMMIT3res::default(s, COMMIT3resfail { file_wcc }),
    };
    let verf = ctx.core.write_verifier();
    match o.fs().commit(o.id, a.offset, a.count) {
        Ok(()) => COMMIT3res::NFS3_OK(COMMIT3resok { file_wcc: o.wcc(), verf }),
        Err(e) => {
            crate::ops::commit::failed(ctx.core, verf, &o.export.path, o.id, &e);
            COMMIT3res::default(stat(e), COMMIT3resfail { file_wcc: o.wcc() })
        }
    }
}

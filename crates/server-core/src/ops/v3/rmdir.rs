//! RMDIR (RFC 1813 section 3.3.13): an empty directory; `.` is
//! NFS3ERR_INVAL and `..` NFS3ERR_EXIST, as the RFC describes. The checks
//! are shared with REMOVE (`remove_entry`).

use proto::nfs3::{RMDIR3args, RMDIR3res, RMDIR3resfail, RMDIR3resok};

use super::{remove_entry, Ctx};

pub(super) fn rmdir(ctx: &Ctx, a: RMDIR3args) -> RMDIR3res {
    match remove_entry(ctx, &a.object, |fs, dir, name| fs.rmdir(dir, name)) {
        Ok(dir_wcc) => RMDIR3res::NFS3_OK(RMDIR3resok { dir_wcc }),
        Err((s, dir_wcc)) => RMDIR3res::default(s, RMDIR3resfail { dir_wcc }),
    }
}

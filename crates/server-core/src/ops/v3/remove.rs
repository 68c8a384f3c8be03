//! REMOVE (RFC 1813 section 3.3.12): a non-directory. The checks, with the
//! sticky-directory rule, are shared with RMDIR (`remove_entry`).

use proto::nfs3::{REMOVE3args, REMOVE3res, REMOVE3resfail, REMOVE3resok};

use super::{remove_entry, Ctx};

pub(super) fn remove(ctx: &Ctx, a: REMOVE3args) -> REMOVE3res {
    match remove_entry(ctx, &a.object, |fs, dir, name| fs.remove(dir, name)) {
        Ok(dir_wcc) => REMOVE3res::NFS3_OK(REMOVE3resok { dir_wcc }),
        Err((s, dir_wcc)) => REMOVE3res::default(s, REMOVE3resfail { dir_wcc }),
    }
}

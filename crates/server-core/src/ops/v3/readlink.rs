//! READLINK (RFC 1813 section 3.3.5). The target is returned as stored;
//! it is the client that interprets it, never the server.

use proto::nfs3::{nfsstat3, READLINK3args, READLINK3res, READLINK3resfail, READLINK3resok};
use vfs::FileType;

use super::{fattr, stat, Ctx};

pub(super) fn readlink(ctx: &Ctx, a: READLINK3args) -> READLINK3res {
    let o = match ctx.resolve(&a.symlink) {
        Ok(o) => o,
        Err(s) => return READLINK3res::default(s, READLINK3resfail { symlink_attributes: None }),
    };
    let fail = |s| READLINK3res::default(s, READLINK3resfail { symlink_attributes: Some(fattr(&o.attrs)) });
    if o.attrs.ftype != FileType::Symlink {
        return fail(nfsstat3::NFS3ERR_INVAL);
    }
    match o.fs().readlink(o.id) {
        Ok(data) => READLINK3res::NFS3_OK(READLINK3resok { symlink_attributes: Some(fattr(&o.attrs)), data }),
        Err(e) => fail(stat(e)),
    }
}

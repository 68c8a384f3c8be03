//! FSINFO (RFC 1813 section 3.3.19): transfer sizes from the settings,
//! nanosecond time resolution, and the capabilities every backend has.

use proto::nfs3::{
    nfstime3, FSINFO3args, FSINFO3res, FSINFO3resfail, FSINFO3resok, FSF3_CANSETTIME, FSF3_HOMOGENEOUS, FSF3_LINK,
    FSF3_SYMLINK,
};

use super::{fattr, Ctx};

/// Read/write sizes should be multiples of a page.
const IO_MULTIPLE: u32 = 4096;

pub(super) fn fsinfo(ctx: &Ctx, a: FSINFO3args) -> FSINFO3res {
    let o = match ctx.resolve(&a.fsroot) {
        Ok(o) => o,
        Err(s) => return FSINFO3res::default(s, FSINFO3resfail { obj_attributes: None }),
    };
    let s = &ctx.core.settings;
    FSINFO3res::NFS3_OK(FSINFO3resok {
        obj_attributes: Some(fattr(&o.attrs)),
        rtmax: s.rtmax,
        rtpref: s.rtpref,
        rtmult: IO_MULTIPLE,
        wtmax: s.wtmax,
        wtpref: s.wtpref,
        wtmult: IO_MULTIPLE,
        dtpref: s.dtpref,
        maxfilesize: s.max_file_size,
        time_delta: nfstime3 { seconds: 0, nseconds: 1 },
        properties: FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME,
    })
}

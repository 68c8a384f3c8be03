//! MKNOD (RFC 1813 section 3.3.11): devices, sockets and FIFOs. Regular
//! files, directories and links have their own procedures (BADTYPE here);
//! device nodes can only be made by root, as with mknod(2).

use proto::nfs3::{mknoddata3, nfsstat3, MKNOD3args, MKNOD3res, MKNOD3resfail, MKNOD3resok};
use vfs::NodeKind;

use super::{create_attrs, created, dir_for_create, Created, Ctx};
use crate::ops::create::new_owner;

pub(super) fn mknod(ctx: &Ctx, a: MKNOD3args) -> MKNOD3res {
    let fail = |(s, dir_wcc)| MKNOD3res::default(s, MKNOD3resfail { dir_wcc });
    let dir = match dir_for_create(ctx, &a.r#where) {
        Ok(d) => d,
        Err(f) => return fail(f),
    };
    let (kind, sattr) = match &a.what {
        mknoddata3::NF3CHR(d) => (NodeKind::CharDevice(d.spec.specdata1, d.spec.specdata2), &d.dev_attributes),
        mknoddata3::NF3BLK(d) => (NodeKind::BlockDevice(d.spec.specdata1, d.spec.specdata2), &d.dev_attributes),
        mknoddata3::NF3SOCK(s) => (NodeKind::Socket, s),
        mknoddata3::NF3FIFO(s) => (NodeKind::Fifo, s),
        mknoddata3::default(_) => return fail((nfsstat3::NFS3ERR_BADTYPE, dir.wcc_unchanged())),
    };
    let is_device = matches!(kind, NodeKind::CharDevice(..) | NodeKind::BlockDevice(..));
    if is_device && !dir.creds.is_root() {
        return fail((nfsstat3::NFS3ERR_PERM, dir.wcc_unchanged()));
    }
    let set = match create_attrs(&dir, sattr) {
        Ok(set) => set,
        Err(s) => return fail((s, dir.wcc_unchanged())),
    };
    let owner = new_owner(&dir.attrs, &dir.creds);
    let r = dir.fs().mknod(dir.id, &a.r#where.name, kind, &set, owner);
    match created(ctx, &dir, r) {
        Ok(Created { obj, obj_attributes, dir_wcc }) => {
            MKNOD3res::NFS3_OK(MKNOD3resok { obj, obj_attributes, dir_wcc })
        }
        Err(f) => fail(f),
    }
}

//! CREATE (RFC 8881 section 18.4): directories, symbolic links, devices,
//! sockets and FIFOs (regular files are made by OPEN: NFS4ERR_BADTYPE).
//! Device nodes can only be made by root, as with mknod(2). The new
//! object becomes the current handle.

use proto::nfs4::*;
use vfs::NodeKind;

use super::attrs;
use super::dirops::{before_dir_change, cinfo, directory, writable, Change};
use super::status::stat4;
use super::{check_name, Compound, Fh};
use crate::auth::may_add_entry;
use crate::ops::create;

/// PATH_MAX: the longest target a POSIX system can store.
const MAX_TARGET: usize = 4096;

pub(super) fn run(cx: &mut Compound, args: CREATE4args) -> Result<CREATE4resok, nfsstat4> {
    if let createtype4::default(_) = args.objtype {
        return Err(nfsstat4::NFS4ERR_BADTYPE);
    }
    let dir = cx.cobj(nfsstat4::NFS4ERR_ROFS)?;
    writable(&dir)?;
    directory(&dir, false)?;
    let name = check_name(cx.core, &args.objname)?;
    let (set, attrset) = attrs::decode_set(cx, &args.createattrs)?;
    create::check_attrs(&dir.creds, &set).map_err(stat4)?;
    if !may_add_entry(&dir.attrs, &dir.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    before_dir_change(cx, &dir, Change::Add(name))?;
    let owner = create::new_owner(&dir.attrs, &dir.creds);
    let fs = dir.fs();
    let mknod = |kind: NodeKind| {
        let is_device = matches!(kind, NodeKind::CharDevice(..) | NodeKind::BlockDevice(..));
        if is_device && !dir.creds.is_root() {
            return Err(nfsstat4::NFS4ERR_PERM);
        }
        fs.mknod(dir.id, name, kind, &set, owner).map_err(stat4)
    };
    let (id, attrs) = match &args.objtype {
        createtype4::NF4DIR => fs.mkdir(dir.id, name, &set, owner).map_err(stat4)?,
        createtype4::NF4LNK(target) => {
            if target.is_empty() || target.contains(&0) {
                return Err(nfsstat4::NFS4ERR_INVAL);
            }
            if target.len() > MAX_TARGET {
                return Err(nfsstat4::NFS4ERR_NAMETOOLONG);
            }
            fs.symlink(dir.id, name, target, &set, owner).map_err(stat4)?
        }
        createtype4::NF4BLK(d) => mknod(NodeKind::BlockDevice(d.specdata1, d.specdata2))?,
        createtype4::NF4CHR(d) => mknod(NodeKind::CharDevice(d.specdata1, d.specdata2))?,
        createtype4::NF4SOCK => mknod(NodeKind::Socket)?,
        createtype4::NF4FIFO => mknod(NodeKind::Fifo)?,
        createtype4::default(_) => return Err(nfsstat4::NFS4ERR_BADTYPE),
    };
    let cinfo = cinfo(&dir.attrs, fs, dir.id);
    cx.cfh = Some(Fh::Obj { export_id: dir.export.id, id, generation: attrs.generation });
    cx.current_stateid = None;
    Ok(CREATE4resok { cinfo, attrset })
}

//! LOOKUP (RFC 8881 section 18.13): from a pseudo-fs directory to another
//! or into an export's root (crossing into its file system), and within
//! an export through the backend. `.` and `..` are NFS4ERR_BADNAME (the
//! protocol has LOOKUPP for the parent).

use proto::nfs4::*;
use vfs::Access;

use super::dirops::directory;
use super::status::stat4;
use super::{check_name, Compound, Fh};
use crate::auth::may;

pub(super) fn run(cx: &mut Compound, args: LOOKUP4args) -> Result<(), nfsstat4> {
    let fh = match cx.cfh()? {
        Fh::Pseudo(node) => {
            let name = check_name(cx.core, &args.objname)?;
            cx.pseudo_lookup(node, name)?
        }
        fh => {
            let dir = cx.resolve(fh)?;
            directory(&dir, true)?;
            let name = check_name(cx.core, &args.objname)?;
            if !may(&dir.attrs, &dir.creds, Access::LOOKUP) {
                return Err(nfsstat4::NFS4ERR_ACCESS);
            }
            let (id, attrs) = dir.fs().lookup(dir.id, name).map_err(stat4)?;
            Fh::Obj { export_id: dir.export.id, id, generation: attrs.generation }
        }
    };
    cx.cfh = Some(fh);
    cx.current_stateid = None;
    Ok(())
}

//! LOOKUPP (RFC 8881 section 18.14): the parent directory, crossing from
//! an export's root back into the pseudo file system; the root of the
//! tree has none (NFS4ERR_NOENT).

use proto::nfs4::*;
use vfs::Access;

use super::dirops::directory;
use super::status::stat4;
use super::{Compound, Fh};
use crate::auth::may;

/// The parent of the current handle (LOOKUPP, SECINFO_NO_NAME's
/// SECINFO_STYLE4_PARENT).
pub(super) fn parent(cx: &Compound) -> Result<Fh, nfsstat4> {
    match cx.cfh()? {
        Fh::Pseudo(0) => Err(nfsstat4::NFS4ERR_NOENT),
        Fh::Pseudo(n) => cx.core.pseudo.parent(n).map(Fh::Pseudo).ok_or(nfsstat4::NFS4ERR_STALE),
        fh => {
            let o = cx.resolve(fh)?;
            directory(&o, true)?;
            if o.id == o.fs().root() {
                return cx.parent_of_export_root(o.export.id).ok_or(nfsstat4::NFS4ERR_NOENT);
            }
            if !may(&o.attrs, &o.creds, Access::LOOKUP) {
                return Err(nfsstat4::NFS4ERR_ACCESS);
            }
            let (id, attrs) = o.fs().lookup(o.id, b"..").map_err(stat4)?;
            Ok(Fh::Obj { export_id: o.export.id, id, generation: attrs.generation })
        }
    }
}

pub(super) fn run(cx: &mut Compound) -> Result<(), nfsstat4> {
    let fh = parent(cx)?;
    cx.cfh = Some(fh);
    cx.current_stateid = None;
    Ok(())
}

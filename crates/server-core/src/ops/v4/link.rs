//! LINK (RFC 8881 section 18.9): a hard link to the saved handle's object
//! in the current directory, within one export. Directories cannot be
//! linked (NFS4ERR_ISDIR).

use proto::nfs4::*;

use super::dirops::{before_dir_change, cinfo, directory, writable, Change};
use super::status::stat4;
use super::{check_name, Compound, Fh};
use crate::auth::may_add_entry;

pub(super) fn run(cx: &mut Compound, args: LINK4args) -> Result<LINK4resok, nfsstat4> {
    let sfh = cx.sfh.ok_or(nfsstat4::NFS4ERR_NOFILEHANDLE)?;
    let cfh = cx.cfh()?;
    match (sfh, cfh) {
        (Fh::Pseudo(_), Fh::Pseudo(_)) => return Err(nfsstat4::NFS4ERR_ISDIR),
        (Fh::Pseudo(_), _) | (_, Fh::Pseudo(_)) => return Err(nfsstat4::NFS4ERR_XDEV),
        _ => {}
    }
    let file = cx.resolve(sfh)?;
    let dir = cx.resolve(cfh)?;
    if file.export.id != dir.export.id {
        return Err(nfsstat4::NFS4ERR_XDEV);
    }
    writable(&dir)?;
    directory(&dir, false)?;
    if file.is_dir() {
        // Hard links to directories would make the tree a graph.
        return Err(nfsstat4::NFS4ERR_ISDIR);
    }
    let name = check_name(cx.core, &args.newname)?;
    if !may_add_entry(&dir.attrs, &dir.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    before_dir_change(cx, &dir, Change::Add(name))?;
    dir.fs().link(file.id, dir.id, name).map_err(stat4)?;
    Ok(LINK4resok { cinfo: cinfo(&dir.attrs, dir.fs(), dir.id) })
}

//! RENAME (RFC 8881 section 18.26): the saved handle is the source
//! directory, the current one the target. Both must be in one export
//! (NFS4ERR_XDEV otherwise; the pseudo file system is a file system of
//! its own and read-only). The caller needs delete rights on the source
//! directory (sticky rule included), the right to add to the target,
//! and delete rights there too when an existing entry is replaced. A
//! target of the other type, or a non-empty directory, is NFS4ERR_EXIST.

use proto::nfs4::*;
use vfs::VfsError;

use super::dirops::{before_dir_change, directory, recall_delegations, writable, Change};
use super::status::stat4;
use super::{check_name, Compound, Fh};
use crate::auth::{may_add_entry, may_delete_entry};
use crate::state::unlinked;

pub(super) fn run(cx: &mut Compound, args: RENAME4args) -> Result<RENAME4resok, nfsstat4> {
    let sfh = cx.sfh.ok_or(nfsstat4::NFS4ERR_NOFILEHANDLE)?;
    let cfh = cx.cfh()?;
    match (sfh, cfh) {
        (Fh::Pseudo(_), Fh::Pseudo(_)) => return Err(nfsstat4::NFS4ERR_ROFS),
        (Fh::Pseudo(_), _) | (_, Fh::Pseudo(_)) => return Err(nfsstat4::NFS4ERR_XDEV),
        _ => {}
    }
    let from = cx.resolve(sfh)?;
    let to = cx.resolve(cfh)?;
    if from.export.id != to.export.id {
        return Err(nfsstat4::NFS4ERR_XDEV);
    }
    writable(&from)?;
    writable(&to)?;
    directory(&from, false)?;
    directory(&to, false)?;
    let old = check_name(cx.core, &args.oldname)?;
    let new = check_name(cx.core, &args.newname)?;
    let fs = from.fs();
    let (victim_id, victim) = fs.lookup(from.id, old).map_err(stat4)?;
    if !may_delete_entry(&from.attrs, Some(&victim), &from.creds) || !may_add_entry(&to.attrs, &to.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    if from.id == to.id {
        before_dir_change(cx, &from, Change::Rename(new))?;
    } else {
        before_dir_change(cx, &from, Change::Remove(old))?;
        before_dir_change(cx, &to, Change::Add(new))?;
    }
    recall_delegations(cx, (from.export.id, victim_id, victim.generation))?;
    // The entry replaced, if any: (file, link count).
    let mut replaced_file = None;
    if let Ok((replaced_id, replaced)) = fs.lookup(to.id, new) {
        if !may_delete_entry(&to.attrs, Some(&replaced), &to.creds) {
            return Err(nfsstat4::NFS4ERR_ACCESS);
        }
        let file = (to.export.id, replaced_id, replaced.generation);
        recall_delegations(cx, file)?;
        // Renaming a name onto another of the same file removes nothing.
        if replaced_id != victim_id && replaced.ftype == vfs::FileType::Regular {
            replaced_file = Some((file, replaced.nlink));
        }
    }
    let rename = || fs.rename(from.id, old, to.id, new);
    let r = match replaced_file {
        Some((file, nlink)) => unlinked::remove_keeping(cx.state(), fs, file, nlink, rename),
        None => rename(),
    };
    r.map_err(|e| match e {
        VfsError::NotEmpty | VfsError::Exists | VfsError::IsDir | VfsError::NotDir => nfsstat4::NFS4ERR_EXIST,
        e => stat4(e),
    })?;
    let after = |dir: &super::Obj| fs.getattr(dir.id).map_or(dir.attrs.change, |a| a.change);
    let from_after = after(&from);
    let to_after = if to.id == from.id { from_after } else { after(&to) };
    // With one directory on both sides, both report its one snapshot.
    let to_before = if to.id == from.id { from.attrs.change } else { to.attrs.change };
    Ok(RENAME4resok {
        source_cinfo: change_info4 { atomic: false, before: from.attrs.change, after: from_after },
        target_cinfo: change_info4 { atomic: false, before: to_before, after: to_after },
    })
}

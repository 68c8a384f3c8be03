//! REMOVE (RFC 8881 section 18.25): a file or an empty directory. The
//! entry is looked up first, for its type (unlink or rmdir) and for the
//! sticky-directory rule.

use proto::nfs4::*;
use vfs::FileType;

use super::dirops::{before_dir_change, cinfo, directory, recall_delegations, writable, Change};
use super::status::stat4;
use super::{check_name, Compound};
use crate::auth::may_delete_entry;
use crate::state::unlinked;

pub(super) fn run(cx: &mut Compound, args: REMOVE4args) -> Result<REMOVE4resok, nfsstat4> {
    let dir = cx.cobj(nfsstat4::NFS4ERR_ROFS)?;
    writable(&dir)?;
    directory(&dir, false)?;
    let name = check_name(cx.core, &args.target)?;
    let fs = dir.fs();
    let (victim_id, victim) = fs.lookup(dir.id, name).map_err(stat4)?;
    if !may_delete_entry(&dir.attrs, Some(&victim), &dir.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    before_dir_change(cx, &dir, Change::Remove(name))?;
    recall_delegations(cx, (dir.export.id, victim_id, victim.generation))?;
    if victim.nlink <= 1 {
        super::dirops::recall_layouts(cx, (dir.export.id, victim_id, victim.generation));
    }
    let file = (dir.export.id, victim_id, victim.generation);
    let r = if victim.ftype == FileType::Directory {
        fs.rmdir(dir.id, name)
    } else {
        unlinked::remove_keeping(cx.state(), fs, file, victim.nlink, || fs.remove(dir.id, name))
    };
    r.map_err(stat4)?;
    Ok(REMOVE4resok { cinfo: cinfo(&dir.attrs, fs, dir.id) })
}

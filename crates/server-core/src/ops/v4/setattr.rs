//! SETATTR (RFC 8881 section 18.30). Permission follows POSIX as in
//! NFSv3 (`auth::check_setattr`). A size change is a write: its stateid
//! is checked against opens, locks and delegations like WRITE's; other
//! changes ignore the stateid. `attrsset` is empty on failure: the
//! backend applies the change in one step or not at all.

use proto::nfs4::*;
use vfs::FileType;

use super::attrs;
use super::dirops::writable;
use super::status::stat4;
use super::{Compound, Fh};
use crate::auth::{check_setattr, filter_mode, SetattrDenied};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: SETATTR4args) -> SETATTR4res {
    match set(cx, &args) {
        Ok(attrsset) => SETATTR4res { status: nfsstat4::NFS4_OK, attrsset },
        Err(status) => SETATTR4res { status, attrsset: Vec::new() },
    }
}

fn set(cx: &Compound, args: &SETATTR4args) -> Result<bitmap4, nfsstat4> {
    let fh = cx.cfh()?;
    let (mut set, given) = attrs::decode_set(cx, &args.obj_attributes)?;
    if let Fh::Pseudo(_) = fh {
        return Err(nfsstat4::NFS4ERR_ROFS);
    }
    let o = cx.resolve(fh)?;
    writable(&o)?;
    if let Some(size) = set.size {
        match o.attrs.ftype {
            FileType::Regular => {}
            FileType::Directory => return Err(nfsstat4::NFS4ERR_ISDIR),
            _ => return Err(nfsstat4::NFS4ERR_INVAL),
        }
        let stateid = cx.resolve_stateid(&args.stateid)?;
        let file = super::open::file_key(&o);
        cx.state().check_io_stateid(cx.session_client(), &stateid, file, IoKind::Write, (size, u64::MAX))?;
    }
    if o.is_dir() {
        // Its delegations are directory delegations, which may have asked
        // to hear of this instead.
        super::dirops::before_dir_change(cx, &o, super::dirops::Change::DirAttrs)?;
    } else {
        super::dirops::recall_delegations(cx, super::open::file_key(&o))?;
    }
    if set.size.is_some() {
        super::dirops::recall_layouts(cx, super::open::file_key(&o));
    }
    match check_setattr(&o.attrs, &o.creds, &set) {
        Ok(()) => {}
        Err(SetattrDenied::Perm) => return Err(nfsstat4::NFS4ERR_PERM),
        Err(SetattrDenied::Access) => return Err(nfsstat4::NFS4ERR_ACCESS),
    }
    if let Some(m) = set.mode {
        set.mode = Some(filter_mode(set.gid.unwrap_or(o.attrs.gid), &o.creds, m));
    }
    if given.iter().any(|w| *w != 0) {
        o.fs().setattr(o.id, &set, None).map_err(stat4)?;
    }
    Ok(given)
}

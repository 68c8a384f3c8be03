//! What every operation on a file's contents checks first: that the
//! object is a regular file, that the stateid allows the access (share
//! reservations, delegations of other clients, the open's mode; RFC 8881
//! 8.2.5), and the caller's permission. READ and WRITE use it, and the
//! NFSv4.2 operations that read or change data (RFC 7862: SEEK,
//! READ_PLUS, ALLOCATE, DEALLOCATE, COPY, CLONE, IO_ADVISE) follow
//! "the same rules for stateids as READ" or WRITE.

use proto::nfs4::*;
use vfs::FileType;

use super::open::{file_key, io_client};
use super::{Compound, Obj};
use crate::auth::{may_read, may_write};
use crate::state::stateids::IoKind;

/// The current object as a regular file to read: a directory is ISDIR
/// (as for READ), other types INVAL.
pub(super) fn file_to_read<'a>(cx: &Compound<'a>) -> Result<Obj<'a>, nfsstat4> {
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    match obj.attrs.ftype {
        FileType::Regular => Ok(obj),
        FileType::Directory => Err(nfsstat4::NFS4ERR_ISDIR),
        _ => Err(nfsstat4::NFS4ERR_INVAL),
    }
}

/// The current object as a regular file to write, on a writable export.
pub(super) fn file_to_write<'a>(cx: &Compound<'a>) -> Result<Obj<'a>, nfsstat4> {
    writable(file_to_read(cx)?)
}

/// The NFSv4.2 operations that change a file (ALLOCATE, DEALLOCATE, COPY
/// and CLONE's destination) say WRONG_TYPE for anything but a regular
/// file (RFC 7862 sections 15.1.3, 15.2.3, 15.4.3, 15.13.3).
pub(super) fn file_to_change<'a>(cx: &Compound<'a>) -> Result<Obj<'a>, nfsstat4> {
    writable(regular(cx.cobj(nfsstat4::NFS4ERR_WRONG_TYPE)?)?)
}

/// `obj` if it is a regular file, else WRONG_TYPE.
pub(super) fn regular(obj: Obj) -> Result<Obj, nfsstat4> {
    match obj.attrs.ftype {
        FileType::Regular => Ok(obj),
        _ => Err(nfsstat4::NFS4ERR_WRONG_TYPE),
    }
}

fn writable(obj: Obj) -> Result<Obj, nfsstat4> {
    if obj.read_only() {
        return Err(nfsstat4::NFS4ERR_ROFS);
    }
    Ok(obj)
}

/// The stateid check for `kind` access to `range` of `obj`, then the
/// caller's permission for it.
pub(super) fn check(
    cx: &Compound,
    obj: &Obj,
    stateid: &stateid4,
    kind: IoKind,
    range: (u64, u64),
) -> Result<(), nfsstat4> {
    let sid = cx.resolve_stateid(stateid)?;
    cx.state().check_io_stateid(io_client(cx), &sid, file_key(obj), kind, range)?;
    let allowed = match kind {
        IoKind::Read => may_read(&obj.attrs, &obj.creds),
        IoKind::Write => may_write(&obj.attrs, &obj.creds),
    };
    if !allowed {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    Ok(())
}

/// The end of `[offset, offset+length)`, refused with FBIG past the
/// largest file the server stores (and when it overflows).
pub(super) fn end_within(cx: &Compound, offset: u64, length: u64) -> Result<u64, nfsstat4> {
    crate::ops::write::end_within(cx.core, offset, length).map_err(super::status::stat4)
}

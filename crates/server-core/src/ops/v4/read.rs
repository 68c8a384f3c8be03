//! READ (RFC 8881 section 18.22).
//!
//! The stateid is checked first (share reservations, delegations of
//! other clients, the open's access mode); the count is capped at
//! `rtmax` (short reads are allowed; `eof` tells the client).

use proto::nfs4::*;
use vfs::FileType;

use super::open::{file_key, io_client};
use super::status::stat4;
use super::Compound;
use crate::auth::may_read;
use crate::state::stateids::{check_io, IoKind};

pub(super) fn run(cx: &mut Compound, args: READ4args) -> Result<READ4resok, nfsstat4> {
    let st = cx.state();
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    match obj.attrs.ftype {
        FileType::Regular => {}
        FileType::Directory => return Err(nfsstat4::NFS4ERR_ISDIR),
        _ => return Err(nfsstat4::NFS4ERR_INVAL),
    }
    let sid = cx.resolve_stateid(&args.stateid)?;
    let count = args.count.min(cx.core.settings().rtmax);
    {
        let mut t = st.tables.lock();
        let range = (args.offset, u64::from(count));
        check_io(st, &mut t, io_client(cx), &sid, file_key(&obj), IoKind::Read, range)?;
    }
    if !may_read(&obj.attrs, &obj.creds) {
        return Err(nfsstat4::NFS4ERR_ACCESS);
    }
    // At or past the end there is nothing to read, however large the
    // offset (backends may refuse offsets beyond what they can address).
    if args.offset >= obj.attrs.size {
        return Ok(READ4resok { eof: true, data: bytes::Bytes::new() });
    }
    let r = obj.fs().read(obj.id, args.offset, count).map_err(stat4)?;
    let mut data = r.data;
    let mut eof = r.eof;
    if data.len() > count as usize {
        tracing::error!(asked = count, got = data.len(), "backend read returned more than requested; truncated");
        data.truncate(count as usize);
        eof = false;
    }
    Ok(READ4resok { eof, data })
}

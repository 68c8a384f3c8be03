//! READ (RFC 8881 section 18.22).
//!
//! The stateid is checked first (share reservations, delegations of
//! other clients, the open's access mode); the count is capped at
//! `rtmax` (short reads are allowed; `eof` tells the client).

use proto::nfs4::*;

use super::status::stat4;
use super::{io, Compound};
use crate::state::stateids::IoKind;

pub(super) fn run(cx: &mut Compound, args: READ4args) -> Result<READ4resok, nfsstat4> {
    let obj = io::file_to_read(cx)?;
    let count = args.count.min(cx.core.settings().rtmax);
    io::check(cx, &obj, &args.stateid, IoKind::Read, (args.offset, u64::from(count)))?;
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

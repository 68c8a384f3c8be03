//! GETDEVICELIST (RFC 8881 section 18.41): the device IDs the current
//! handle's file system hands out in layouts. For flexible-file layouts
//! those are the data servers (`pnfs_data_servers`), listed in their
//! order; a file system without layouts (not a shared store, or the
//! pseudo file system) uses none. The cookie is the index of the next
//! device; its verifier is the server instance's, as the list only changes
//! with a restart.

use proto::nfs4::*;

use super::pnfs::{data_servers, device_id};
use super::{Compound, Fh};

pub(super) fn run(cx: &mut Compound, args: GETDEVICELIST4args) -> Result<GETDEVICELIST4resok, nfsstat4> {
    let Some(servers) = data_servers(cx) else { return Err(nfsstat4::NFS4ERR_NOTSUPP) };
    if args.gdla_layout_type != layouttype4::LAYOUT4_FLEX_FILES {
        return Err(nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    if args.gdla_maxdevices == 0 {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let laid_out = match cx.cfh()? {
        Fh::Pseudo(_) => false,
        fh => cx.resolve(fh)?.export.fs.shared_store().is_some(),
    };
    let n = if laid_out { servers.len() } else { 0 };
    let verf = u64::from(cx.state().boot).to_be_bytes();
    // The verifier means nothing with cookie 0 (18.41.3).
    if args.gdla_cookie != 0 && args.gdla_cookieverf != verf {
        return Err(nfsstat4::NFS4ERR_NOT_SAME);
    }
    let start = usize::try_from(args.gdla_cookie).ok().filter(|s| *s <= n).ok_or(nfsstat4::NFS4ERR_BAD_COOKIE)?;
    let end = n.min(start.saturating_add(args.gdla_maxdevices as usize));
    Ok(GETDEVICELIST4resok {
        gdlr_cookie: end as u64,
        gdlr_cookieverf: verf,
        gdlr_deviceid_list: (start..end).map(device_id).collect(),
        gdlr_eof: end == n,
    })
}

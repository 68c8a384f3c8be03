//! RESTOREFH (RFC 8881 section 18.27).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound) -> Result<(), nfsstat4> {
    cx.cfh = Some(cx.sfh.ok_or(nfsstat4::NFS4ERR_RESTOREFH)?);
    cx.current_stateid = cx.saved_stateid.clone();
    Ok(())
}

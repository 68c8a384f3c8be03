//! SAVEFH (RFC 8881 section 18.32).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound) -> Result<(), nfsstat4> {
    cx.sfh = Some(cx.cfh()?);
    cx.saved_stateid = cx.current_stateid.clone();
    Ok(())
}

//! PUTROOTFH (RFC 8881 section 18.21): the root of the pseudo file system.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound) -> Result<(), nfsstat4> {
    cx.cfh = Some(cx.root_fh()?);
    cx.current_stateid = None;
    Ok(())
}

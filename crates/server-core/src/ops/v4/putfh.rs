//! PUTFH (RFC 8881 section 18.19).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: PUTFH4args) -> Result<(), nfsstat4> {
    let fh = cx.decode_fh(&args.object)?;
    cx.cfh = Some(fh);
    cx.current_stateid = None;
    Ok(())
}

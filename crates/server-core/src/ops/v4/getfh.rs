//! GETFH (RFC 8881 section 18.8).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound) -> Result<GETFH4resok, nfsstat4> {
    let fh = cx.cfh()?;
    Ok(GETFH4resok { object: cx.encode_fh(fh) })
}

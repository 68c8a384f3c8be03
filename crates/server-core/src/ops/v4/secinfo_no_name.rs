//! SECINFO_NO_NAME (RFC 8881 section 18.45): the flavors for the current
//! handle or its parent (found as LOOKUPP finds it); the current
//! filehandle is consumed.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: SECINFO_NO_NAME4args) -> Result<SECINFO4resok, nfsstat4> {
    match args {
        secinfo_style4::SECINFO_STYLE4_CURRENT_FH => {
            if let fh @ super::Fh::Obj { .. } = cx.cfh()? {
                cx.resolve(fh)?;
            }
        }
        secinfo_style4::SECINFO_STYLE4_PARENT => {
            super::lookupp::parent(cx)?;
        }
    }
    let target = cx.cfh()?;
    cx.cfh = None;
    cx.current_stateid = None;
    Ok(super::secinfo::flavors(cx, target))
}

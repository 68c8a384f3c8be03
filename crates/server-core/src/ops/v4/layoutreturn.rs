//! LAYOUTRETURN (RFC 8881 section 18.44): a file's layout, an export's,
//! or all of the client's. Only whole-file layouts are handed out, so a
//! return of any range of a file returns its layout.

use proto::nfs4::*;
use xdr::Decode;

use super::open::file_key;
use super::pnfs::{data_servers, layout_file, take_error_reports};
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: LAYOUTRETURN4args) -> Result<layoutreturn_stateid, nfsstat4> {
    data_servers(cx).ok_or(nfsstat4::NFS4ERR_NOTSUPP)?;
    if args.lora_layout_type != layouttype4::LAYOUT4_FLEX_FILES {
        return Err(nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
    }
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
    let st = cx.state();
    match args.lora_layoutreturn {
        layoutreturn4::LAYOUTRETURN4_FILE(f) => {
            let o = layout_file(cx)?;
            let sid = cx.resolve_stateid(&f.lrf_stateid)?;
            st.layoutreturn_file(client, file_key(&o), &sid)?;
            // A flexible-file return may carry reports of failed I/O (RFC
            // 8435 section 9.1.1); the statistics in it are not kept.
            // A body that does not decode is ignored, not refused: the
            // layout is returned either way.
            if let Ok(body) = ff_layoutreturn4::decode(&mut xdr::Decoder::new(f.lrf_body.clone())) {
                for report in &body.fflr_ioerr_report {
                    take_error_reports(cx, &report.ffie_errors);
                }
            }
        }
        layoutreturn4::default(layoutreturn_type4::LAYOUTRETURN4_FSID) => {
            let o = cx.cobj(nfsstat4::NFS4ERR_INVAL)?;
            st.layoutreturn_all(client, Some(o.export.id));
        }
        layoutreturn4::default(_) => st.layoutreturn_all(client, None),
    }
    // The client holds no layout of the file any more (18.44.3).
    Ok(None)
}

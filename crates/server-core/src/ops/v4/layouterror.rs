//! LAYOUTERROR (RFC 7862 section 15.6; for flexible-file layouts the same
//! as an `ff_ioerr4` report, RFC 8435 section 10): a client says that I/O
//! through its layout's data server failed. The layout stateid must be
//! the client's for the current file; the reports themselves cannot fail
//! (15.6.3). A data server reported unreachable is left out of new layouts
//! for a while ([`crate::devices`]).

use proto::nfs4::*;

use super::open::file_key;
use super::pnfs::{data_servers, layout_file, take_error_reports};
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: LAYOUTERROR4args) -> Result<(), nfsstat4> {
    data_servers(cx).ok_or(nfsstat4::NFS4ERR_NOTSUPP)?;
    let o = layout_file(cx)?;
    let client = cx.session_client().ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
    let sid = cx.resolve_stateid(&args.lea_stateid)?;
    cx.state().check_layout(client, file_key(&o), &sid)?;
    take_error_reports(cx, &args.lea_errors);
    Ok(())
}

//! DELEGRETURN (RFC 8881 section 18.6): the client gives a delegation
//! back, so requests of other clients waiting on its recall go through.

use proto::nfs4::*;

use super::open::{file_key, io_client};
use super::Compound;

pub(super) fn run(cx: &mut Compound, args: DELEGRETURN4args) -> Result<(), nfsstat4> {
    let st = cx.state();
    let sid = cx.resolve_stateid(&args.deleg_stateid)?;
    if sid.other == [0; 12] || sid.other == [0xff; 12] {
        return Err(nfsstat4::NFS4ERR_BAD_STATEID);
    }
    let obj = cx.cobj(nfsstat4::NFS4ERR_ISDIR)?;
    let file = file_key(&obj);
    st.delegreturn(cx.minor, io_client(cx), &sid, file)?;
    if obj.is_dir() {
        // A directory's: its notifications end with it.
        let unwatch = st.dir_delegation_returned(&sid.other);
        cx.core.stop_watches(unwatch.into_iter().collect());
    }
    if obj.fs().shared_store().is_some() {
        cx.core.shared_delegation_returned(&obj.export.fs, file);
    }
    Ok(())
}

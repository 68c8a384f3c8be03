//! DESTROY_CLIENTID (RFC 8881 section 18.50).

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: DESTROY_CLIENTID4args) -> Result<(), nfsstat4> {
    cx.state().destroy_clientid(args.dca_clientid)
}

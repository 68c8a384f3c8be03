//! RENEW (RFC 7530 section 16.29): renews a 4.0 client's lease.

use proto::nfs4::*;

use super::Compound;

pub(super) fn run(cx: &mut Compound, args: RENEW4args) -> Result<(), nfsstat4> {
    // No 4.0 callbacks are made, so CB_PATH_DOWN is never reported.
    cx.state().renew(args.clientid)
}

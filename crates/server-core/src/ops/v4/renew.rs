//! RENEW (RFC 7530 section 16.29): renews a 4.0 client's lease.

use proto::nfs4::*;

use super::Compound;
use crate::state::clients;

pub(super) fn run(cx: &mut Compound, args: RENEW4args) -> Result<(), nfsstat4> {
    let st = cx.state();
    let mut guard = st.lock_tables();
    let t = &mut *guard;
    clients::tidy(st, t);
    // No 4.0 callbacks are made, so CB_PATH_DOWN is never reported.
    t.clients.renew(args.clientid, st.now())
}

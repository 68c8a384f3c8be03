//! CREATE_SESSION (RFC 8881 section 18.36): confirms a client record and
//! creates a session, with its own one-slot replay cache per client.

use proto::nfs4::*;

use super::Compound;
use crate::state::clients::Principal;
use crate::state::settings::Nfs4Settings;

/// Smallest request and reply sizes a session can work with (a SEQUENCE
/// and a little more).
const MIN_MSG: u32 = 256;

pub(super) fn run(cx: &mut Compound, args: CREATE_SESSION4args) -> Result<CREATE_SESSION4resok, nfsstat4> {
    const KNOWN_FLAGS: u32 =
        CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN | CREATE_SESSION4_FLAG_CONN_RDMA;
    if args.csa_flags & !KNOWN_FLAGS != 0 {
        return Err(nfsstat4::NFS4ERR_INVAL);
    }
    let st = cx.state();
    let principal = Principal::of(&cx.call.auth);
    // The state reports a channel error only after the client id and
    // sequence checks, as 18.36.4 orders them.
    let channels = channels(&st.settings, &args);
    let offers = super::backchannel_ctl::offers(cx, &args.csa_sec_parms);
    st.create_session(&args, principal, cx.conn(), channels, offers)
}

/// The fore and back channel attributes the server grants for those asked.
fn channels(set: &Nfs4Settings, args: &CREATE_SESSION4args) -> Result<(channel_attrs4, channel_attrs4), nfsstat4> {
    let fa = &args.csa_fore_chan_attrs;
    let ba = &args.csa_back_chan_attrs;
    // Either channel too small to carry a single request or reply is of
    // no use (RFC 8881 18.36.3), the back channel included: it may be
    // bound later (BIND_CONN_TO_SESSION) and must fit a CB_COMPOUND.
    let too_small = |a: &channel_attrs4| a.ca_maxrequestsize < MIN_MSG || a.ca_maxresponsesize < MIN_MSG;
    if too_small(fa) || fa.ca_maxoperations < 1 || too_small(ba) {
        return Err(nfsstat4::NFS4ERR_TOOSMALL);
    }
    let resp = fa.ca_maxresponsesize.min(set.max_response_size);
    let fore = channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: fa.ca_maxrequestsize.min(set.max_request_size),
        ca_maxresponsesize: resp,
        ca_maxresponsesize_cached: fa.ca_maxresponsesize_cached.min(set.max_cached_response).min(resp),
        ca_maxoperations: fa.ca_maxoperations.min(set.max_ops),
        ca_maxrequests: fa.ca_maxrequests.clamp(1, set.max_slots),
        ca_rdma_ird: vec![],
    };
    let back = channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: ba.ca_maxrequestsize,
        ca_maxresponsesize: ba.ca_maxresponsesize,
        ca_maxresponsesize_cached: ba.ca_maxresponsesize_cached,
        ca_maxoperations: ba.ca_maxoperations,
        ca_maxrequests: ba.ca_maxrequests.clamp(1, set.max_cb_slots),
        ca_rdma_ird: vec![],
    };
    Ok((fore, back))
}

//! The security a session's callbacks go under (RFC 8881 section
//! 2.10.8.2): the flavors the client offered in CREATE_SESSION and
//! BACKCHANNEL_CTL, in its order, each callback taking the first still
//! usable. An RPCSEC_GSS offer lends a fore-channel context, usable until
//! the client's ticket runs out; SEQUENCE tells the client ahead of that
//! (SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING) and once it has happened
//! (..._EXPIRED), so that it lends a newer one with BACKCHANNEL_CTL.

use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::{callback_sec_parms4, SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED, SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING};
use proto::rpc::auth_flavor;
use xdr::Encoder;

use crate::gss::backchannel::{CbGss, CbReplyCheck};

/// One flavor the client offered for callbacks.
#[derive(Debug)]
pub(crate) enum CbOffer {
    /// AUTH_NONE or AUTH_SYS with the client's credential.
    Plain(callback_sec_parms4),
    Gss(CbGss),
}

impl CbOffer {
    fn usable(&self, now: Duration) -> bool {
        match self {
            CbOffer::Plain(_) => true,
            CbOffer::Gss(g) => g.usable(now),
        }
    }
}

/// Whether a callback can go under one of `offers` at `now`.
pub(crate) fn any_usable(offers: &[CbOffer], now: Duration) -> bool {
    offers.iter().any(|o| o.usable(now))
}

/// BACKCHANNEL_CTL's new offers, followed by the RPCSEC_GSS ones of
/// before: it replaces the flavors but adds handles (RFC 8881 section
/// 18.33.3), and the client may still be answering callbacks under an
/// older one.
pub(crate) fn merged(new: Vec<CbOffer>, old: Vec<CbOffer>) -> Vec<CbOffer> {
    let mut all = new;
    for o in old {
        let CbOffer::Gss(g) = &o else { continue };
        if !all.iter().any(|n| matches!(n, CbOffer::Gss(h) if h.same(g))) {
            all.push(o);
        }
    }
    all
}

/// The whole record of callback `proc_` with XDR arguments `args`, under
/// the first offer usable at `now`, and how to check the reply when it
/// is RPCSEC_GSS. `None` when no offer is usable or sealing failed.
pub(crate) fn call_record(
    offers: &mut [CbOffer],
    now: Duration,
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    args: Vec<Bytes>,
) -> Option<(Vec<Bytes>, Option<CbReplyCheck>)> {
    let offer = offers.iter_mut().find(|o| o.usable(now))?;
    let plain = match offer {
        CbOffer::Plain(p) => p,
        CbOffer::Gss(g) => {
            return match g.call(xid, prog, vers, proc_, &args.concat()) {
                Ok((record, check)) => Some((record, Some(check))),
                Err(e) => {
                    tracing::warn!(xid, "could not seal a callback under the client's RPCSEC_GSS context: {e}");
                    None
                }
            };
        }
    };
    let mut e = Encoder::with_capacity(64);
    for v in [xid, 0, 2, prog, vers, proc_] {
        e.u32(v);
    }
    match plain {
        callback_sec_parms4::AUTH_SYS(p) => {
            e.u32(auth_flavor::AUTH_SYS as u32);
            e.opaque_var(&xdr::to_bytes(p));
        }
        _ => {
            e.u32(auth_flavor::AUTH_NONE as u32);
            e.u32(0);
        }
    }
    // The verifier: AUTH_NONE.
    e.u32(auth_flavor::AUTH_NONE as u32);
    e.u32(0);
    let mut record = e.into_segments();
    record.extend(args);
    Some((record, None))
}

/// SEQUENCE's flags for the RPCSEC_GSS contexts lent to a session's back
/// channel: all of them ended, or all ending within `lease` of `now`
/// (RFC 8881 section 18.46.3). None lent: no flag.
pub(crate) fn status_flags(offers: &[CbOffer], now: Duration, lease: Duration) -> u32 {
    let mut latest = None;
    for o in offers {
        if let CbOffer::Gss(g) = o {
            latest = latest.max(Some(g.expires()));
        }
    }
    match latest {
        None => 0,
        Some(t) if now >= t => SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED,
        Some(t) if now + lease >= t => SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING,
        Some(_) => 0,
    }
}

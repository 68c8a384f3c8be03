//! NLM4_TEST_MSG, LOCK_MSG, CANCEL_MSG, UNLOCK_MSG and GRANTED_MSG: the
//! asynchronous forms of the procedures (XNFS, "NLM procedures"). Each
//! runs as its synchronous counterpart; the call itself gets an empty
//! reply and the result travels as a call of the matching `_RES`
//! procedure (the `_MSG` procedure's number plus 5) to the calling host's
//! lock manager, carrying the request's cookie.

use proto::nlm::*;
use xdr::{Decode, Decoder, Encode, Encoder};

use super::calls::Target;
use super::{cancel, lock, test, unlock};
use crate::rpc::{run, Call, Dispatched};
use crate::Core;

/// How far a `_RES` procedure's number is from its `_MSG` one.
const RES_OFFSET: u32 = NLM_TEST_RES - NLM_TEST_MSG;

pub(super) fn dispatch(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    match call.proc_ {
        NLM_TEST_MSG => {
            run_msg(core, call, d, e, "nlm4.TEST_MSG", nlm4_testargs::decode, |a| test::test(core, call, a))
        }
        NLM_LOCK_MSG => {
            run_msg(core, call, d, e, "nlm4.LOCK_MSG", nlm4_lockargs::decode, |a| lock::lock(core, call, a))
        }
        NLM_CANCEL_MSG => {
            run_msg(core, call, d, e, "nlm4.CANCEL_MSG", nlm4_cancargs::decode, |a| cancel::cancel(core, call, a))
        }
        NLM_UNLOCK_MSG => {
            run_msg(core, call, d, e, "nlm4.UNLOCK_MSG", nlm4_unlockargs::decode, |a| unlock::unlock(core, call, a))
        }
        // We hold no blocked request of our own: whatever it grants
        // matches nothing.
        _ => run_msg(core, call, d, e, "nlm4.GRANTED_MSG", nlm4_testargs::decode, |a| {
            (nlm4_res { cookie: a.cookie, stat: nlm4_stat { stat: nlm4_stats::nlm4_denied } }, false)
        }),
    }
}

/// Decodes and runs `f` as the synchronous procedure would, answers the
/// call with no results and queues the `_RES` call with `f`'s result.
fn run_msg<A, R: Encode>(
    core: &Core,
    call: &Call,
    d: &mut Decoder,
    e: &mut Encoder,
    label: &'static str,
    decode: impl FnOnce(&mut Decoder) -> xdr::Result<A>,
    f: impl FnOnce(A) -> (R, bool),
) -> Dispatched {
    run(call, d, e, label, decode, |a| {
        let (res, ok) = f(a);
        let now = core.v4.now();
        core.nlm.queue_result(Target::of(core, call.peer), call.proc_ + RES_OFFSET, xdr::to_bytes(&res), now);
        ((), ok)
    })
}

/// A `_RES` call: the result of a `_MSG` call we made, taken with an
/// empty reply, as the protocol has it. Only GRANTED_RES answers one
/// (our GRANTED_MSG); the others are dropped.
pub(super) fn result(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    if call.proc_ == NLM_GRANTED_RES {
        return run(call, d, e, "nlm4.GRANTED_RES", nlm4_res::decode, |r| {
            let host = crate::exports::canonical_ip(call.peer.addr.ip());
            let releases = core.nlm.granted_res(host, &r.cookie, r.stat.stat, core.v4.now());
            core.release_grants(releases);
            ((), true)
        });
    }
    let label = match call.proc_ {
        NLM_TEST_RES => "nlm4.TEST_RES",
        NLM_LOCK_RES => "nlm4.LOCK_RES",
        NLM_CANCEL_RES => "nlm4.CANCEL_RES",
        NLM_UNLOCK_RES => "nlm4.UNLOCK_RES",
        _ => "nlm4.GRANTED_RES",
    };
    run(call, d, e, label, |_: &mut Decoder| Ok(()), |()| ((), true))
}

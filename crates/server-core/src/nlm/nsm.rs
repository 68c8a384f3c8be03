//! NSM (status monitor, program 100024): enough of it for clients to
//! talk to: SM_STAT/SM_MON answer with our state number, and SM_NOTIFY
//! from a restarted client releases its NLM locks. nfsx does not send
//! SM_NOTIFY itself after a restart: v3 clients relearn through the NLM
//! grace period (their reclaims are accepted while it lasts).

use proto::nsm::*;
use xdr::{Decode, Decoder, Encoder};

use crate::rpc::{run, Call, Dispatched};
use crate::Core;

pub const PROGRAM: u32 = SM_PROG;
pub const VERSION: u32 = SM_VERS;

/// Our NSM state: odd while up, and different after each restart (the
/// boot time, made odd).
fn state(core: &Core) -> i32 {
    (core.v4.boot as i32) | 1
}

pub(crate) fn dispatch(core: &Core, call: &Call, d: &mut Decoder, e: &mut Encoder) -> Dispatched {
    let void = |_: &mut Decoder| Ok(());
    let stat = |core: &Core| sm_stat_res { res_stat: sm_res::stat_succ, state: state(core) };
    match call.proc_ {
        0 => run(call, d, e, "nsm.NULL", void, |()| ((), true)),
        SM_STAT => run(call, d, e, "nsm.STAT", sm_name::decode, |_| (stat(core), true)),
        SM_MON => run(call, d, e, "nsm.MON", mon::decode, |_| (stat(core), true)),
        SM_UNMON => run(call, d, e, "nsm.UNMON", mon_id::decode, |_| (sm_stat { state: state(core) }, true)),
        SM_UNMON_ALL => run(call, d, e, "nsm.UNMON_ALL", my_id::decode, |_| (sm_stat { state: state(core) }, true)),
        SM_SIMU_CRASH => run(call, d, e, "nsm.SIMU_CRASH", void, |()| ((), true)),
        SM_NOTIFY => run(call, d, e, "nsm.NOTIFY", stat_chge::decode, |a| {
            super::free_all::release_host(core, &a.mon_name);
            ((), true)
        }),
        _ => Dispatched::ProcUnavail { label: "nsm.unknown" },
    }
}

//! NSM (status monitor, program 100024), the side a client's host
//! talks to: SM_STAT and SM_MON answer with our state number, which
//! grows at each restart (the state directory counts them), and
//! SM_NOTIFY from a restarted host releases its NLM locks and shares.
//! The server monitors every host it grants a lock or share to itself
//! (`state::nsm_hosts`), with no SM_MON needed: after a restart those
//! hosts are the ones the grace period waits for.

use proto::nsm::*;
use xdr::{Decode, Decoder, Encoder};

use crate::rpc::{run, Call, Dispatched};
use crate::Core;

pub const PROGRAM: u32 = SM_PROG;
pub const VERSION: u32 = SM_VERS;

/// Our NSM state: odd while up, and larger after each restart.
fn state(core: &Core) -> i32 {
    core.v4.nsm_state()
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
            // Its status monitor may name the host otherwise than its lock
            // manager did: when no host calling from that address goes by
            // the name, all of them restarted with it. A name that is
            // known frees that host alone: one process of several on a
            // host (nfsx's clients) ended. Never by address on loopback,
            // where every client of this machine calls from one address
            // and none of them is the machine restarting.
            let ip = crate::exports::canonical_ip(call.peer.addr.ip());
            let at = if ip.is_loopback() { Vec::new() } else { core.v4.nsm_hosts_at(ip) };
            let mut names = if at.iter().any(|n| n[..] == a.mon_name[..]) { Vec::new() } else { at };
            names.push(a.mon_name);
            for name in names {
                super::free_all::release_host(core, &name);
            }
            ((), true)
        }),
        _ => Dispatched::ProcUnavail { label: "nsm.unknown" },
    }
}

/// A lock or share was granted to `caller`: monitored from now on.
pub(crate) fn monitor(core: &Core, call: &Call, caller: &bytes::Bytes) {
    let (addr, local) = (call.peer.addr.ip(), call.peer.local.ip());
    core.v4.nsm_monitor(caller, crate::exports::canonical_ip(addr), crate::exports::canonical_ip(local));
}

//! The NFSv4 COMPOUND and callback decoders, and every NLM/NSM argument
//! decoder: decode, and what decodes must re-encode to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::nfs4::*;
use proto::nlm::*;
use proto::nsm::*;
#[path = "common.rs"]
mod common;
use common::round_trip;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    match sel % 16 {
        0 => round_trip::<COMPOUND4args>(rest),
        1 => round_trip::<COMPOUND4res>(rest),
        2 => round_trip::<CB_COMPOUND4args>(rest),
        3 => round_trip::<CB_COMPOUND4res>(rest),
        4 => round_trip::<nlm4_testargs>(rest),
        5 => round_trip::<nlm4_lockargs>(rest),
        6 => round_trip::<nlm4_cancargs>(rest),
        7 => round_trip::<nlm4_unlockargs>(rest),
        8 => round_trip::<nlm4_shareargs>(rest),
        9 => round_trip::<nlm4_notify>(rest),
        10 => round_trip::<mon>(rest),
        11 => round_trip::<stat_chge>(rest),
        12 => round_trip::<fattr4>(rest),
        // The arguments of the _RES calls clients send back.
        13 => round_trip::<nlm4_res>(rest),
        14 => round_trip::<nlm4_testres>(rest),
        _ => round_trip::<nfs_argop4>(rest),
    }
});

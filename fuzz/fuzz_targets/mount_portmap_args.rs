//! MOUNT v3 and portmap/rpcbind decoders, arguments and results.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::{mount3, portmap};
#[path = "common.rs"]
mod common;
use common::round_trip;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    match sel % 9 {
        0 => round_trip::<mount3::MOUNT3MNTargs>(rest),
        1 => round_trip::<mount3::mountres3>(rest),
        2 => round_trip::<mount3::exports>(rest),
        3 => round_trip::<mount3::mountlist>(rest),
        4 => round_trip::<portmap::pmap2_mapping>(rest),
        5 => round_trip::<portmap::pmap3_mapping>(rest),
        6 => round_trip::<portmap::pmap4_mapping>(rest),
        7 => round_trip::<portmap::pmap2_dump_result>(rest),
        _ => round_trip::<portmap::pmap3_dump_result>(rest),
    }
});

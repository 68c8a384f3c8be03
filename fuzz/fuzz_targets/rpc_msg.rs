//! The RPC message header and the AUTH_SYS credential body.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::rpc::{authsys_parms, rpc_msg};
#[path = "common.rs"]
mod common;
use common::round_trip;

fuzz_target!(|data: &[u8]| {
    round_trip::<rpc_msg>(data);
    round_trip::<authsys_parms>(data);
});

//! The client's reply path: arbitrary bytes arriving as reply records for
//! calls the client has outstanding. The RPC core must match or drop them
//! without panicking, and keep its bookkeeping consistent.
#![no_main]

use bytes::Bytes;
use client_core::rpc::{auth_sys, RpcCore, RpcSettings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let settings = RpcSettings { max_in_flight: 4, ..Default::default() };
    let mut core = RpcCore::new(settings, auth_sys("fuzz", 0, 0, &[]), 7);
    for p in [6, 7, 21, 1, 3] {
        core.call(100003, 3, p, vec![Bytes::from_static(b"\0\0\0\x08abcdefgh")], 0);
    }
    while core.poll_transmit(1).is_some() {}
    // Records are separated by 0xfe bytes; each gets an xid that matches
    // one of the calls when its first byte says so.
    for (i, chunk) in data.split(|b| *b == 0xfe).enumerate() {
        let mut rec = chunk.to_vec();
        if rec.len() >= 4 && rec[0] & 1 == 1 {
            let xid = 7 + (rec[1] as u32 % 5);
            rec[..4].copy_from_slice(&xid.to_be_bytes());
        }
        if let Some(done) = core.on_record(Bytes::from(rec), 2 + i as u64) {
            let _ = done.result.map(|b| b.len());
        }
        if i % 3 == 2 {
            for failed in core.on_disconnect(2 + i as u64) {
                assert!(failed.result.is_err());
            }
            while core.poll_transmit(3).is_some() {}
        }
    }
    let _ = core.poll_timers(u64::MAX / 2);
    assert!(core.outstanding() <= 5);
});

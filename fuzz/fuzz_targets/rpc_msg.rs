//! The RPC message header and the AUTH_SYS credential body.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proto::rpc::{authsys_parms, rpc_msg};
use xdr::{Decode, Decoder, Encode, Encoder};

fn round_trip<T: Decode + Encode + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let mut d = Decoder::new(bytes::Bytes::copy_from_slice(data));
    if let Ok(v) = T::decode(&mut d) {
        let mut e = Encoder::new();
        v.encode(&mut e);
        let again = T::decode(&mut Decoder::new(e.into_bytes())).expect("re-decode of an encoding");
        assert_eq!(v, again);
    }
}

fuzz_target!(|data: &[u8]| {
    round_trip::<rpc_msg>(data);
    round_trip::<authsys_parms>(data);
});

//! Shared by the decoder targets: whatever decodes must re-encode and
//! decode back to the same value.
use xdr::{Decode, Decoder, Encode, Encoder};

pub fn round_trip<T: Decode + Encode + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let mut d = Decoder::new(bytes::Bytes::copy_from_slice(data));
    if let Ok(v) = T::decode(&mut d) {
        let mut e = Encoder::new();
        v.encode(&mut e);
        let again = T::decode(&mut Decoder::new(e.into_bytes())).expect("re-decode of an encoding");
        assert_eq!(v, again);
    }
}

use bytes::Bytes;
use proptest::prelude::*;

use crate::*;

#[test]
fn opaque_is_padded_and_bounded() {
    let mut e = Encoder::new();
    e.opaque_var(b"abcde");
    let b = e.into_bytes();
    assert_eq!(&b[..], &[0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]);
    let mut d = Decoder::new(b.clone());
    assert_eq!(&d.opaque_var(5).unwrap()[..], b"abcde");
    let mut d = Decoder::new(b);
    assert_eq!(d.opaque_var(4), Err(XdrError::TooLong { len: 5, max: 4 }));
}

#[test]
fn forged_lengths_do_not_allocate_or_overrun() {
    let b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xf0, 1, 2, 3, 4]);
    assert!(matches!(Decoder::new(b.clone()).opaque_var(u32::MAX), Err(XdrError::Truncated { .. })));
    assert!(matches!(Decoder::new(b).array_var::<u64>(u32::MAX), Err(XdrError::Truncated { .. })));
}

#[test]
fn large_opaque_is_a_separate_segment() {
    let payload = Bytes::from(vec![7u8; ZERO_COPY_MIN + 3]);
    let mut e = Encoder::new();
    e.u32(1);
    e.opaque_bytes(&payload);
    e.u32(2);
    let segs = e.into_segments();
    assert_eq!(segs.len(), 3);
    assert_eq!(segs[1].as_ptr(), payload.as_ptr());
    let total: usize = segs.iter().map(|s| s.len()).sum();
    assert_eq!(total, 4 + 4 + ZERO_COPY_MIN + 3 + 1 + 4);
}

#[test]
fn list_round_trip_is_iterative() {
    let items: Vec<u32> = (0..200_000).collect();
    let mut e = Encoder::new();
    e.list(&items);
    let mut d = Decoder::new(e.into_bytes());
    assert_eq!(d.list::<u32>().unwrap(), items);
}

#[test]
fn bad_bool() {
    assert_eq!(Decoder::new(Bytes::from_static(&[0, 0, 0, 2])).bool(), Err(XdrError::BadBool(2)));
}

proptest! {
    #[test]
    fn prim_round_trip(a: u32, b: i64, c: bool, v in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let mut e = Encoder::new();
        e.u32(a); e.i64(b); e.bool(c); e.opaque_bytes(&Bytes::from(v.clone()));
        let buf = e.into_bytes();
        prop_assert_eq!(buf.len() % 4, 0);
        let mut d = Decoder::new(buf);
        prop_assert_eq!(d.u32().unwrap(), a);
        prop_assert_eq!(d.i64().unwrap(), b);
        prop_assert_eq!(d.bool().unwrap(), c);
        prop_assert_eq!(&d.opaque_var(u32::MAX).unwrap()[..], &v[..]);
        prop_assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn decoding_garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut d = Decoder::new(Bytes::from(v));
        let _ = d.array_var::<Bytes>(16);
        let _ = d.list::<u64>();
    }
}

//! Generator features exercised through tests/fixtures/features.x.

#[rustfmt::skip]
#[path = "fixtures/features.rs"]
mod features;

use bytes::Bytes;
use features::*;
use xdr::{Decode, Decoder, Encode, Encoder, XdrError};

fn enc<T: Encode>(v: &T) -> Vec<u8> {
    xdr::to_bytes(v).to_vec()
}

fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_be_bytes()).collect()
}

fn dec<T: Decode>(b: &[u8]) -> xdr::Result<T> {
    xdr::from_bytes(Bytes::copy_from_slice(b))
}

#[test]
fn constants() {
    assert_eq!(SMALL, 4u32);
    assert_eq!(BIG, u64::MAX);
    assert_eq!(NEG, -5i64);
    assert_eq!(OCT, 15u32);
    assert_eq!((FEATURE_PROG, FEATURE_V1, FEATURE_ECHO), (0x2000_0001u32, 1u32, 1u32));
}

#[test]
fn enums() {
    assert_eq!(color::BLUE as i32, 16);
    assert_eq!(color::try_from(-1), Ok(color::NEGATIVE));
    assert_eq!(color::try_from(7), Err(XdrError::BadEnum { name: "color", value: 7 }));
    assert_eq!(enc(&color::NEGATIVE), words(&[0xffff_ffff]));
    assert_eq!(color::default(), color::RED);
}

#[test]
fn int_unions() {
    assert_eq!(enc(&by_int::V1(7)), words(&[1, 7]));
    assert_eq!(enc(&by_int::V3(-1)), words(&[3, 0xffff_ffff, 0xffff_ffff]));
    assert_eq!(enc(&by_int::Vm1), words(&[0xffff_ffff]));
    assert_eq!(dec::<by_int>(&words(&[2, 0, 5])), Ok(by_int::V2(5)));
    assert_eq!(by_int::V2(5).discriminant(), 2);
    assert_eq!(dec::<by_int>(&words(&[4])), Err(XdrError::BadDiscriminant { name: "by_int", value: 4 }));

    assert_eq!(enc(&by_uint::SMALL), words(&[4]));
    let other = by_uint::default(9, Bytes::from_static(b"abcd"));
    assert_eq!(dec::<by_uint>(&enc(&other)), Ok(other.clone()));
    assert_eq!(other.discriminant(), 9);
    // the arm's bound applies
    assert!(matches!(dec::<by_uint>(&words(&[9, 5, 0, 0])), Err(XdrError::TooLong { .. })));
}

#[test]
fn enum_and_bool_unions() {
    assert_eq!(enc(&by_color::GREEN(3)), words(&[1, 3]));
    assert_eq!(dec::<by_color>(&words(&[0, 3])), Ok(by_color::RED(3)));
    assert_eq!(dec::<by_color>(&words(&[16])), Ok(by_color::BLUE));
    assert_eq!(dec::<by_color>(&words(&[0xffff_ffff])), Err(XdrError::BadDiscriminant { name: "by_color", value: -1 }));
    assert_eq!(dec::<by_color>(&words(&[2])), Err(XdrError::BadEnum { name: "color", value: 2 }));
    assert_eq!(by_color::default(), by_color::BLUE);

    assert_eq!(enc(&either::FALSE(1)), words(&[0, 0, 1]));
    assert!(either::TRUE(2).discriminant());
}

#[test]
fn keywords_arrays_and_defaults() {
    let k = kw {
        r#type: 1,
        r#match: 2,
        r#ref: true,
        self_: color::BLUE,
        q: [1, 2, 3, 4],
        p: [Bytes::from_static(b"a"), Bytes::from_static(b"bc")],
        n: vec![Bytes::from_static(b"xyz")],
        palette: [color::GREEN, color::RED],
    };
    let b = enc(&k);
    assert_eq!(dec::<kw>(&b), Ok(k.clone()));
    assert_eq!(b.len(), 4 + 8 + 4 + 4 + 16 + 8 + 8 + 4 + 8 + 8);
    // bound of the typedef'd element inside names<3>
    let mut long = k.clone();
    long.n = vec![Bytes::from_static(b"12345")];
    assert!(matches!(dec::<kw>(&enc(&long)), Err(XdrError::TooLong { len: 5, max: 4 })));
    let mut many = k;
    many.n = vec![Bytes::new(); 4];
    assert!(matches!(dec::<kw>(&enc(&many)), Err(XdrError::TooLong { len: 4, max: 3 })));
    let _ = kw::default();
}

#[test]
fn recursive_pointers_are_boxed() {
    let t = tree { value: 1, left: Some(Box::new(tree { value: 2, left: None, right: None })), right: None };
    assert_eq!(enc(&t), words(&[1, 1, 2, 0, 0, 0]));
    assert_eq!(dec::<tree>(&enc(&t)), Ok(t));
}

#[test]
fn anonymous_types_are_hoisted() {
    let o = outer {
        inner: outer_inner::RED(5),
        pt: outer_pt { a: 1, b: [1, 2, 3] },
        which: outer_which::Y,
        k: None,
        big: [9; 40],
    };
    assert_eq!(dec::<outer>(&enc(&o)), Ok(o.clone()));
    assert_eq!(outer_inner::default(color::GREEN).discriminant(), color::GREEN);
    let _ = anon_td { a: 1 };
}

#[test]
fn lists() {
    let n = |v: i32| node { v, label: Bytes::from_static(b"l") };
    let h = holder { items: vec![n(1), n(2)], more: vec![], lists: vec![vec![n(3)], vec![]], maybe_list: Some(vec![]) };
    let b = enc(&h);
    #[rustfmt::skip]
    let want = words(&[
        1, 1, 1, 0x6c00_0000, 1, 2, 1, 0x6c00_0000, 0, // items
        0,                                             // more
        2, 1, 3, 1, 0x6c00_0000, 0, 0,                 // lists
        1, 0,                                          // maybe_list
    ]);
    assert_eq!(b, want);
    assert_eq!(dec::<holder>(&b), Ok(h));

    let list: nodelist = vec![n(7)];
    let mut e = Encoder::new();
    encode_nodelist(&list, &mut e);
    let b = e.into_bytes();
    assert_eq!(&b[..], &words(&[1, 7, 1, 0x6c00_0000, 0])[..]);
    assert_eq!(decode_nodelist(&mut Decoder::new(b)), Ok(list));
}

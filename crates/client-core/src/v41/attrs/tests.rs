use super::*;

fn fattr(attrs: &[u32], vals: impl FnOnce(&mut Encoder)) -> fattr4 {
    let mut e = Encoder::new();
    vals(&mut e);
    fattr4 { attrmask: bitmap(attrs), attr_vals: e.into_bytes() }
}

#[test]
fn bitmaps_round_trip_across_words() {
    let m = bitmap(&[FATTR4_TYPE, FATTR4_FILEID, FATTR4_MODE, FATTR4_TIME_MODIFY]);
    assert_eq!(m.len(), 2);
    assert_eq!(bits(&m).collect::<Vec<_>>(), vec![FATTR4_TYPE, FATTR4_FILEID, FATTR4_MODE, FATTR4_TIME_MODIFY]);
}

#[test]
fn a_stat_decodes_into_the_file_apis_record() {
    let asked =
        [FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE, FATTR4_OWNER, FATTR4_OWNER_GROUP, FATTR4_TIME_MODIFY];
    let f = fattr(&asked, |e| {
        e.u32(2);
        e.u64(4096);
        e.u64(77);
        e.u32(0o40755);
        e.opaque_var(b"1000");
        e.opaque_var(b"staff@example.org");
        e.i64(1_700_000_000);
        e.u32(5);
    });
    let a = decode(&f).unwrap();
    let f = a.to_fattr(|_| None, |n| (n == "staff").then_some(50));
    assert_eq!(f.r#type, ftype3::NF3DIR);
    assert_eq!((f.size, f.fileid, f.mode, f.uid, f.gid), (4096, 77, 0o755, 1000, 50));
    assert_eq!(f.mtime, Time::new(1_700_000_000, 5));
}

/// `nfstime4` has signed 64-bit seconds: a time past 2106 or before 1970
/// is kept as the server sent it, not clamped into NFSv3's range.
#[test]
fn times_keep_their_64_bit_seconds() {
    let asked = [FATTR4_TIME_ACCESS, FATTR4_TIME_METADATA, FATTR4_TIME_MODIFY];
    let f = fattr(&asked, |e| {
        e.i64(1 << 32);
        e.u32(1);
        e.i64(-315_619_200);
        e.u32(2);
        e.i64(i64::MIN);
        e.u32(999_999_999);
    });
    let a = decode(&f).unwrap().to_fattr(|_| None, |_| None);
    assert_eq!(a.atime, Time::new(1 << 32, 1));
    assert_eq!(a.ctime, Time::new(-315_619_200, 2));
    assert_eq!(a.mtime, Time::new(i64::MIN, 999_999_999));
}

#[test]
fn unknown_names_are_nobody_and_garbage_is_refused() {
    assert_eq!(owner_id(b"who@where", |_| None), NOBODY);
    assert_eq!(owner_id(&[0xff, 0xfe], |_| Some(1)), NOBODY);
    // Truncated values, a type out of range, an attribute not asked for,
    // and bytes left over are all errors, never a panic.
    assert!(decode(&fattr(&[FATTR4_SIZE], |e| e.u32(1))).is_err());
    assert!(decode(&fattr(&[FATTR4_TYPE], |e| e.u32(99))).is_err());
    assert!(decode(&fattr(&[FATTR4_ACL], |e| e.u32(0))).is_err());
    assert!(decode(&fattr(&[FATTR4_MODE], |e| {
        e.u32(0o644);
        e.u32(0);
    }))
    .is_err());
}

#[test]
fn setattr_values_go_in_attribute_order() {
    let s = Sattr {
        mode: Some(0o600),
        uid: Some(7),
        size: Some(10),
        mtime: SetTime::ClientTime(Time::new(3, 4)),
        atime: SetTime::ServerTime,
        ..Default::default()
    };
    let f = encode_sattr(&s);
    assert_eq!(
        bits(&f.attrmask).collect::<Vec<_>>(),
        vec![FATTR4_SIZE, FATTR4_MODE, FATTR4_OWNER, FATTR4_TIME_ACCESS_SET, FATTR4_TIME_MODIFY_SET]
    );
    let mut d = Decoder::new(f.attr_vals.clone());
    assert_eq!(d.u64().unwrap(), 10);
    assert_eq!(d.u32().unwrap(), 0o600);
    assert_eq!(&d.opaque_var(16).unwrap()[..], b"7");
    assert_eq!(d.u32().unwrap(), 0); // SET_TO_SERVER_TIME4
    assert_eq!(d.u32().unwrap(), 1); // SET_TO_CLIENT_TIME4
    assert_eq!((d.i64().unwrap(), d.u32().unwrap()), (3, 4));
    assert_eq!(d.remaining(), 0);
}

#[test]
fn set_times_go_whole_past_2106_and_before_1970() {
    let s = Sattr {
        atime: SetTime::ClientTime(Time::new(-315_619_200, 7)),
        mtime: SetTime::ClientTime(Time::new(4_294_967_296, 8)),
        ..Default::default()
    };
    let f = encode_sattr(&s);
    assert_eq!(bits(&f.attrmask).collect::<Vec<_>>(), vec![FATTR4_TIME_ACCESS_SET, FATTR4_TIME_MODIFY_SET]);
    let mut d = Decoder::new(f.attr_vals.clone());
    assert_eq!(d.u32().unwrap(), 1); // SET_TO_CLIENT_TIME4
    assert_eq!((d.i64().unwrap(), d.u32().unwrap()), (-315_619_200, 7));
    assert_eq!(d.u32().unwrap(), 1);
    assert_eq!((d.i64().unwrap(), d.u32().unwrap()), (4_294_967_296, 8));
    assert_eq!(d.remaining(), 0);
    // Nothing to set, nothing sent.
    let none = encode_sattr(&Sattr::default());
    assert_eq!((bits(&none.attrmask).count(), none.attr_vals.len()), (0, 0));
}

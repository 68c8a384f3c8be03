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
fn a_stat_decodes_into_the_v3_record() {
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
    let v3 = a.to_fattr3(|_| None, |n| (n == "staff").then_some(50));
    assert_eq!(v3.r#type, ftype3::NF3DIR);
    assert_eq!((v3.size, v3.fileid, v3.mode, v3.uid, v3.gid), (4096, 77, 0o755, 1000, 50));
    assert_eq!((v3.mtime.seconds, v3.mtime.nseconds), (1_700_000_000, 5));
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
    let s = sattr3 {
        mode: Some(0o600),
        uid: Some(7),
        size: Some(10),
        mtime: set_mtime::SET_TO_CLIENT_TIME(nfstime3 { seconds: 3, nseconds: 4 }),
        atime: set_atime::default(time_how::SET_TO_SERVER_TIME),
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

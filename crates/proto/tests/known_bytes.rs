//! Encodings checked against bytes written out by hand from the RFCs.

use bytes::Bytes;
use proto::nfs3::*;
use proto::rpc::*;
use proto::{mount3, portmap};
use xdr::{Decoder, Encoder, XdrError};

fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_be_bytes()).collect()
}

fn round<T: xdr::Encode + xdr::Decode + PartialEq + std::fmt::Debug>(v: &T, want: &[u8]) {
    let b = xdr::to_bytes(v);
    assert_eq!(&b[..], want);
    assert_eq!(&xdr::from_bytes::<T>(b).unwrap(), v);
}

#[test]
fn rpc_call_header() {
    let none = opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() };
    let msg = rpc_msg {
        xid: 0x1234_5678,
        body: rpc_msg_body::CALL(call_body {
            rpcvers: 2,
            prog: proto::nfs3::NFS_PROGRAM,
            vers: NFS_V3,
            proc: NFS3_GETATTR,
            cred: none.clone(),
            verf: none,
        }),
    };
    round(&msg, &words(&[0x1234_5678, 0, 2, 100003, 3, 1, 0, 0, 0, 0]));
    assert_eq!(msg.body.discriminant(), msg_type::CALL);
}

#[test]
fn rpc_accepted_and_denied_replies() {
    let verf = opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() };
    let ok = rpc_msg {
        xid: 9,
        body: rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(accepted_reply {
            verf: verf.clone(),
            reply_data: reply_data::SUCCESS,
        })),
    };
    round(&ok, &words(&[9, 1, 0, 0, 0, 0]));
    let mismatch = reply_body::MSG_ACCEPTED(accepted_reply {
        verf: verf.clone(),
        reply_data: reply_data::PROG_MISMATCH(mismatch_info { low: 2, high: 3 }),
    });
    round(&mismatch, &words(&[0, 0, 0, 2, 2, 3]));
    let garbage =
        reply_body::MSG_ACCEPTED(accepted_reply { verf, reply_data: reply_data::default(accept_stat::GARBAGE_ARGS) });
    round(&garbage, &words(&[0, 0, 0, 4]));
    let denied = reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(auth_stat::AUTH_TOOWEAK));
    round(&denied, &words(&[1, 1, 5]));
}

#[test]
fn authsys_credential() {
    let a =
        authsys_parms { stamp: 7, machinename: Bytes::from_static(b"host1"), uid: 1000, gid: 100, gids: vec![100, 27] };
    let mut want = words(&[7, 5]);
    want.extend_from_slice(b"host1\0\0\0");
    want.extend(words(&[1000, 100, 2, 100, 27]));
    round(&a, &want);
    // more than 16 groups is refused
    let mut too_many = a;
    too_many.gids = vec![0; 17];
    let b = xdr::to_bytes(&too_many);
    assert_eq!(xdr::from_bytes::<authsys_parms>(b), Err(XdrError::TooLong { len: 17, max: 16 }));
}

#[test]
fn write_args_with_payload() {
    let args = WRITE3args {
        file: nfs_fh3 { data: Bytes::from_static(&[1, 2, 3, 4]) },
        offset: 0x1_0000_0010,
        count: 5,
        stable: stable_how::FILE_SYNC,
        data: Bytes::from_static(b"hello"),
    };
    let mut want = words(&[4, 0x0102_0304, 1, 0x10, 5, 2, 5]);
    want.extend_from_slice(b"hello\0\0\0");
    round(&args, &want);
}

#[test]
fn write_payload_is_zero_copy_both_ways() {
    let payload = Bytes::from(vec![0xab; 8192]);
    let args = WRITE3args {
        file: nfs_fh3 { data: Bytes::from_static(&[0; 8]) },
        offset: 0,
        count: 8192,
        stable: stable_how::UNSTABLE,
        data: payload.clone(),
    };
    let mut e = Encoder::new();
    xdr::Encode::encode(&args, &mut e);
    let segs = e.into_segments();
    assert!(segs.iter().any(|s| s.as_ptr() == payload.as_ptr()));
    let record: Bytes = segs.concat().into();
    let got: WRITE3args = xdr::from_bytes(record.clone()).unwrap();
    let off = got.data.as_ptr() as usize - record.as_ptr() as usize;
    assert_eq!(off, 4 + 8 + 8 + 4 + 4 + 4);
}

#[test]
fn readdir_reply_with_three_entries() {
    let entry = |id: u64, name: &'static [u8]| entry3 { fileid: id, name: Bytes::from_static(name), cookie: id + 100 };
    let res = READDIR3res::NFS3_OK(READDIR3resok {
        dir_attributes: None,
        cookieverf: *b"verifier",
        reply: dirlist3 { entries: vec![entry(1, b"."), entry(2, b".."), entry(3, b"file")], eof: true },
    });
    let mut want = words(&[0, 0]);
    want.extend_from_slice(b"verifier");
    want.extend(words(&[1, 0, 1, 1, u32::from_be_bytes(*b".\0\0\0"), 0, 101]));
    want.extend(words(&[1, 0, 2, 2, u32::from_be_bytes(*b"..\0\0"), 0, 102]));
    want.extend(words(&[1, 0, 3, 4, u32::from_be_bytes(*b"file"), 0, 103]));
    want.extend(words(&[0, 1]));
    round(&res, &want);
}

#[test]
fn failure_arms_carry_the_status() {
    let res = READ3res::default(nfsstat3::NFS3ERR_NOENT, READ3resfail { file_attributes: None });
    round(&res, &words(&[2, 0]));
    assert_eq!(res.discriminant(), nfsstat3::NFS3ERR_NOENT);
    assert_eq!(
        xdr::from_bytes::<READ3res>(Bytes::from(words(&[9999, 0]))),
        Err(XdrError::BadEnum { name: "nfsstat3", value: 9999 })
    );
    round(&GETATTR3res::default(nfsstat3::NFS3ERR_STALE), &words(&[70]));
}

#[test]
fn post_op_attr_false_and_true() {
    let none: post_op_attr = None;
    round(&none, &words(&[0]));
    let attr = fattr3 { r#type: ftype3::NF3DIR, mode: 0o755, nlink: 2, ..Default::default() };
    let some: post_op_attr = Some(attr);
    let b = xdr::to_bytes(&some);
    assert_eq!(b.len(), 4 + 84);
    assert_eq!(&b[..12], &words(&[1, 2, 0o755])[..]);
    assert_eq!(xdr::from_bytes::<post_op_attr>(Bytes::from(words(&[2]))), Err(XdrError::BadBool(2)));
}

#[test]
fn sattr3_default_changes_nothing() {
    round(&sattr3::default(), &words(&[0, 0, 0, 0, 0, 0]));
    let set = sattr3 {
        mode: Some(0o644),
        mtime: set_mtime::SET_TO_CLIENT_TIME(nfstime3 { seconds: 5, nseconds: 6 }),
        atime: set_atime::default(time_how::SET_TO_SERVER_TIME),
        ..Default::default()
    };
    round(&set, &words(&[1, 0o644, 0, 0, 0, 1, 2, 5, 6]));
}

#[test]
fn enum_conversions() {
    assert_eq!(nfsstat3::NFS3ERR_JUKEBOX as i32, 10008);
    assert_eq!(nfsstat3::try_from(10008), Ok(nfsstat3::NFS3ERR_JUKEBOX));
    assert!(nfsstat3::try_from(3).is_err());
    assert_eq!(ftype3::default(), ftype3::NF3REG);
}

#[test]
fn mount_lists_use_the_list_encoding() {
    use mount3::*;
    let mut e = Encoder::new();
    encode_MOUNT3DUMPres(&Vec::new(), &mut e);
    assert_eq!(&e.into_bytes()[..], &words(&[0])[..]);

    let exports: exports = vec![exportnode {
        ex_dir: Bytes::from_static(b"/srv"),
        ex_groups: vec![groupnode { gr_name: Bytes::from_static(b"lan") }],
    }];
    let mut e = Encoder::new();
    encode_MOUNT3EXPORTres(&exports, &mut e);
    let b = e.into_bytes();
    let mut want = words(&[1, 4]);
    want.extend_from_slice(b"/srv");
    want.extend(words(&[1, 3, u32::from_be_bytes(*b"lan\0"), 0, 0]));
    assert_eq!(&b[..], &want[..]);
    assert_eq!(decode_MOUNT3EXPORTres(&mut Decoder::new(b)), Ok(exports));

    // MNT arguments keep their MNTPATHLEN bound
    let mut long = words(&[1025]);
    long.extend(vec![b'a'; 1028]);
    assert!(matches!(
        decode_MOUNT3MNTargs(&mut Decoder::new(Bytes::from(long))),
        Err(XdrError::TooLong { len: 1025, max: 1024 })
    ));
    round(&mountres3::default(mountstat3::MNT3ERR_ACCES), &words(&[13]));
}

#[test]
fn portmap_getport() {
    use portmap::*;
    let m = pmap2_mapping { prog: 100003, vers: 3, prot: 6, port: 0 };
    round(&m, &words(&[100003, 3, 6, 0]));
    assert_eq!((PMAP_PROGRAM, PMAP_V2, PMAP2_GETPORT, PMAP_PORT), (100000, 2, 3, 111));
    let dump = pmap2_dump_result { list: vec![pmap2_mapping_list { map: m }] };
    round(&dump, &words(&[1, 100003, 3, 6, 0, 0]));
}

#[test]
fn program_numbers() {
    assert_eq!((proto::mount3::MOUNT_PROGRAM, proto::mount3::MOUNT_V3, proto::mount3::MOUNT3_MNT), (100005, 3, 1));
    assert_eq!((NFS3_NULL, NFS3_COMMIT, NFSACL_PROGRAM), (0, 21, 100227));
    assert_eq!((proto::nlm::NLM_PROG, proto::nlm::NLM_VERS4, proto::nsm::SM_PROG), (100021, 4, 100024));
}

#[test]
fn nfs4_compound() {
    use proto::nfs4::*;
    let args = COMPOUND4args {
        tag: Bytes::new(),
        minorversion: 1,
        argarray: vec![nfs_argop4::OP_PUTROOTFH, nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: vec![0x10, 0] })],
    };
    round(&args, &words(&[0, 1, 2, 24, 9, 2, 0x10, 0]));
    assert_eq!(args.argarray[1].discriminant(), nfs_opnum4::OP_GETATTR);
    assert_eq!((NFS4_PROGRAM, NFSPROC4_COMPOUND, NFS4_UINT64_MAX), (100003, 1, u64::MAX));
    let res = COMPOUND4res {
        status: nfsstat4::NFS4ERR_NOFILEHANDLE,
        tag: Bytes::new(),
        resarray: vec![nfs_resop4::OP_GETATTR(GETATTR4res::default(nfsstat4::NFS4ERR_NOFILEHANDLE))],
    };
    round(&res, &words(&[10020, 0, 1, 9, 10020]));
}

//! RPC layer: header checks, authentication and program dispatch.

mod common;

use bytes::Bytes;
use common::*;
use proto::rpc::*;
use xdr::Encoder;

fn rejected(r: &Reply) -> rejected_reply {
    match &r.body {
        reply_body::MSG_DENIED(x) => x.clone(),
        other => panic!("expected MSG_DENIED, got {other:?}"),
    }
}

#[test]
fn null_on_every_program_with_auth_none() {
    let e = rw_env();
    for (prog, vers, label) in [(NFS, 3, "nfs3.NULL"), (MOUNT, 3, "mount3.NULL"), (PMAP, 2, "portmap.NULL")] {
        let r = e.call_as(prog, vers, 0, &Cred::None, &[]);
        assert_eq!(r.accept_stat(), Some(accept_stat::SUCCESS));
        assert!(r.rest.is_empty());
        assert_eq!(r.outcome.label, label);
        assert!(r.outcome.ok);
        match &r.body {
            reply_body::MSG_ACCEPTED(a) => assert_eq!(a.verf.flavor, auth_flavor::AUTH_NONE),
            _ => unreachable!(),
        }
    }
}

#[test]
fn rpc_version_mismatch() {
    let e = rw_env();
    let mut enc = Encoder::new();
    for v in [42u32, 0, 3, NFS, 3, 0, 0, 0, 0, 0] {
        enc.u32(v);
    }
    let r = parse_reply(e.raw(enc.into_bytes()));
    assert_eq!(r.xid, 42);
    assert_eq!(rejected(&r), rejected_reply::RPC_MISMATCH(mismatch_info { low: 2, high: 2 }));
    assert!(!r.outcome.ok);
}

#[test]
fn auth_errors() {
    let e = rw_env();
    // AUTH_NONE on an NFS procedure other than NULL.
    let args = xdr::to_bytes(&proto::nfs3::GETATTR3args { object: e.root() });
    let r = e.call_as(NFS, 3, proto::nfs3::NFS3_GETATTR, &Cred::None, &args);
    assert_eq!(rejected(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_TOOWEAK));
    // Malformed AUTH_SYS body.
    let r = e.call_as(NFS, 3, 0, &Cred::Raw(1, Bytes::from_static(&[0, 0, 0, 1])), &[]);
    assert_eq!(rejected(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_BADCRED));
    // AUTH_SYS with more than 16 groups.
    let mut enc = Encoder::new();
    enc.u32(0);
    enc.opaque_var(b"h");
    enc.u32(1);
    enc.u32(1);
    enc.u32(17);
    for g in 0..17 {
        enc.u32(g);
    }
    let r = e.call_as(NFS, 3, 0, &Cred::Raw(1, enc.into_bytes()), &[]);
    assert_eq!(rejected(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_BADCRED));
    // Unknown flavours and RPCSEC_GSS.
    for flavor in [6u32, 390003, 12345] {
        let r = e.call_as(NFS, 3, 0, &Cred::Raw(flavor, Bytes::new()), &[]);
        assert_eq!(rejected(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_BADCRED), "flavor {flavor}");
    }
    // AUTH_SHORT: we never issued one.
    let r = e.call_as(NFS, 3, 0, &Cred::Raw(2, Bytes::from_static(b"abcd")), &[]);
    assert_eq!(rejected(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_REJECTEDCRED));
    // MOUNT and portmap accept AUTH_NONE.
    let r = e.call_as(MOUNT, 3, proto::mount3::MOUNT3_EXPORT, &Cred::None, &[]);
    assert_eq!(r.accept_stat(), Some(accept_stat::SUCCESS));
}

#[test]
fn program_and_version_errors() {
    let e = rw_env();
    let r = e.call_as(100099, 1, 0, &user(), &[]);
    assert_eq!(r.accept_stat(), Some(accept_stat::PROG_UNAVAIL));
    for (prog, vers, low, high) in [(NFS, 2, 3, 4), (NFS, 5, 3, 4), (MOUNT, 1, 3, 3), (PMAP, 5, 2, 4)] {
        let r = e.call_as(prog, vers, 0, &user(), &[]);
        match &r.body {
            reply_body::MSG_ACCEPTED(a) => {
                assert_eq!(a.reply_data, reply_data::PROG_MISMATCH(mismatch_info { low, high }), "{prog} v{vers}")
            }
            other => panic!("{other:?}"),
        }
    }
    for (prog, vers) in [(NFS, 3), (MOUNT, 3), (PMAP, 2), (PMAP, 4)] {
        let r = e.call_as(prog, vers, 99, &user(), &[]);
        assert_eq!(r.accept_stat(), Some(accept_stat::PROC_UNAVAIL), "{prog}");
    }
}

#[test]
fn garbage_arguments() {
    let e = rw_env();
    // GETATTR with a truncated handle length.
    let r = e.call_as(NFS, 3, proto::nfs3::NFS3_GETATTR, &user(), &[0, 0, 0]);
    assert_eq!(r.accept_stat(), Some(accept_stat::GARBAGE_ARGS));
    assert_eq!(r.outcome.label, "nfs3.GETATTR");
    // A handle longer than NFS3_FHSIZE.
    let mut enc = Encoder::new();
    enc.opaque_var(&[0u8; 65]);
    let r = e.call_as(NFS, 3, proto::nfs3::NFS3_GETATTR, &user(), &enc.into_bytes());
    assert_eq!(r.accept_stat(), Some(accept_stat::GARBAGE_ARGS));
    // A bad enum value (stable_how 7) in WRITE.
    let mut enc = Encoder::new();
    enc.opaque_var(&e.root().data);
    enc.u64(0);
    enc.u32(0);
    enc.u32(7);
    enc.opaque_var(b"");
    let r = e.call_as(NFS, 3, proto::nfs3::NFS3_WRITE, &user(), &enc.into_bytes());
    assert_eq!(r.accept_stat(), Some(accept_stat::GARBAGE_ARGS));
    // MNT path over MNTPATHLEN.
    let mut enc = Encoder::new();
    enc.opaque_var(&[b'a'; 1025]);
    let r = e.call_as(MOUNT, 3, 1, &user(), &enc.into_bytes());
    assert_eq!(r.accept_stat(), Some(accept_stat::GARBAGE_ARGS));
}

#[test]
fn no_reply_to_replies_and_truncated_headers() {
    let e = rw_env();
    let mut enc = Encoder::new();
    for v in [5u32, 1, 0, 0, 0, 0] {
        enc.u32(v);
    }
    let out = e.raw(enc.into_bytes());
    assert!(out.reply.is_none());
    assert_eq!(out.label, "rpc.reply");
    for n in 0..40 {
        let rec = call_record(9, NFS, 3, 0, &user(), &[]);
        if n < rec.len() {
            let out = e.raw(rec.slice(..n));
            if n < 12 {
                assert!(out.reply.is_none(), "{n}");
            }
            // With rpcvers present but the rest cut, still no reply.
            if (12..rec.len()).contains(&n) {
                assert!(out.reply.is_none(), "{n}");
            }
        }
    }
    let out = e.raw(Bytes::from_static(&[0, 0, 0, 1, 0, 0, 0, 7]));
    assert!(out.reply.is_none());
}

/// `[core] versions`: an NFS version switched off answers PROG_MISMATCH
/// with the range still offered and is not advertised; an NFSv4 minor
/// version switched off answers NFS4ERR_MINOR_VERS_MISMATCH. Clients
/// negotiate down on exactly these answers.
#[test]
fn versions_switched_off_are_refused_and_not_advertised() {
    use proto::nfs4::{nfs_argop4, nfsstat4};
    use proto::portmap::{pmap2_mapping, PMAP2_GETPORT};
    use server_core::{CoreSettings, NfsVersion};
    let mismatch = |e: &Env, vers| match e.call_as(NFS, vers, 0, &user(), &[]).body {
        reply_body::MSG_ACCEPTED(a) => a.reply_data,
        other => panic!("{other:?}"),
    };
    let getport = |e: &Env, vers| -> u32 {
        e.call(PMAP, 2, PMAP2_GETPORT, &pmap2_mapping { prog: NFS, vers, prot: 6, port: 0 }).result()
    };
    let only = |versions: &[NfsVersion]| {
        env_with("/export *(rw,insecure)\n", CoreSettings { versions: versions.to_vec(), ..CoreSettings::default() })
    };
    let v3_only = only(&[NfsVersion::V3]);
    assert_eq!(mismatch(&v3_only, 4), reply_data::PROG_MISMATCH(mismatch_info { low: 3, high: 3 }));
    assert_eq!((getport(&v3_only, 3), getport(&v3_only, 4)), (2049, 0));
    let v4_only = only(&[NfsVersion::V40, NfsVersion::V41]);
    assert_eq!(mismatch(&v4_only, 3), reply_data::PROG_MISMATCH(mismatch_info { low: 4, high: 4 }));
    assert_eq!((getport(&v4_only, 3), getport(&v4_only, 4)), (0, 2049));
    let no_41 = only(&[NfsVersion::V3, NfsVersion::V40]);
    let ops = || vec![nfs_argop4::OP_PUTROOTFH];
    assert_eq!(no_41.compound(1, ops()).status, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
    assert_eq!(no_41.compound(0, ops()).status, nfsstat4::NFS4_OK);
}

/// RPC-with-TLS (RFC 9289 section 4.1): the probe is recognised and its
/// STARTTLS reply built for the transport; a NULL with AUTH_TLS that
/// reaches the core (no TLS on this connection) is answered as plain NULL,
/// without "STARTTLS"; AUTH_TLS on another procedure, or inside TLS, is
/// AUTH_BADCRED.
#[test]
fn auth_tls_probe() {
    use proto::rpc::{auth_stat, rejected_reply, reply_body};
    use xdr::Decode;
    let env = rw_env();
    let tls = Cred::Raw(server_core::AUTH_TLS, Bytes::new());
    let probe = call_record(77, NFS, 4, 0, &tls, &[]);
    assert_eq!(server_core::tls_probe_xid(&probe), Some(77));
    assert_eq!(server_core::tls_probe_xid(&call_record(77, NFS, 4, 1, &tls, &[])), None);
    assert_eq!(server_core::tls_probe_xid(&call_record(77, NFS, 4, 0, &user(), &[])), None);
    assert_eq!(server_core::tls_probe_xid(&probe[..20]), None);
    let starttls = join(&server_core::starttls_reply(77));
    let msg = rpc_msg::decode(&mut xdr::Decoder::new(starttls)).unwrap();
    let rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(a)) = msg.body else { panic!("{msg:?}") };
    assert_eq!((msg.xid, &a.verf.body[..]), (77, &b"STARTTLS"[..]));
    // Reaching the core: plain NULL.
    let r = parse_reply(env.raw(probe.clone()));
    let reply_body::MSG_ACCEPTED(a) = &r.body else { panic!("{:?}", r.body) };
    assert!(a.verf.body.is_empty());
    // Not NULL: rejected.
    let r = parse_reply(env.raw(call_record(78, NFS, 3, 1, &tls, &[])));
    assert_eq!(r.body, reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(auth_stat::AUTH_BADCRED)));
    // Inside TLS: rejected too.
    let mut inside = env.peer.clone();
    inside.tls = server_core::TransportSecurity::Tls;
    let r = parse_reply(env.core.handle(probe, &inside));
    assert_eq!(r.body, reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(auth_stat::AUTH_BADCRED)));
}

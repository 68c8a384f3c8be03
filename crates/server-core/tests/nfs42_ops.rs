//! NFSv4.2 (RFC 7862) and extended attributes (RFC 8276), whole request
//! to whole reply, on MemFs and on LocalFs over a scratch directory:
//! minor version negotiation, the new attributes, SEEK, READ_PLUS,
//! ALLOCATE, DEALLOCATE, COPY, CLONE, IO_ADVISE, the offload and layout
//! operations a server without them answers, and the xattr operations.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs4::*;
use server_core::{CoreSettings, NfsVersion};

type A = nfs_argop4;
type R = nfs_resop4;

const ANON: stateid4 = ANON_STATEID;

fn has(m: &[u32], bit: u32) -> bool {
    m.get((bit / 32) as usize).is_some_and(|w| w & (1 << (bit % 32)) != 0)
}

/// Runs `case` against a MemFs export and a LocalFs export.
fn on_both(case: impl Fn(&Env)) {
    case(&rw_env());
    let dir = tempfile::tempdir().unwrap();
    case(&env_on("/export *(rw,insecure)\n", vec![localfs(&dir)]));
}

/// OPEN of `file` by `owner` with `share_access`, created if missing
/// (UNCHECKED4, no attributes).
fn open_create(owner: &str, file: &str, share_access: u32) -> OPEN4args {
    open_args(0, 0, owner, file, share_access, 0, true)
}

/// Creates `file` in /export through OPEN at minor version 2 (read and
/// write access), writes `data`, and returns its handle and open stateid.
fn create(env: &Env, s: &mut Session, file: &str, data: &[u8]) -> (nfs_fh4, stateid4) {
    let open = open_create("owner", file, OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG);
    let mut ops = vec![A::OP_PUTFH(PUTFH4args { object: env.mount("/export").data }), A::OP_OPEN(open), A::OP_GETFH];
    if !data.is_empty() {
        ops.push(write_op(&CURRENT_STATEID, 0, data));
    }
    let r = s.run(env, ops);
    ok(&r);
    let R::OP_OPEN(OPEN4res::NFS4_OK(o)) = &r.resarray[1] else { panic!("{r:?}") };
    let R::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[2] else { panic!("{r:?}") };
    (fh.object.clone(), o.stateid.clone())
}

fn last(r: &COMPOUND4res) -> &R {
    r.resarray.last().unwrap()
}

fn seek(sid: &stateid4, offset: u64, what: data_content4) -> A {
    A::OP_SEEK(SEEK4args { sa_stateid: sid.clone(), sa_offset: offset, sa_what: what })
}

/// READ of up to `count` bytes, in pieces that fit the session's reply
/// cache (the harness asks for every reply to be cached).
fn read(env: &Env, s: &mut Session, fh: &nfs_fh4, offset: u64, count: u32) -> Bytes {
    let mut out = Vec::new();
    loop {
        let want = (count - out.len() as u32).min(32768);
        let at = offset + out.len() as u64;
        let r = s.run(env, vec![putfh(fh), A::OP_READ(READ4args { stateid: ANON, offset: at, count: want })]);
        ok(&r);
        let R::OP_READ(READ4res::NFS4_OK(rd)) = last(&r) else { panic!("{r:?}") };
        out.extend_from_slice(&rd.data);
        if rd.eof || rd.data.is_empty() || out.len() as u32 >= count {
            return Bytes::from(out);
        }
    }
}

fn size(env: &Env, s: &mut Session, fh: &nfs_fh4) -> u64 {
    let r = s.run(env, vec![putfh(fh), A::OP_GETATTR(GETATTR4args { attr_request: mask(&[FATTR4_SIZE]) })]);
    ok(&r);
    let R::OP_GETATTR(GETATTR4res::NFS4_OK(g)) = last(&r) else { panic!("{r:?}") };
    u64::from_be_bytes(g.obj_attributes.attr_vals[..8].try_into().unwrap())
}

#[test]
fn minor_version_2_is_offered_and_can_be_switched_off() {
    let env = rw_env();
    // Accepted: minor version 2 then wants a session, as 4.1 does.
    assert_eq!(env.compound(2, vec![A::OP_PUTROOTFH]).status, nfsstat4::NFS4ERR_OP_NOT_IN_SESSION);
    assert_eq!(env.compound(3, vec![A::OP_PUTROOTFH]).status, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
    let settings =
        CoreSettings { versions: vec![NfsVersion::V3, NfsVersion::V40, NfsVersion::V41], ..CoreSettings::default() };
    let no_42 = env_with("/export *(rw,insecure)\n", settings);
    assert_eq!(no_42.compound(2, vec![A::OP_PUTROOTFH]).status, nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
    assert_eq!(no_42.compound(0, vec![A::OP_PUTROOTFH]).status, nfsstat4::NFS4_OK);
    // An NFSv4.2 operation in a 4.1 compound is not an operation there.
    let mut s = Session::ready(&env, "v41");
    let r = s.run(&env, vec![A::OP_PUTROOTFH, seek(&ANON, 0, data_content4::NFS4_CONTENT_DATA)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_OP_ILLEGAL);
}

#[test]
fn new_attributes_at_minor_version_2() {
    on_both(|env| {
        let mut s = Session::ready_minor(env, "attrs", 2);
        let (fh, _) = create(env, &mut s, "a", b"x");
        let want = mask(&[FATTR4_SUPPORTED_ATTRS, FATTR4_CHANGE_ATTR_TYPE, FATTR4_XATTR_SUPPORT]);
        let r = s.run(env, vec![putfh(&fh), A::OP_GETATTR(GETATTR4args { attr_request: want })]);
        ok(&r);
        let R::OP_GETATTR(GETATTR4res::NFS4_OK(g)) = last(&r) else { panic!("{r:?}") };
        let m = &g.obj_attributes.attrmask;
        assert!(has(m, FATTR4_CHANGE_ATTR_TYPE) && has(m, FATTR4_XATTR_SUPPORT), "{m:?}");
        // xattr_support is the last value: a bool, true.
        let v = &g.obj_attributes.attr_vals;
        assert_eq!(&v[v.len() - 4..], &[0, 0, 0, 1]);
        // Minor version 1 does not list them.
        let mut s1 = Session::ready(env, "attrs41");
        let r = s1
            .run(env, vec![putfh(&fh), A::OP_GETATTR(GETATTR4args { attr_request: mask(&[FATTR4_SUPPORTED_ATTRS]) })]);
        let R::OP_GETATTR(GETATTR4res::NFS4_OK(g)) = last(&r) else { panic!("{r:?}") };
        let supported: Vec<u32> = xdr::from_bytes(g.obj_attributes.attr_vals.clone()).unwrap();
        assert!(!has(&supported, FATTR4_XATTR_SUPPORT));
    });
}

#[test]
fn seek_read_plus_allocate_deallocate() {
    on_both(|env| {
        let mut s = Session::ready_minor(env, "sparse", 2);
        let data = vec![7u8; 8192];
        let (fh, sid) = create(env, &mut s, "sparse", &data);
        // ALLOCATE past the end grows the file; the new range reads zeros.
        let r = s.run(
            env,
            vec![
                putfh(&fh),
                A::OP_ALLOCATE(ALLOCATE4args { aa_stateid: sid.clone(), aa_offset: 0, aa_length: 1 << 20 }),
            ],
        );
        ok(&r);
        assert_eq!(size(env, &mut s, &fh), 1 << 20);
        assert_eq!(&read(env, &mut s, &fh, 8192, 16)[..], &[0u8; 16]);
        // DEALLOCATE keeps the size and zeros the range.
        let r = s.run(
            env,
            vec![
                putfh(&fh),
                A::OP_DEALLOCATE(DEALLOCATE4args { da_stateid: sid.clone(), da_offset: 0, da_length: 4096 }),
            ],
        );
        ok(&r);
        assert_eq!(size(env, &mut s, &fh), 1 << 20);
        assert_eq!(&read(env, &mut s, &fh, 0, 4096)[..], &[0u8; 4096][..]);
        assert_eq!(&read(env, &mut s, &fh, 4096, 4)[..], &[7u8; 4]);
        // SEEK: data at or after 4096; a hole at or before the end; the
        // end itself is a virtual hole; past it, NXIO.
        let r = s.run(env, vec![putfh(&fh), seek(&sid, 0, data_content4::NFS4_CONTENT_DATA)]);
        let R::OP_SEEK(SEEK4res::NFS4_OK(d)) = last(&r) else { panic!("{r:?}") };
        assert!(!d.sr_eof && d.sr_offset <= 4096, "{d:?}");
        let r = s.run(env, vec![putfh(&fh), seek(&sid, 4096, data_content4::NFS4_CONTENT_HOLE)]);
        let R::OP_SEEK(SEEK4res::NFS4_OK(h)) = last(&r) else { panic!("{r:?}") };
        assert!(h.sr_offset >= 8192 && h.sr_offset <= 1 << 20, "{h:?}");
        let r = s.run(env, vec![putfh(&fh), seek(&sid, (1 << 20) + 1, data_content4::NFS4_CONTENT_DATA)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_NXIO);
        // READ_PLUS returns the bytes of READ, as data and hole segments
        // that follow each other from the offset asked for.
        let r = s.run(
            env,
            vec![
                putfh(&fh),
                A::OP_READ_PLUS(READ_PLUS4args { rpa_stateid: sid.clone(), rpa_offset: 0, rpa_count: 32768 }),
            ],
        );
        ok(&r);
        let R::OP_READ_PLUS(READ_PLUS4res::NFS4_OK(rp)) = last(&r) else { panic!("{r:?}") };
        let mut bytes = Vec::new();
        for c in &rp.rpr_contents {
            match c {
                read_plus_content::NFS4_CONTENT_DATA(d) => {
                    assert_eq!(d.d_offset, bytes.len() as u64);
                    bytes.extend_from_slice(&d.d_data);
                }
                read_plus_content::NFS4_CONTENT_HOLE(h) => {
                    assert_eq!(h.di_offset, bytes.len() as u64);
                    bytes.resize(bytes.len() + h.di_length as usize, 0);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(bytes, read(env, &mut s, &fh, 0, 32768).to_vec());
        assert!(!rp.rpr_eof);
        // Not on a directory, not with zero length.
        let root = env.mount("/export").data;
        let r = s.run(
            env,
            vec![
                A::OP_PUTFH(PUTFH4args { object: root }),
                A::OP_ALLOCATE(ALLOCATE4args { aa_stateid: ANON, aa_offset: 0, aa_length: 1 }),
            ],
        );
        assert_eq!(r.status, nfsstat4::NFS4ERR_WRONG_TYPE);
        let r = s.run(
            env,
            vec![putfh(&fh), A::OP_DEALLOCATE(DEALLOCATE4args { da_stateid: sid.clone(), da_offset: 0, da_length: 0 })],
        );
        assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
        let r = s.run(
            env,
            vec![putfh(&fh), A::OP_ALLOCATE(ALLOCATE4args { aa_stateid: sid, aa_offset: u64::MAX - 1, aa_length: 2 })],
        );
        assert_eq!(r.status, nfsstat4::NFS4ERR_FBIG);
    });
}

fn copy_op(src: &stateid4, dst: &stateid4, src_offset: u64, dst_offset: u64, count: u64) -> A {
    A::OP_COPY(COPY4args {
        ca_src_stateid: src.clone(),
        ca_dst_stateid: dst.clone(),
        ca_src_offset: src_offset,
        ca_dst_offset: dst_offset,
        ca_count: count,
        ca_consecutive: true,
        ca_synchronous: false,
        ca_source_server: vec![],
    })
}

#[test]
fn copy_within_the_server() {
    on_both(|env| {
        let mut s = Session::ready_minor(env, "copy", 2);
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let (src, ssid) = create(env, &mut s, "src", &data);
        let (dst, dsid) = create(env, &mut s, "dst", b"");
        // Count 0 copies to the source's end; done within the request.
        let r = s.run(env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), copy_op(&ssid, &dsid, 0, 0, 0)]);
        ok(&r);
        let R::OP_COPY(COPY4res::NFS4_OK(c)) = last(&r) else { panic!("{r:?}") };
        assert_eq!(c.cr_response.wr_count, data.len() as u64);
        assert!(c.cr_response.wr_callback_id.is_empty());
        assert!(c.cr_requirements.cr_synchronous);
        assert_eq!(read(env, &mut s, &dst, 0, 200_000), Bytes::from(data.clone()));
        // A range into the middle of the destination, past its end.
        let r = s.run(env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), copy_op(&ssid, &dsid, 10, 200_000, 5)]);
        ok(&r);
        assert_eq!(size(env, &mut s, &dst), 200_005);
        assert_eq!(&read(env, &mut s, &dst, 200_000, 5)[..], &data[10..15]);
        // Source ranges past the end, the same file, and a directory.
        let r = s.run(env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), copy_op(&ssid, &dsid, 99_999, 0, 2)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
        let r = s.run(env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), copy_op(&ssid, &dsid, 100_001, 0, 0)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
        let r = s.run(env, vec![putfh(&src), A::OP_SAVEFH, copy_op(&ssid, &ssid, 0, 50, 10)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
        let root = env.mount("/export").data;
        let r = s.run(
            env,
            vec![A::OP_PUTFH(PUTFH4args { object: root }), A::OP_SAVEFH, putfh(&dst), copy_op(&ANON, &dsid, 0, 0, 0)],
        );
        assert_eq!(r.status, nfsstat4::NFS4ERR_WRONG_TYPE);
        // Without a saved handle.
        let r = s.run(env, vec![putfh(&dst), copy_op(&ssid, &dsid, 0, 0, 0)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_NOFILEHANDLE);
        // From another server: not offered.
        let mut inter = copy_op(&ssid, &dsid, 0, 0, 0);
        if let A::OP_COPY(a) = &mut inter {
            a.ca_source_server = vec![netloc4::NL4_NAME(name("elsewhere"))];
        }
        let r = s.run(env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), inter]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_NOTSUPP);
        // No asynchronous copies are running, so none can be asked about.
        let r = s.run(env, vec![putfh(&dst), A::OP_OFFLOAD_STATUS(OFFLOAD_STATUS4args { osa_stateid: dsid.clone() })]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_BAD_STATEID);
        let r = s.run(env, vec![putfh(&dst), A::OP_OFFLOAD_CANCEL(OFFLOAD_CANCEL4args { oca_stateid: dsid })]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_BAD_STATEID);
    });
}

#[test]
fn copy_is_cut_at_copy_sync_max() {
    let mut settings = CoreSettings::default();
    settings.nfs4.copy_sync_max = 8192;
    let env = env_with("/export *(rw,insecure)\n", settings);
    let mut s = Session::ready_minor(&env, "short", 2);
    let (src, ssid) = create(&env, &mut s, "src", &[1u8; 20_000]);
    let (dst, dsid) = create(&env, &mut s, "dst", b"");
    let r = s.run(&env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), copy_op(&ssid, &dsid, 0, 0, 0)]);
    ok(&r);
    let R::OP_COPY(COPY4res::NFS4_OK(c)) = last(&r) else { panic!("{r:?}") };
    assert_eq!(c.cr_response.wr_count, 8192);
}

#[test]
fn clone_on_memfs() {
    let env = rw_env();
    let mut s = Session::ready_minor(&env, "clone", 2);
    let data = vec![9u8; 3 * 4096 + 100];
    let (src, ssid) = create(&env, &mut s, "src", &data);
    let (dst, dsid) = create(&env, &mut s, "dst", b"");
    let clone_with = |dst_sid: &stateid4, src_offset, dst_offset, count| {
        A::OP_CLONE(CLONE4args {
            cl_src_stateid: ssid.clone(),
            cl_dst_stateid: dst_sid.clone(),
            cl_src_offset: src_offset,
            cl_dst_offset: dst_offset,
            cl_count: count,
        })
    };
    let clone = |src_offset, dst_offset, count| clone_with(&dsid, src_offset, dst_offset, count);
    let r = s.run(&env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), clone(0, 0, 0)]);
    ok(&r);
    assert_eq!(read(&env, &mut s, &dst, 0, 1 << 16), Bytes::from(data));
    // Misaligned offsets, and an overlap within one file.
    let r = s.run(&env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), clone(1, 0, 4096)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
    let r = s.run(&env, vec![putfh(&src), A::OP_SAVEFH, putfh(&src), clone_with(&ssid, 0, 4096, 8192)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
}

#[test]
fn io_advise_layouts_and_write_same() {
    on_both(|env| {
        let mut s = Session::ready_minor(env, "advise", 2);
        let (fh, sid) = create(env, &mut s, "f", b"data");
        let hints = mask(&[IO_ADVISE_type4::IO_ADVISE4_WILLNEED as u32, IO_ADVISE_type4::IO_ADVISE4_RANDOM as u32]);
        let r = s.run(
            env,
            vec![
                putfh(&fh),
                A::OP_IO_ADVISE(IO_ADVISE4args {
                    iaa_stateid: sid.clone(),
                    iaa_offset: 0,
                    iaa_count: 0,
                    iaa_hints: hints,
                }),
            ],
        );
        ok(&r);
        let R::OP_IO_ADVISE(IO_ADVISE4res::NFS4_OK(a)) = last(&r) else { panic!("{r:?}") };
        assert_eq!(a.ior_hints.iter().map(|w| w.count_ones()).sum::<u32>(), 1, "one hint acted on: {a:?}");
        let r = s.run(
            env,
            vec![
                putfh(&fh),
                A::OP_LAYOUTERROR(LAYOUTERROR4args {
                    lea_offset: 0,
                    lea_length: 1,
                    lea_stateid: sid,
                    lea_errors: vec![],
                }),
            ],
        );
        assert_eq!(r.status, nfsstat4::NFS4ERR_NOTSUPP);
    });
}

fn setxattr(key: &str, value: &[u8], how: setxattr_option4) -> A {
    A::OP_SETXATTR(SETXATTR4args { sxa_option: how, sxa_key: name(key), sxa_value: Bytes::copy_from_slice(value) })
}

fn listxattrs(cookie: u64, maxcount: u32) -> A {
    A::OP_LISTXATTRS(LISTXATTRS4args { lxa_cookie: cookie, lxa_maxcount: maxcount })
}

#[test]
fn extended_attributes() {
    on_both(|env| {
        let mut s = Session::ready_minor(env, "xattr", 2);
        let (fh, _) = create(env, &mut s, "x", b"");
        let get = |k: &str| A::OP_GETXATTR(GETXATTR4args { gxa_name: name(k) });
        let r = s.run(env, vec![putfh(&fh), get("missing")]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_NOXATTR);
        let r = s.run(env, vec![putfh(&fh), setxattr("b", b"two", setxattr_option4::SETXATTR4_CREATE)]);
        ok(&r);
        let R::OP_SETXATTR(SETXATTR4res::NFS4_OK(ci)) = last(&r) else { panic!("{r:?}") };
        assert!(ci.after != ci.before || ci.after > 0);
        ok(&s.run(env, vec![putfh(&fh), setxattr("a", b"one", setxattr_option4::SETXATTR4_EITHER)]));
        let r = s.run(env, vec![putfh(&fh), setxattr("a", b"x", setxattr_option4::SETXATTR4_CREATE)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_EXIST);
        let r = s.run(env, vec![putfh(&fh), setxattr("c", b"x", setxattr_option4::SETXATTR4_REPLACE)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_NOXATTR);
        ok(&s.run(env, vec![putfh(&fh), setxattr("a", b"uno", setxattr_option4::SETXATTR4_REPLACE)]));
        let r = s.run(env, vec![putfh(&fh), get("a")]);
        let R::OP_GETXATTR(GETXATTR4res::NFS4_OK(v)) = last(&r) else { panic!("{r:?}") };
        assert_eq!(&v[..], b"uno");
        // Limits: the name, the value.
        let r = s.run(env, vec![putfh(&fh), setxattr(&"n".repeat(300), b"x", setxattr_option4::SETXATTR4_EITHER)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_NAMETOOLONG);
        let r = s.run(env, vec![putfh(&fh), setxattr("big", &vec![0u8; 65537], setxattr_option4::SETXATTR4_EITHER)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_XATTR2BIG);
        let r = s.run(env, vec![putfh(&fh), setxattr("", b"x", setxattr_option4::SETXATTR4_EITHER)]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_INVAL);
        // Listing: sorted, without the host's prefix, in pages.
        let r = s.run(env, vec![putfh(&fh), listxattrs(0, 8192)]);
        let R::OP_LISTXATTRS(LISTXATTRS4res::NFS4_OK(l)) = last(&r) else { panic!("{r:?}") };
        assert_eq!(l.lxr_names, vec![name("a"), name("b")]);
        assert!(l.lxr_eof);
        let r = s.run(env, vec![putfh(&fh), listxattrs(0, 16 + 8)]);
        let R::OP_LISTXATTRS(LISTXATTRS4res::NFS4_OK(p1)) = last(&r) else { panic!("{r:?}") };
        assert_eq!((p1.lxr_names.clone(), p1.lxr_eof), (vec![name("a")], false));
        let r = s.run(env, vec![putfh(&fh), listxattrs(p1.lxr_cookie, 16 + 8)]);
        let R::OP_LISTXATTRS(LISTXATTRS4res::NFS4_OK(p2)) = last(&r) else { panic!("{r:?}") };
        assert_eq!((p2.lxr_names.clone(), p2.lxr_eof), (vec![name("b")], true));
        assert_eq!(s.run(env, vec![putfh(&fh), listxattrs(0, 8)]).status, nfsstat4::NFS4ERR_TOOSMALL);
        assert_eq!(s.run(env, vec![putfh(&fh), listxattrs(9, 8192)]).status, nfsstat4::NFS4ERR_BAD_COOKIE);
        // Removal.
        let rm = |k: &str| A::OP_REMOVEXATTR(REMOVEXATTR4args { rxa_name: name(k) });
        ok(&s.run(env, vec![putfh(&fh), rm("a")]));
        assert_eq!(s.run(env, vec![putfh(&fh), rm("a")]).status, nfsstat4::NFS4ERR_NOXATTR);
        // ACCESS answers the xattr rights at minor version 2.
        let want = ACCESS4_XAREAD | ACCESS4_XAWRITE | ACCESS4_XALIST;
        let r = s.run(env, vec![putfh(&fh), A::OP_ACCESS(ACCESS4args { access: want })]);
        let R::OP_ACCESS(ACCESS4res::NFS4_OK(a)) = last(&r) else { panic!("{r:?}") };
        assert_eq!((a.supported, a.access), (want, want));
        // Not in the pseudo file system.
        let r = s.run(env, vec![A::OP_PUTROOTFH, get("a")]);
        assert_eq!(r.status, nfsstat4::NFS4ERR_NOTSUPP);
    });
}

#[test]
fn read_only_exports_refuse_changes() {
    let env = env("/export *(ro,insecure)\n");
    let mut s = Session::ready_minor(&env, "ro", 2);
    let root = env.mount("/export").data;
    let r = s.run(
        &env,
        vec![A::OP_PUTFH(PUTFH4args { object: root }), setxattr("a", b"x", setxattr_option4::SETXATTR4_EITHER)],
    );
    assert_eq!(r.status, nfsstat4::NFS4ERR_ROFS);
}

/// The CB_OFFLOAD calls sent so far: (copy stateid, result).
fn offloads_sent(cb: &RecordingBackchannel) -> Vec<CB_OFFLOAD4args> {
    use xdr::{Decode, Decoder};
    let mut out = Vec::new();
    for (_, rec) in cb.sent.lock().unwrap().iter() {
        let mut d = Decoder::new(rec.clone());
        let Ok(msg) = proto::rpc::rpc_msg::decode(&mut d) else { continue };
        let proto::rpc::rpc_msg_body::CALL(call) = msg.body else { continue };
        if call.proc != 1 {
            continue;
        }
        let args = CB_COMPOUND4args::decode(&mut d).unwrap();
        for op in args.argarray {
            if let nfs_cb_argop4::OP_CB_OFFLOAD(o) = op {
                out.push(o);
            }
        }
    }
    out
}

/// A minor-version-2 session whose back channel answered its probe.
fn session_with_callbacks(env: &mut Env, cb: &RecordingBackchannel) -> Session {
    env.peer.conn = 7;
    let mut s = Session::with(env, "async", CREATE_SESSION4_FLAG_CONN_BACK_CHAN, 8);
    s.minor = 2;
    let (_, probe) = cb.sent.lock().unwrap()[0].clone();
    env.raw(cb_null_reply(&probe));
    s.reclaim_complete(env);
    s
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        assert!(std::time::Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn asynchronous_copy_reports_through_cb_offload() {
    let nfs4 = server_core::state::Nfs4Settings { copy_sync_max: 4096, ..Default::default() };
    let (mut env, _clock, cb) = env_with_nfs4(nfs4, Arc::new(server_core::MemStore::default()));
    let mut s = session_with_callbacks(&mut env, &cb);
    let data: Vec<u8> = (0..50_000u32).map(|i| (i % 13) as u8).collect();
    let (src, ssid) = create(&env, &mut s, "src", &data);
    let (dst, dsid) = create(&env, &mut s, "dst", b"");
    let r = s.run(&env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), copy_op(&ssid, &dsid, 0, 0, 0)]);
    ok(&r);
    let R::OP_COPY(COPY4res::NFS4_OK(c)) = last(&r) else { panic!("{r:?}") };
    assert!(!c.cr_requirements.cr_synchronous);
    assert_eq!(c.cr_response.wr_callback_id.len(), 1);
    let copy_id = c.cr_response.wr_callback_id[0].clone();
    wait_for("CB_OFFLOAD", || !offloads_sent(&cb).is_empty());
    let sent = offloads_sent(&cb);
    assert_eq!(sent[0].coa_stateid, copy_id);
    assert_eq!(sent[0].coa_fh, dst);
    let offload_info4::NFS4_OK(w) = &sent[0].coa_offload_info else { panic!("{:?}", sent[0]) };
    assert_eq!((w.wr_count, w.wr_committed), (50_000, stable_how4::FILE_SYNC4));
    assert_eq!(read(&env, &mut s, &dst, 0, 100_000), Bytes::from(data));
    // OFFLOAD_STATUS still answers after the end.
    let r = s.run(&env, vec![putfh(&dst), A::OP_OFFLOAD_STATUS(OFFLOAD_STATUS4args { osa_stateid: copy_id.clone() })]);
    let R::OP_OFFLOAD_STATUS(OFFLOAD_STATUS4res::NFS4_OK(st)) = last(&r) else { panic!("{r:?}") };
    assert_eq!((st.osr_count, st.osr_complete.clone()), (50_000, vec![nfsstat4::NFS4_OK]));
    // A client that demands a synchronous copy gets a short one instead.
    let mut sync = copy_op(&ssid, &dsid, 0, 0, 0);
    if let A::OP_COPY(a) = &mut sync {
        a.ca_synchronous = true;
    }
    let r = s.run(&env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), sync]);
    let R::OP_COPY(COPY4res::NFS4_OK(c)) = last(&r) else { panic!("{r:?}") };
    assert_eq!((c.cr_response.wr_count, c.cr_response.wr_callback_id.len()), (4096, 0));
}

#[test]
fn asynchronous_copy_can_be_cancelled() {
    let nfs4 = server_core::state::Nfs4Settings { copy_sync_max: 4096, ..Default::default() };
    let (mut env, _clock, cb) = env_with_nfs4(nfs4, Arc::new(server_core::MemStore::default()));
    let mut s = session_with_callbacks(&mut env, &cb);
    let (src, ssid) = create(&env, &mut s, "big", b"");
    let total = 32u64 << 20;
    ok(&s.run(
        &env,
        vec![putfh(&src), A::OP_ALLOCATE(ALLOCATE4args { aa_stateid: ssid.clone(), aa_offset: 0, aa_length: total })],
    ));
    let (dst, dsid) = create(&env, &mut s, "dst", b"");
    let r = s.run(&env, vec![putfh(&src), A::OP_SAVEFH, putfh(&dst), copy_op(&ssid, &dsid, 0, 0, 0)]);
    let R::OP_COPY(COPY4res::NFS4_OK(c)) = last(&r) else { panic!("{r:?}") };
    let copy_id = c.cr_response.wr_callback_id[0].clone();
    ok(&s.run(&env, vec![putfh(&dst), A::OP_OFFLOAD_CANCEL(OFFLOAD_CANCEL4args { oca_stateid: copy_id.clone() })]));
    let r = s.run(&env, vec![putfh(&dst), A::OP_OFFLOAD_STATUS(OFFLOAD_STATUS4args { osa_stateid: copy_id })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_BAD_STATEID);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(offloads_sent(&cb).is_empty(), "a cancelled copy sends no CB_OFFLOAD");
    assert!(size(&env, &mut s, &dst) < total, "the copy stopped early");
}

/// Opens `file` for writing with a wish for a write delegation; returns
/// the handle and the delegation's stateid.
fn create_delegated(env: &Env, s: &mut Session, file: &str) -> (nfs_fh4, stateid4) {
    let open = open_create("holder", file, OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG);
    let ops = vec![A::OP_PUTFH(PUTFH4args { object: env.mount("/export").data }), A::OP_OPEN(open), A::OP_GETFH];
    let r = s.run(env, ops);
    ok(&r);
    let R::OP_OPEN(OPEN4res::NFS4_OK(o)) = &r.resarray[1] else { panic!("{r:?}") };
    let open_delegation4::OPEN_DELEGATE_WRITE(w) = &o.delegation else { panic!("no write delegation: {o:?}") };
    let R::OP_GETFH(GETFH4res::NFS4_OK(fh)) = &r.resarray[2] else { panic!("{r:?}") };
    (fh.object.clone(), w.stateid.clone())
}

/// The CB_GETATTR calls sent so far, as (xid, fh).
fn cb_getattrs_sent(cb: &RecordingBackchannel) -> Vec<(u32, nfs_fh4)> {
    use xdr::{Decode, Decoder};
    let mut out = Vec::new();
    for (_, rec) in cb.sent.lock().unwrap().iter() {
        let mut d = Decoder::new(rec.clone());
        let Ok(msg) = proto::rpc::rpc_msg::decode(&mut d) else { continue };
        let proto::rpc::rpc_msg_body::CALL(call) = msg.body else { continue };
        if call.proc != 1 {
            continue;
        }
        for op in CB_COMPOUND4args::decode(&mut d).unwrap().argarray {
            if let nfs_cb_argop4::OP_CB_GETATTR(g) = op {
                out.push((msg.xid, g.fh));
            }
        }
    }
    out
}

/// The reply record a holder sends to CB_COMPOUND `xid`: CB_SEQUENCE,
/// then CB_GETATTR with `attrs` (size, change), or NOTSUPP for `None`.
fn cb_getattr_reply(xid: u32, sessionid: sessionid4, attrs: Option<(u64, u64)>) -> Bytes {
    use xdr::Encode;
    let seq = CB_SEQUENCE4resok {
        csr_sessionid: sessionid,
        csr_sequenceid: 1,
        csr_slotid: 0,
        csr_highest_slotid: 0,
        csr_target_highest_slotid: 0,
    };
    let getattr = match attrs {
        Some((size, change)) => {
            let mut e = xdr::Encoder::new();
            e.u64(change);
            e.u64(size);
            CB_GETATTR4res::NFS4_OK(CB_GETATTR4resok {
                obj_attributes: fattr4 { attrmask: mask(&[FATTR4_CHANGE, FATTR4_SIZE]), attr_vals: e.into_bytes() },
            })
        }
        None => CB_GETATTR4res::default(nfsstat4::NFS4ERR_NOTSUPP),
    };
    let status = if attrs.is_some() { nfsstat4::NFS4_OK } else { nfsstat4::NFS4ERR_NOTSUPP };
    let res = CB_COMPOUND4res {
        status,
        tag: Bytes::new(),
        resarray: vec![
            nfs_cb_resop4::OP_CB_SEQUENCE(CB_SEQUENCE4res::NFS4_OK(seq)),
            nfs_cb_resop4::OP_CB_GETATTR(getattr),
        ],
    };
    let mut e = xdr::Encoder::new();
    for v in [xid, 1, 0, 0, 0, 0] {
        e.u32(v);
    }
    res.encode(&mut e);
    e.into_bytes()
}

#[test]
fn getattr_asks_a_write_delegations_holder() {
    let (mut env, clock, cb) = env_with_nfs4(Default::default(), Arc::new(server_core::MemStore::default()));
    let mut holder = session_with_callbacks(&mut env, &cb);
    let (fh, _deleg) = create_delegated(&env, &mut holder, "f");
    let mut other = Session::ready_minor(&env, "other", 2);
    let getattr =
        || vec![putfh(&fh), A::OP_GETATTR(GETATTR4args { attr_request: mask(&[FATTR4_CHANGE, FATTR4_SIZE]) })];
    let size_and_change = |r: &COMPOUND4res| match r.resarray.last() {
        Some(R::OP_GETATTR(GETATTR4res::NFS4_OK(g))) => {
            let v = &g.obj_attributes.attr_vals;
            Some((u64::from_be_bytes(v[8..16].try_into().unwrap()), u64::from_be_bytes(v[..8].try_into().unwrap())))
        }
        _ => None,
    };
    // The other client's GETATTR, as the transport sees it: parked,
    // holding no thread, while CB_GETATTR goes to the holder.
    let ask = |other: &mut Session| {
        let args = COMPOUND4args { tag: Bytes::new(), minorversion: 2, argarray: other.sequenced(0, 0, getattr()) };
        let record = call_record(env.next_xid(), NFS, 4, 1, &user(), &xdr::to_bytes(&args));
        let out = env.core.handle(record, &env.peer);
        assert!(out.reply.is_none(), "nothing is sent while the GETATTR waits");
        out.parked.expect("the GETATTR waits for the holder")
    };
    let finish = |out: server_core::Outcome| {
        let r: COMPOUND4res = parse_reply(out).result();
        (r.status, size_and_change(&r))
    };
    let server_change = {
        let r =
            holder.run(&env, vec![putfh(&fh), A::OP_GETATTR(GETATTR4args { attr_request: mask(&[FATTR4_CHANGE]) })]);
        let R::OP_GETATTR(GETATTR4res::NFS4_OK(g)) = last(&r) else { panic!() };
        u64::from_be_bytes(g.obj_attributes.attr_vals[..8].try_into().unwrap())
    };
    // The holder answers with the server's own values, then as a holder
    // that wrote 5 bytes, then with an error: each answer names the parked
    // GETATTR, which then runs on from where it stopped.
    for (answer, want) in [
        (Some((0, server_change)), Some((0, server_change))),
        (Some((5, server_change + 7)), Some((5, server_change + 8))),
        (None, Some((0, server_change))),
    ] {
        let seen = cb_getattrs_sent(&cb).len();
        let parked = ask(&mut other);
        assert_eq!(cb_getattrs_sent(&cb).len(), seen + 1);
        let (xid, sent_fh) = cb_getattrs_sent(&cb).pop().unwrap();
        assert_eq!(sent_fh, fh);
        let mut peer = env.peer.clone();
        peer.conn = 7;
        let woke = env.core.handle(cb_getattr_reply(xid, holder.sessionid, answer), &peer);
        assert_eq!(woke.woken, vec![parked.wait_id()], "the answer wakes the GETATTR");
        let (status, vals) = finish(env.core.resume(parked, &env.peer));
        assert_eq!((status, vals), (nfsstat4::NFS4_OK, want), "holder answered {answer:?}");
    }
    // A holder that does not answer: once the GETATTR's time is up its
    // delegation is recalled and the GETATTR told to come back; an answer
    // after that wakes nobody.
    let parked = ask(&mut other);
    assert_eq!(parked.timeout(), std::time::Duration::from_millis(100), "cb_getattr_wait_ms");
    let (xid, _) = cb_getattrs_sent(&cb).pop().unwrap();
    clock.advance(parked.timeout());
    let (status, _) = finish(env.core.resume(parked, &env.peer));
    assert_eq!(status, nfsstat4::NFS4ERR_DELAY);
    let mut peer = env.peer.clone();
    peer.conn = 7;
    assert!(env.core.handle(cb_getattr_reply(xid, holder.sessionid, Some((1, 1))), &peer).woken.is_empty());
}

/// A `SEQUENCE, PUTFH, READ` compound tried on the connection's thread
/// (`Core::try_handle_inline`): on LocalFs, whose file is open and whose
/// data is in the page cache, it is answered there with the file's bytes;
/// on MemFs, which never says its data is cached, it gives up with nothing
/// done, and the same record then runs as the slot's next request (had
/// SEQUENCE claimed the slot, it would be refused or answered as a
/// retransmission without data). READ_PLUS likewise, except over a block
/// of zeros, which may be a hole: that one is left to a worker, which
/// answers the hole.
#[test]
fn reads_tried_in_place_answer_from_the_cache_or_change_nothing() {
    on_both(|env| {
        let mut s = Session::ready_minor(env, "in-place", 2);
        let data: Vec<u8> = (0..3 * 4096).map(|i| (i % 251) as u8 | 1).collect();
        let (fh, sid) = create(env, &mut s, "f", &data);
        // A hole from 12 KiB to 128 KiB, data after it.
        let write = WRITE4args {
            stateid: sid,
            offset: 128 << 10,
            stable: stable_how4::FILE_SYNC4,
            data: Bytes::from(vec![7; 4096]),
        };
        ok(&s.run(env, vec![putfh(&fh), A::OP_WRITE(write)]));
        let on_localfs = env.fs.is_empty();
        // Tries `op` in place, then on a worker if it gave up; says which.
        let mut run = |op: A| {
            let args =
                COMPOUND4args { tag: Bytes::new(), minorversion: 2, argarray: vec![s.sequence(0), putfh(&fh), op] };
            let record = call_record(env.next_xid(), NFS4, 4, 1, &user(), &xdr::to_bytes(&args));
            let (out, in_place) = match env.core.try_handle_inline(&env.core.parse(record.clone()), &env.peer) {
                Some(out) => (out, true),
                None => (env.core.handle(record, &env.peer), false),
            };
            let r: COMPOUND4res = parse_reply(out).result();
            ok(&r);
            (last(&r).clone(), in_place)
        };
        for round in 0..3 {
            let (res, in_place) = run(A::OP_READ(READ4args { stateid: ANON, offset: 4096, count: 4096 }));
            assert_eq!(in_place, on_localfs, "round {round}: READ in place only where the data is cached");
            let R::OP_READ(READ4res::NFS4_OK(rd)) = res else { panic!("{res:?}") };
            assert_eq!(&rd.data[..], &data[4096..8192], "round {round}");
            let (res, in_place) =
                run(A::OP_READ_PLUS(READ_PLUS4args { rpa_stateid: ANON, rpa_offset: 4096, rpa_count: 4096 }));
            assert_eq!(in_place, on_localfs, "round {round}: READ_PLUS in place only where the data is cached");
            let R::OP_READ_PLUS(READ_PLUS4res::NFS4_OK(rp)) = res else { panic!("{res:?}") };
            let [read_plus_content::NFS4_CONTENT_DATA(d)] = &rp.rpr_contents[..] else { panic!("{rp:?}") };
            assert_eq!((d.d_offset, &d.d_data[..]), (4096, &data[4096..8192]), "round {round}");
        }
        if on_localfs {
            let (res, in_place) =
                run(A::OP_READ_PLUS(READ_PLUS4args { rpa_stateid: ANON, rpa_offset: 64 << 10, rpa_count: 8192 }));
            assert!(!in_place, "zeros that may be a hole are left to a worker");
            let R::OP_READ_PLUS(READ_PLUS4res::NFS4_OK(rp)) = res else { panic!("{res:?}") };
            assert!(
                matches!(rp.rpr_contents.first(), Some(read_plus_content::NFS4_CONTENT_HOLE(_))),
                "the hole is answered as one: {rp:?}"
            );
        }
        // A forged handle reads nothing in place; the worker refuses it.
        let mut forged = fh.to_vec();
        *forged.last_mut().unwrap() ^= 1;
        let read = A::OP_READ(READ4args { stateid: ANON, offset: 0, count: 4096 });
        let ops = vec![s.sequence(0), putfh(&Bytes::from(forged)), read];
        let args = COMPOUND4args { tag: Bytes::new(), minorversion: 2, argarray: ops };
        let record = call_record(env.next_xid(), NFS4, 4, 1, &user(), &xdr::to_bytes(&args));
        assert!(
            env.core.try_handle_inline(&env.core.parse(record.clone()), &env.peer).is_none(),
            "a forged handle was read in place"
        );
        let r: COMPOUND4res = parse_reply(env.core.handle(record, &env.peer)).result();
        assert_eq!(r.status, nfsstat4::NFS4ERR_BADHANDLE);
    });
}

/// A client that keeps every delegation it gets stops getting new ones at
/// `max_delegations_per_client`, and its OPENs still succeed; a returned
/// delegation makes room again.
#[test]
fn a_client_at_its_delegation_limit_still_opens() {
    let nfs4 = server_core::state::Nfs4Settings { max_delegations_per_client: 2, ..Default::default() };
    let (mut env, _clock, cb) = env_with_nfs4(nfs4, Arc::new(server_core::MemStore::default()));
    let mut s = session_with_callbacks(&mut env, &cb);
    let (fh1, d1) = create_delegated(&env, &mut s, "f1");
    create_delegated(&env, &mut s, "f2");
    let open = |s: &mut Session, file: &str| {
        let args = open_create("holder", file, OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG);
        let r = s.run(&env, vec![A::OP_PUTFH(PUTFH4args { object: env.mount("/export").data }), A::OP_OPEN(args)]);
        ok(&r);
        let R::OP_OPEN(OPEN4res::NFS4_OK(o)) = last(&r) else { panic!("{r:?}") };
        o.delegation.clone()
    };
    assert_eq!(
        open(&mut s, "f3"),
        open_delegation4::OPEN_DELEGATE_NONE_EXT(open_none_delegation4::WND4_RESOURCE(false)),
        "the third delegation is over the limit; the file is opened all the same"
    );
    ok(&s.run(&env, vec![putfh(&fh1), A::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: d1 })]));
    assert!(matches!(open(&mut s, "f4"), open_delegation4::OPEN_DELEGATE_WRITE(_)), "a returned one made room");
}

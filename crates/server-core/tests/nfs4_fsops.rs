//! NFSv4 file-system operations in minor-version-0 compounds: attributes,
//! lookups across the pseudo file system, directory changes, READDIR
//! paging, VERIFY/NVERIFY.

mod common;

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs4::*;
use xdr::{Decode, Decoder};

type Op = nfs_argop4;

fn lookup(s: &str) -> Op {
    Op::OP_LOOKUP(LOOKUP4args { objname: name(s) })
}

fn getattr(bits: &[u32]) -> Op {
    Op::OP_GETATTR(GETATTR4args { attr_request: mask(bits) })
}

/// PUTROOTFH, then LOOKUP of each component.
fn at(path: &[&str]) -> Vec<Op> {
    let mut v = vec![Op::OP_PUTROOTFH];
    v.extend(path.iter().map(|c| lookup(c)));
    v
}

fn with(mut ops: Vec<Op>, more: impl IntoIterator<Item = Op>) -> Vec<Op> {
    ops.extend(more);
    ops
}

fn status(r: &COMPOUND4res) -> nfsstat4 {
    r.status
}

/// The raw value of every attribute in `f`, by number (the attributes
/// these tests use).
fn values(f: &fattr4) -> HashMap<u32, Bytes> {
    let mut d = Decoder::new(f.attr_vals.clone());
    let mut out = HashMap::new();
    for (i, w) in f.attrmask.iter().enumerate() {
        for b in 0..32 {
            if w & (1 << b) == 0 {
                continue;
            }
            let n = i as u32 * 32 + b;
            let before = d.clone().rest();
            match n {
                FATTR4_SUPPORTED_ATTRS | FATTR4_SUPPATTR_EXCLCREAT => {
                    Vec::<u32>::decode(&mut d).unwrap();
                }
                FATTR4_FILEHANDLE | FATTR4_OWNER | FATTR4_OWNER_GROUP => {
                    d.opaque_var(u32::MAX).unwrap();
                }
                FATTR4_FSID => {
                    d.u64().unwrap();
                    d.u64().unwrap();
                }
                FATTR4_TIME_ACCESS | FATTR4_TIME_DELTA | FATTR4_TIME_METADATA | FATTR4_TIME_MODIFY => {
                    d.u64().unwrap();
                    d.u32().unwrap();
                }
                FATTR4_CHANGE
                | FATTR4_SIZE
                | FATTR4_FILEID
                | FATTR4_FILES_AVAIL
                | FATTR4_FILES_FREE
                | FATTR4_FILES_TOTAL
                | FATTR4_MAXFILESIZE
                | FATTR4_MAXREAD
                | FATTR4_MAXWRITE
                | FATTR4_RAWDEV
                | FATTR4_SPACE_AVAIL
                | FATTR4_SPACE_FREE
                | FATTR4_SPACE_TOTAL
                | FATTR4_SPACE_USED
                | FATTR4_MOUNTED_ON_FILEID => {
                    d.u64().unwrap();
                }
                _ => {
                    d.u32().unwrap();
                }
            }
            let len = before.len() - d.remaining();
            out.insert(n, before.slice(..len));
        }
    }
    assert_eq!(d.remaining(), 0, "trailing bytes in attr_vals");
    out
}

fn attrs_of(r: &COMPOUND4res) -> HashMap<u32, Bytes> {
    ok(r);
    let Some(nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(g))) = r.resarray.last() else { panic!("{r:?}") };
    values(&g.obj_attributes)
}

fn u64_of(b: &Bytes) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

fn u32_of(b: &Bytes) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn str_of(b: &Bytes) -> String {
    String::from_utf8(b[4..4 + u32_of(b) as usize].to_vec()).unwrap()
}

fn fattr(pairs: &[(u32, Vec<u8>)]) -> fattr4 {
    let mut vals = Vec::new();
    let bits: Vec<u32> = pairs.iter().map(|(n, _)| *n).collect();
    for (_, v) in pairs {
        vals.extend_from_slice(v);
    }
    fattr4 { attrmask: mask(&bits), attr_vals: Bytes::from(vals) }
}

fn mode_val(m: u32) -> Vec<u8> {
    m.to_be_bytes().to_vec()
}

fn str_val(s: &str) -> Vec<u8> {
    xdr::to_bytes(&Bytes::copy_from_slice(s.as_bytes())).to_vec()
}

fn mkdir(n: &str) -> Op {
    Op::OP_CREATE(CREATE4args { objtype: createtype4::NF4DIR, objname: name(n), createattrs: fattr(&[]) })
}

fn setattr(f: fattr4) -> Op {
    Op::OP_SETATTR(SETATTR4args { stateid: stateid4::default(), obj_attributes: f })
}

fn two_exports() -> Env {
    env("/export *(rw,insecure,no_root_squash)\n/srv/other *(rw,insecure)\n/ro *(ro,insecure)\n")
}

#[test]
fn pseudo_root_and_export_root_differ() {
    let env = two_exports();
    let want = [FATTR4_TYPE, FATTR4_FSID, FATTR4_FILEID, FATTR4_MODE, FATTR4_MOUNTED_ON_FILEID, FATTR4_LEASE_TIME];
    let root = attrs_of(&env.compound(0, with(at(&[]), [getattr(&want)])));
    let exp = attrs_of(&env.compound(0, with(at(&["export"]), [getattr(&want)])));
    let other = attrs_of(&env.compound(0, with(at(&["srv", "other"]), [getattr(&want)])));
    let srv = attrs_of(&env.compound(0, with(at(&["srv"]), [getattr(&want)])));
    assert_eq!(u32_of(&root[&FATTR4_TYPE]), nfs_ftype4::NF4DIR as u32);
    assert_eq!(u32_of(&root[&FATTR4_MODE]), 0o555);
    assert_eq!(u32_of(&root[&FATTR4_LEASE_TIME]), 90);
    assert_ne!(root[&FATTR4_FSID], exp[&FATTR4_FSID]);
    assert_ne!(exp[&FATTR4_FSID], other[&FATTR4_FSID]);
    assert_eq!(root[&FATTR4_FSID], srv[&FATTR4_FSID], "pseudo directories share one fsid");
    assert_ne!(root[&FATTR4_FILEID], srv[&FATTR4_FILEID]);
    assert_ne!(exp[&FATTR4_MOUNTED_ON_FILEID], exp[&FATTR4_FILEID]);
    assert_ne!(exp[&FATTR4_MOUNTED_ON_FILEID], other[&FATTR4_MOUNTED_ON_FILEID]);
}

#[test]
fn getattr_leaves_out_unsupported_and_refuses_write_only() {
    let env = rw_env();
    let r = env.compound(0, with(at(&["export"]), [getattr(&[FATTR4_SIZE, FATTR4_ACL, FATTR4_HIDDEN])]));
    ok(&r);
    let Some(nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(g))) = r.resarray.last() else { panic!() };
    assert_eq!(g.obj_attributes.attrmask, vec![1 << FATTR4_SIZE]);
    // Words far beyond the known attributes are tolerated.
    let r = env.compound(
        0,
        with(at(&["export"]), [Op::OP_GETATTR(GETATTR4args { attr_request: vec![1 << 1, 0, 0, 0, 0, 7] })]),
    );
    assert_eq!(attrs_of(&r).len(), 1);
    let r = env.compound(0, with(at(&["export"]), [getattr(&[FATTR4_TIME_MODIFY_SET])]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_INVAL);
    // The supported set comes back whole and decodes.
    let a = attrs_of(&env.compound(
        0,
        with(
            at(&["export"]),
            [getattr(
                &(0..80).filter(|n| ![FATTR4_TIME_ACCESS_SET, FATTR4_TIME_MODIFY_SET].contains(n)).collect::<Vec<_>>(),
            )],
        ),
    ));
    assert!(a.contains_key(&FATTR4_OWNER) && a.contains_key(&FATTR4_FILEHANDLE) && a.contains_key(&FATTR4_SPACE_TOTAL));
    assert!(!a.contains_key(&FATTR4_SUPPATTR_EXCLCREAT), "4.0 has no suppattr_exclcreat");
}

#[test]
fn lookup_errors() {
    let env = rw_env();
    let r = env.compound(0, at(&["nothere"]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_NOENT);
    let r = env.compound(0, at(&["."]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_BADNAME);
    let r = env.compound(0, at(&["export", ".."]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_BADNAME);
    let r = env.compound(0, vec![Op::OP_LOOKUP(LOOKUP4args { objname: Bytes::new() })]);
    assert_eq!(status(&r), nfsstat4::NFS4ERR_NOFILEHANDLE);
    // A file is not a directory; a symlink says so.
    let sym = Op::OP_CREATE(CREATE4args {
        objtype: createtype4::NF4LNK(name("target")),
        objname: name("link"),
        createattrs: fattr(&[]),
    });
    ok(&env.compound(0, with(at(&["export"]), [sym])));
    let r = env.compound(0, at(&["export", "link", "x"]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_SYMLINK);
    let fifo =
        Op::OP_CREATE(CREATE4args { objtype: createtype4::NF4FIFO, objname: name("f"), createattrs: fattr(&[]) });
    ok(&env.compound(0, with(at(&["export"]), [fifo])));
    let r = env.compound(0, at(&["export", "f", "x"]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_NOTDIR);
    let r = env.compound(0, with(at(&["export", "link"]), [Op::OP_READLINK]));
    ok(&r);
    let Some(nfs_resop4::OP_READLINK(READLINK4res::NFS4_OK(l))) = r.resarray.last() else { panic!() };
    assert_eq!(&l.link[..], b"target");
    let r = env.compound(0, with(at(&["export", "f"]), [Op::OP_READLINK]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_INVAL);
}

#[test]
fn lookupp_climbs_into_the_pseudo_fs() {
    let env = two_exports();
    let fileid =
        |ops: Vec<Op>| u64_of(&attrs_of(&env.compound(0, with(ops, [getattr(&[FATTR4_FILEID])])))[&FATTR4_FILEID]);
    let srv = fileid(at(&["srv"]));
    assert_eq!(fileid(with(at(&["srv", "other"]), [Op::OP_LOOKUPP])), srv);
    assert_eq!(fileid(with(at(&["srv"]), [Op::OP_LOOKUPP])), fileid(at(&[])));
    ok(&env.compound(0, with(at(&["export"]), [mkdir("d")])));
    let exp = fileid(at(&["export"]));
    assert_eq!(fileid(with(at(&["export", "d"]), [Op::OP_LOOKUPP])), exp);
    let r = env.compound(0, with(at(&[]), [Op::OP_LOOKUPP]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_NOENT);
}

#[test]
fn pseudo_fs_is_read_only() {
    let env = rw_env();
    let r = env.compound(0, with(at(&[]), [mkdir("x")]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_ROFS);
    let r = env.compound(0, with(at(&[]), [Op::OP_REMOVE(REMOVE4args { target: name("export") })]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_ROFS);
    let r = env.compound(0, with(at(&[]), [setattr(fattr(&[(FATTR4_MODE, mode_val(0o777))]))]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_ROFS);
    let r = env.compound(0, with(at(&[]), [Op::OP_ACCESS(ACCESS4args { access: 0x3f })]));
    ok(&r);
    let Some(nfs_resop4::OP_ACCESS(ACCESS4res::NFS4_OK(a))) = r.resarray.last() else { panic!() };
    // EXECUTE has no meaning for a directory, so it is not "supported".
    assert_eq!((a.supported, a.access), (0x3f & !ACCESS4_EXECUTE, ACCESS4_READ | ACCESS4_LOOKUP));
}

#[test]
fn read_only_export() {
    let env = two_exports();
    let r = env.compound(0, with(at(&["ro"]), [mkdir("x")]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_ROFS);
    let r = env.compound(0, with(at(&["ro"]), [Op::OP_ACCESS(ACCESS4args { access: 0x3f })]));
    let Some(nfs_resop4::OP_ACCESS(ACCESS4res::NFS4_OK(a))) = r.resarray.last() else { panic!("{r:?}") };
    assert_eq!(a.access & (ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE), 0);
    assert_ne!(a.access & ACCESS4_LOOKUP, 0);
}

#[test]
fn create_remove_and_change_info() {
    let env = rw_env();
    let r = env.compound(0, with(at(&["export"]), [mkdir("d"), Op::OP_GETFH]));
    ok(&r);
    let nfs_resop4::OP_CREATE(CREATE4res::NFS4_OK(c)) = &r.resarray[2] else { panic!() };
    assert_ne!(c.cinfo.before, c.cinfo.after);
    let reg = Op::OP_CREATE(CREATE4args {
        objtype: createtype4::default(nfs_ftype4::NF4REG),
        objname: name("r"),
        createattrs: fattr(&[]),
    });
    assert_eq!(status(&env.compound(0, with(at(&["export"]), [reg]))), nfsstat4::NFS4ERR_BADTYPE);
    let r = env.compound(0, with(at(&["export"]), [mkdir("d")]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_EXIST);
    let dev = Op::OP_CREATE(CREATE4args {
        objtype: createtype4::NF4CHR(specdata4 { specdata1: 1, specdata2: 3 }),
        objname: name("null"),
        createattrs: fattr(&[]),
    });
    assert_eq!(status(&env.compound(0, with(at(&["export"]), [dev]))), nfsstat4::NFS4ERR_PERM);
    // createattrs are applied and reported.
    let m = Op::OP_CREATE(CREATE4args {
        objtype: createtype4::NF4DIR,
        objname: name("m"),
        createattrs: fattr(&[(FATTR4_MODE, mode_val(0o700))]),
    });
    let r = env.compound(0, with(at(&["export"]), [m, getattr(&[FATTR4_MODE])]));
    let nfs_resop4::OP_CREATE(CREATE4res::NFS4_OK(c)) = &r.resarray[2] else { panic!("{r:?}") };
    assert_eq!(c.attrset, vec![0, 1 << (FATTR4_MODE - 32)]);
    assert_eq!(u32_of(&attrs_of(&r)[&FATTR4_MODE]), 0o700);
    // REMOVE takes files and empty directories.
    ok(&env.compound(0, with(at(&["export", "d"]), [mkdir("inner")])));
    let rm = |n: &str| Op::OP_REMOVE(REMOVE4args { target: name(n) });
    assert_eq!(status(&env.compound(0, with(at(&["export"]), [rm("d")]))), nfsstat4::NFS4ERR_NOTEMPTY);
    ok(&env.compound(0, with(at(&["export", "d"]), [rm("inner")])));
    let r = env.compound(0, with(at(&["export"]), [rm("d")]));
    ok(&r);
    assert_eq!(status(&env.compound(0, with(at(&["export"]), [rm("d")]))), nfsstat4::NFS4ERR_NOENT);
    assert_eq!(status(&env.compound(0, with(at(&["export"]), [rm(".")]))), nfsstat4::NFS4ERR_BADNAME);
}

#[test]
fn rename_and_link() {
    let env = two_exports();
    ok(&env.compound(0, with(at(&["export"]), [mkdir("a"), Op::OP_LOOKUPP, mkdir("b")])));
    let fifo =
        Op::OP_CREATE(CREATE4args { objtype: createtype4::NF4FIFO, objname: name("p"), createattrs: fattr(&[]) });
    ok(&env.compound(0, with(at(&["export", "a"]), [fifo])));
    let rename = |o: &str, n: &str| Op::OP_RENAME(RENAME4args { oldname: name(o), newname: name(n) });
    // saved = source directory, current = target directory.
    let mut ops = at(&["export", "a"]);
    ops.push(Op::OP_SAVEFH);
    ops.push(Op::OP_LOOKUPP);
    ops.push(lookup("b"));
    ops.push(rename("p", "q"));
    let r = env.compound(0, ops);
    ok(&r);
    let Some(nfs_resop4::OP_RENAME(RENAME4res::NFS4_OK(c))) = r.resarray.last() else { panic!() };
    assert_ne!(c.source_cinfo.before, c.source_cinfo.after);
    assert_ne!(c.target_cinfo.before, c.target_cinfo.after);
    ok(&env.compound(0, at(&["export", "b", "q"])));
    // A directory over a non-directory is EXIST.
    let mut ops = at(&["export"]);
    ops.extend([Op::OP_SAVEFH, lookup("b"), rename("a", "q")]);
    assert_eq!(status(&env.compound(0, ops)), nfsstat4::NFS4ERR_EXIST);
    // Across exports, and into the pseudo fs.
    let mut ops = at(&["export"]);
    ops.extend([Op::OP_SAVEFH, Op::OP_PUTROOTFH, lookup("srv"), lookup("other"), rename("a", "a")]);
    assert_eq!(status(&env.compound(0, ops)), nfsstat4::NFS4ERR_XDEV);
    let mut ops = at(&["export"]);
    ops.extend([Op::OP_SAVEFH, Op::OP_PUTROOTFH, rename("a", "a")]);
    assert_eq!(status(&env.compound(0, ops)), nfsstat4::NFS4ERR_XDEV);
    // LINK: saved = file, current = directory.
    let link = |n: &str| Op::OP_LINK(LINK4args { newname: name(n) });
    let mut ops = at(&["export", "b", "q"]);
    ops.extend([Op::OP_SAVEFH, Op::OP_PUTROOTFH, lookup("export"), link("q2")]);
    let r = env.compound(0, ops);
    ok(&r);
    ok(&env.compound(0, at(&["export", "q2"])));
    let r = env.compound(0, with(at(&["export", "q2"]), [getattr(&[FATTR4_NUMLINKS])]));
    assert_eq!(u32_of(&attrs_of(&r)[&FATTR4_NUMLINKS]), 2);
    let mut ops = at(&["export", "a"]);
    ops.extend([Op::OP_SAVEFH, Op::OP_LOOKUPP, link("a2")]);
    assert_eq!(status(&env.compound(0, ops)), nfsstat4::NFS4ERR_ISDIR);
    let mut ops = at(&["export", "q2"]);
    ops.extend([Op::OP_SAVEFH, Op::OP_PUTROOTFH, lookup("srv"), lookup("other"), link("x")]);
    assert_eq!(status(&env.compound(0, ops)), nfsstat4::NFS4ERR_XDEV);
}

#[test]
fn setattr_mode_and_owner_round_trip() {
    let env = two_exports();
    ok(&env.compound(0, with(at(&["export"]), [mkdir("d")])));
    let set = setattr(fattr(&[(FATTR4_MODE, mode_val(0o751))]));
    let r = env.compound(0, with(at(&["export", "d"]), [set, getattr(&[FATTR4_MODE, FATTR4_OWNER])]));
    let nfs_resop4::OP_SETATTR(s) = &r.resarray[3] else { panic!() };
    assert_eq!(s.attrsset, vec![0, 1 << (FATTR4_MODE - 32)]);
    let a = attrs_of(&r);
    assert_eq!(u32_of(&a[&FATTR4_MODE]), 0o751);
    let mine = str_of(&a[&FATTR4_OWNER]);
    assert!(mine == "1000" || mine.ends_with("@localdomain"), "{mine}");
    // Only root gives files away.
    let give = setattr(fattr(&[(FATTR4_OWNER, str_val("4321"))]));
    let r = env.compound(0, with(at(&["export", "d"]), [give.clone()]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_PERM);
    let r = env.compound_as(&root(), 0, with(at(&["export", "d"]), [give, getattr(&[FATTR4_OWNER])]));
    let owner = str_of(&attrs_of(&r)[&FATTR4_OWNER]);
    assert!(owner == "4321" || owner.ends_with("@localdomain"), "{owner}");
    // The name form of root is accepted; it comes back numeric (the
    // default owner_format).
    let to_root = setattr(fattr(&[(FATTR4_OWNER, str_val("root@localdomain"))]));
    let r = env.compound_as(&root(), 0, with(at(&["export", "d"]), [to_root, getattr(&[FATTR4_OWNER])]));
    assert_eq!(str_of(&attrs_of(&r)[&FATTR4_OWNER]), "0");
    // Errors: foreign domain, read-only attribute, unsupported, short value.
    let r = env.compound_as(
        &root(),
        0,
        with(at(&["export", "d"]), [setattr(fattr(&[(FATTR4_OWNER, str_val("root@example.org"))]))]),
    );
    assert_eq!(status(&r), nfsstat4::NFS4ERR_BADOWNER);
    let r = env.compound(0, with(at(&["export", "d"]), [setattr(fattr(&[(FATTR4_FILEID, vec![0; 8])]))]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_INVAL);
    let r = env.compound(0, with(at(&["export", "d"]), [setattr(fattr(&[(FATTR4_HIDDEN, vec![0; 4])]))]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_ATTRNOTSUPP);
    let r = env.compound(0, with(at(&["export", "d"]), [setattr(fattr(&[(FATTR4_MODE, vec![0; 2])]))]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_BADXDR);
    let nfs_resop4::OP_SETATTR(s) = r.resarray.last().unwrap() else { panic!() };
    assert!(s.attrsset.is_empty());
}

#[test]
fn verify_and_nverify() {
    let env = rw_env();
    ok(&env.compound(0, with(at(&["export"]), [mkdir("d")])));
    let r = env.compound(0, with(at(&["export", "d"]), [getattr(&[FATTR4_MODE, FATTR4_TYPE])]));
    let a = attrs_of(&r);
    let same = fattr(&[(FATTR4_TYPE, a[&FATTR4_TYPE].to_vec()), (FATTR4_MODE, a[&FATTR4_MODE].to_vec())]);
    let other = fattr(&[(FATTR4_TYPE, a[&FATTR4_TYPE].to_vec()), (FATTR4_MODE, mode_val(0o1))]);
    let verify = |f: &fattr4| Op::OP_VERIFY(VERIFY4args { obj_attributes: f.clone() });
    let nverify = |f: &fattr4| Op::OP_NVERIFY(NVERIFY4args { obj_attributes: f.clone() });
    ok(&env.compound(0, with(at(&["export", "d"]), [verify(&same)])));
    assert_eq!(status(&env.compound(0, with(at(&["export", "d"]), [verify(&other)]))), nfsstat4::NFS4ERR_NOT_SAME);
    ok(&env.compound(0, with(at(&["export", "d"]), [nverify(&other)])));
    assert_eq!(status(&env.compound(0, with(at(&["export", "d"]), [nverify(&same)]))), nfsstat4::NFS4ERR_SAME);
    let rderr = fattr(&[(FATTR4_RDATTR_ERROR, vec![0; 4])]);
    assert_eq!(status(&env.compound(0, with(at(&["export", "d"]), [verify(&rderr)]))), nfsstat4::NFS4ERR_INVAL);
    let acl = fattr(&[(FATTR4_HIDDEN, vec![0; 4])]);
    assert_eq!(status(&env.compound(0, with(at(&["export", "d"]), [verify(&acl)]))), nfsstat4::NFS4ERR_ATTRNOTSUPP);
}

fn readdir(cookie: u64, verf: verifier4, maxcount: u32, bits: &[u32]) -> Op {
    Op::OP_READDIR(READDIR4args { cookie, cookieverf: verf, dircount: 0, maxcount, attr_request: mask(bits) })
}

fn readdir_res(r: &COMPOUND4res) -> READDIR4resok {
    ok(r);
    let Some(nfs_resop4::OP_READDIR(READDIR4res::NFS4_OK(d))) = r.resarray.last() else { panic!() };
    d.clone()
}

#[test]
fn readdir_pages_through_300_entries() {
    let env = rw_env();
    ok(&env.compound(0, with(at(&["export"]), [mkdir("big")])));
    for chunk in (0..300).collect::<Vec<_>>().chunks(30) {
        let ops = chunk.iter().map(|i| mkdir(&format!("entry-{i:03}"))).flat_map(|c| [c, Op::OP_LOOKUPP]);
        ok(&env.compound(0, with(at(&["export", "big"]), ops)));
    }
    let mut seen = HashSet::new();
    let (mut cookie, mut verf) = (0u64, [0u8; 8]);
    let mut pages = 0;
    loop {
        let d =
            readdir_res(&env.compound(
                0,
                with(at(&["export", "big"]), [readdir(cookie, verf, 2048, &[FATTR4_FILEID, FATTR4_TYPE])]),
            ));
        pages += 1;
        for e in &d.reply.entries {
            assert!(e.cookie > 2, "reserved cookie {}", e.cookie);
            assert!(seen.insert(e.name.clone()), "{:?} twice", e.name);
            assert_eq!(values(&e.attrs).len(), 2);
        }
        if d.reply.eof {
            break;
        }
        cookie = d.reply.entries.last().unwrap().cookie;
        verf = d.cookieverf;
    }
    assert_eq!(seen.len(), 300);
    assert!(pages > 3, "{pages} pages");
    // Bad cookies and verifiers, too small a reply.
    let r = env.compound(0, with(at(&["export", "big"]), [readdir(2, verf, 4096, &[])]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_BAD_COOKIE);
    let r = env.compound(0, with(at(&["export", "big"]), [readdir(cookie, [9; 8], 4096, &[])]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_NOT_SAME);
    // libnfs continues a listing with a zero verifier: taken as none.
    ok(&env.compound(0, with(at(&["export", "big"]), [readdir(cookie, [0; 8], 4096, &[])])));
    let r = env.compound(0, with(at(&["export", "big"]), [readdir(0, [0; 8], 40, &[])]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_TOOSMALL);
    let r = env.compound(0, with(at(&["export", "big", "entry-000"]), [readdir(0, [0; 8], 4096, &[])]));
    ok(&r);
    let r = env.compound(0, with(at(&["export"]), [lookup("nope"), readdir(0, [0; 8], 4096, &[])]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_NOENT);
}

#[test]
fn readdir_of_the_pseudo_fs() {
    let env = two_exports();
    let d = readdir_res(
        &env.compound(0, with(at(&[]), [readdir(0, [0; 8], 8192, &[FATTR4_FSID, FATTR4_MOUNTED_ON_FILEID])])),
    );
    let names: Vec<_> = d.reply.entries.iter().map(|e| String::from_utf8(e.name.to_vec()).unwrap()).collect();
    assert_eq!(names, ["export", "srv", "ro"]);
    assert!(d.reply.eof);
    let a = values(&d.reply.entries[0].attrs);
    let exp = attrs_of(&env.compound(0, with(at(&["export"]), [getattr(&[FATTR4_FSID, FATTR4_MOUNTED_ON_FILEID])])));
    assert_eq!(a, exp);
    // Resuming after the first entry.
    let c = d.reply.entries[0].cookie;
    let d2 = readdir_res(&env.compound(0, with(at(&[]), [readdir(c, d.cookieverf, 8192, &[])])));
    assert_eq!(d2.reply.entries.len(), 2);
}

#[test]
fn commit_secinfo() {
    let env = rw_env();
    let r = env.compound(0, with(at(&["export"]), [Op::OP_COMMIT(COMMIT4args { offset: 0, count: 0 })]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_ISDIR);
    let r = env.compound(0, with(at(&[]), [Op::OP_SECINFO(SECINFO4args { name: name("export") }), Op::OP_GETFH]));
    ok(&r);
    let nfs_resop4::OP_SECINFO(SECINFO4res::NFS4_OK(s)) = &r.resarray[1] else { panic!() };
    assert_eq!(s, &vec![secinfo4::default(1), secinfo4::default(0)]);
    let r = env.compound(0, with(at(&["export"]), [Op::OP_SECINFO(SECINFO4args { name: name("missing") })]));
    assert_eq!(status(&r), nfsstat4::NFS4ERR_NOENT);
}

/// GETDEVICELIST: NOTSUPP on a server without data servers; with them,
/// an export whose store is not shared hands out no layouts and so lists
/// no devices (the shared case is in crates/cli/tests/ceph/pnfs.rs).
#[test]
fn getdevicelist_lists_the_devices_of_layouts() {
    let list = |max: u32, cookie: u64, verf: [u8; 8]| {
        Op::OP_GETDEVICELIST(GETDEVICELIST4args {
            gdla_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
            gdla_maxdevices: max,
            gdla_cookie: cookie,
            gdla_cookieverf: verf,
        })
    };
    let plain = rw_env();
    let mut s = Session::ready(&plain, "a");
    assert_eq!(status(&s.run(&plain, with(at(&["export"]), [list(8, 0, [0; 8])]))), nfsstat4::NFS4ERR_NOTSUPP);

    let settings = server_core::CoreSettings {
        pnfs_data_servers: vec!["127.0.0.1:2049".parse().unwrap(), "127.0.0.2:2049".parse().unwrap()],
        ..Default::default()
    };
    let env = env_with("/export *(rw,insecure)\n", settings);
    let mut s = Session::ready(&env, "a");
    let r = s.run(&env, with(at(&["export"]), [list(8, 0, [7; 8])]));
    ok(&r);
    let Some(nfs_resop4::OP_GETDEVICELIST(GETDEVICELIST4res::NFS4_OK(l))) = r.resarray.last() else { panic!("{r:?}") };
    assert!(l.gdlr_deviceid_list.is_empty() && l.gdlr_eof, "{l:?}");
    assert_eq!(status(&s.run(&env, with(at(&["export"]), [list(0, 0, [0; 8])]))), nfsstat4::NFS4ERR_INVAL);
    assert_eq!(
        status(&s.run(&env, with(at(&["export"]), [list(8, 5, l.gdlr_cookieverf)]))),
        nfsstat4::NFS4ERR_BAD_COOKIE
    );
    assert_eq!(status(&s.run(&env, with(at(&["export"]), [list(8, 1, [9; 8])]))), nfsstat4::NFS4ERR_NOT_SAME);
    let other = Op::OP_GETDEVICELIST(GETDEVICELIST4args {
        gdla_layout_type: layouttype4::LAYOUT4_NFSV4_1_FILES,
        gdla_maxdevices: 8,
        gdla_cookie: 0,
        gdla_cookieverf: [0; 8],
    });
    assert_eq!(status(&s.run(&env, with(at(&["export"]), [other]))), nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE);
}

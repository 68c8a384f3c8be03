//! portmap / rpcbind and MOUNT v3.

mod common;

use bytes::Bytes;
use common::*;
use proto::mount3::*;
use proto::portmap::*;
use server_core::{Core, CoreSettings, Export, ServicePorts};

#[test]
fn getport_v2() {
    let e = rw_env();
    let q = |prog, vers, prot| -> u32 {
        e.call(PMAP, 2, PMAP2_GETPORT, &pmap2_mapping { prog, vers, prot, port: 0 }).result()
    };
    assert_eq!(q(NFS, 3, 6), 2049);
    assert_eq!(q(MOUNT, 3, 6), 2049);
    assert_eq!(q(PMAP, 2, 6), 2049);
    assert_eq!(q(NFS, 3, 17), 0, "no UDP");
    assert_eq!(q(NFS, 4, 6), 2049);
    assert_eq!(q(100021, 4, 6), 2049, "NLM v4");
    assert_eq!(q(100024, 1, 6), 2049, "NSM");
    assert_eq!(q(100021, 1, 6), 0);
    // SET is refused.
    let r: u32 = e.call(PMAP, 2, PMAP2_SET, &pmap2_mapping { prog: 1, vers: 1, prot: 6, port: 1 }).result();
    assert_eq!(r, 0);
    // CALLIT is not offered.
    let r = e.call(PMAP, 2, PMAP2_CALLIT, &pmap2_call_args { prog: NFS, vers: 3, proc: 0, args: Bytes::new() });
    assert_eq!(r.accept_stat(), Some(proto::rpc::accept_stat::PROC_UNAVAIL));
    let dump: pmap2_dump_result = e.call(PMAP, 2, PMAP2_DUMP, &()).result();
    assert_eq!(dump.list.len(), 8);
    assert!(dump.list.iter().all(|m| m.map.prot == 6 && m.map.port == 2049));
}

#[test]
fn getport_with_udp() {
    let fs = memfs();
    let core = Core::new(
        CoreSettings::default(),
        vec![Export { id: 1, path: "/x".into(), fs, rules: vec![] }],
        SECRET,
        VERF,
        ServicePorts { tcp: 2049, udp: Some(2050) },
    );
    let rec = call_record(
        1,
        PMAP,
        2,
        PMAP2_GETPORT,
        &user(),
        &xdr::to_bytes(&pmap2_mapping { prog: NFS, vers: 3, prot: 17, port: 0 }),
    );
    let r = parse_reply(core.handle(rec, &peer("127.0.0.1:5000")));
    assert_eq!(r.result::<u32>(), 2050);
}

#[test]
fn getaddr_v3_v4() {
    let mut e = rw_env();
    let m = |prog, vers, netid: &str| pmap3_mapping {
        prog,
        vers,
        netid: Bytes::copy_from_slice(netid.as_bytes()),
        addr: Bytes::new(),
        owner: Bytes::new(),
    };
    let r: pmap3_string_result = e.call(PMAP, 3, PMAP3_GETADDR, &m(NFS, 3, "tcp")).result();
    assert_eq!(r.addr, "127.0.0.1.8.1");
    let r: pmap3_string_result = e.call(PMAP, 3, PMAP3_GETADDR, &m(MOUNT, 3, "tcp")).result();
    assert_eq!(r.addr, "127.0.0.1.8.1");
    let r: pmap3_string_result = e.call(PMAP, 3, PMAP3_GETADDR, &m(NFS, 3, "udp")).result();
    assert_eq!(r.addr, "");
    let r: pmap3_string_result = e.call(PMAP, 3, PMAP3_GETADDR, &m(NFS, 2, "tcp")).result();
    assert_eq!(r.addr, "");
    let m4 = pmap4_mapping {
        prog: NFS,
        vers: 3,
        netid: Bytes::from_static(b"tcp"),
        addr: Bytes::new(),
        owner: Bytes::new(),
    };
    let r: pmap4_string_result = e.call(PMAP, 4, PMAP4_GETADDR, &m4).result();
    assert_eq!(r.addr, "127.0.0.1.8.1");
    let r: pmap4_string_result = e.call(PMAP, 4, PMAP4_GETVERSADDR, &m4).result();
    assert_eq!(r.addr, "127.0.0.1.8.1");
    // Over IPv6 the address is our IPv6 address.
    e.peer.local = "[::1]:2049".parse().unwrap();
    let r: pmap4_string_result =
        e.call(PMAP, 4, PMAP4_GETADDR, &pmap4_mapping { netid: Bytes::from_static(b"tcp6"), ..m4.clone() }).result();
    assert_eq!(r.addr, "::1.8.1");
    let dump: pmap4_dump_result = e.call(PMAP, 4, PMAP4_DUMP, &()).result();
    assert_eq!(dump.list.len(), 8);
    assert!(dump.list.iter().all(|m| m.map.netid == "tcp6" && m.map.addr == "::1.8.1"));
    let dump: pmap3_dump_result = e.call(PMAP, 3, PMAP3_DUMP, &()).result();
    assert_eq!(dump.list.len(), 8);
}

fn mnt_status(r: &mountres3) -> mountstat3 {
    r.discriminant()
}

#[test]
fn mnt_export_dump_umnt() {
    let e = env("/export *(rw,insecure)\n/srv/other 10.0.0.0/8(rw)\n");
    let root = e.root();
    assert_eq!(root.data.len(), 40);
    let r = e.mnt("/export");
    let mountres3::MNT3_OK(ok) = r else { panic!() };
    assert_eq!(ok.auth_flavors, vec![1]);
    // Trailing and doubled slashes are the same path.
    assert_eq!(e.mount("//export/"), root);
    // Subdirectories.
    let sub = e.mkdir(&root, "sub");
    e.mkdir(&sub, "deeper");
    let f = e.create_file(&sub, "file");
    assert_eq!(e.mount("/export/sub"), sub);
    e.mount("/export/sub/deeper");
    assert_eq!(mnt_status(&e.mnt("/export/sub/file")), mountstat3::MNT3ERR_NOTDIR);
    assert_eq!(mnt_status(&e.mnt("/export/sub/file/x")), mountstat3::MNT3ERR_NOTDIR);
    assert_eq!(mnt_status(&e.mnt("/export/nope")), mountstat3::MNT3ERR_NOENT);
    assert_eq!(mnt_status(&e.mnt("/export/sub/../sub")), mountstat3::MNT3ERR_INVAL);
    assert_eq!(mnt_status(&e.mnt("/exportx")), mountstat3::MNT3ERR_NOENT);
    assert_eq!(mnt_status(&e.mnt("/")), mountstat3::MNT3ERR_NOENT);
    assert_eq!(mnt_status(&e.mnt("export")), mountstat3::MNT3ERR_INVAL);
    // Not a client of /srv/other.
    assert_eq!(mnt_status(&e.mnt("/srv/other")), mountstat3::MNT3ERR_ACCES);
    let _ = f;

    // Symlinks are not followed.
    let args = proto::nfs3::SYMLINK3args {
        r#where: proto::nfs3::diropargs3 { dir: root.clone(), name: name_of("link") },
        symlink: proto::nfs3::symlinkdata3 { symlink_attributes: Default::default(), symlink_data: name_of("sub") },
    };
    let _: proto::nfs3::SYMLINK3res = e.nfs(proto::nfs3::NFS3_SYMLINK, &args);
    assert_eq!(mnt_status(&e.mnt("/export/link")), mountstat3::MNT3ERR_NOTDIR);

    let exports = e.call(MOUNT, 3, MOUNT3_EXPORT, &()).result_with(|d| d.list::<exportnode>());
    assert_eq!(exports.len(), 2);
    assert_eq!(exports[0].ex_dir, "/export");
    assert_eq!(exports[0].ex_groups[0].gr_name, "*");
    assert_eq!(exports[1].ex_groups[0].gr_name, "10.0.0.0/8");

    let dump = e.call(MOUNT, 3, MOUNT3_DUMP, &()).result_with(|d| d.list::<mountbody>());
    let dirs: Vec<_> = dump.iter().map(|m| m.ml_directory.clone()).collect();
    assert!(dirs.contains(&Bytes::from_static(b"/export")));
    assert!(dirs.contains(&Bytes::from_static(b"/export/sub")));
    assert!(dump.iter().all(|m| m.ml_hostname == "127.0.0.1"));
    let n = dump.len();

    e.call(MOUNT, 3, MOUNT3_UMNT, &Bytes::from_static(b"/export/sub")).result::<()>();
    let dump = e.call(MOUNT, 3, MOUNT3_DUMP, &()).result_with(|d| d.list::<mountbody>());
    assert_eq!(dump.len(), n - 1);
    e.call(MOUNT, 3, MOUNT3_UMNTALL, &()).result::<()>();
    let dump = e.call(MOUNT, 3, MOUNT3_DUMP, &()).result_with(|d| d.list::<mountbody>());
    assert!(dump.is_empty());
}

#[test]
fn mnt_secure_port_and_unknown_client() {
    let mut e = env("/export 127.0.0.1(rw)\n");
    e.peer = peer("127.0.0.1:40000");
    assert_eq!(mnt_status(&e.mnt("/export")), mountstat3::MNT3ERR_ACCES, "secure needs a port < 1024");
    e.peer = peer("127.0.0.1:1023");
    e.mount("/export");
    e.peer = peer("127.0.0.2:700");
    assert_eq!(mnt_status(&e.mnt("/export")), mountstat3::MNT3ERR_ACCES);
}

#[test]
fn mount_list_is_bounded() {
    let e = env_with("/export *(rw,insecure)\n", CoreSettings { max_mount_entries: 2, ..CoreSettings::default() });
    let root = e.root();
    for d in ["a", "b", "c"] {
        e.mkdir(&root, d);
        e.mount(&format!("/export/{d}"));
    }
    let dump = e.call(MOUNT, 3, MOUNT3_DUMP, &()).result_with(|d| d.list::<mountbody>());
    assert_eq!(dump.len(), 2);
    assert_eq!(dump[1].ml_directory, "/export/c");
}

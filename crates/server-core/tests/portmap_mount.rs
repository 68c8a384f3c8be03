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
    // SET of a program nfsx serves is refused.
    let r: u32 = e.call(PMAP, 2, PMAP2_SET, &pmap2_mapping { prog: NFS, vers: 3, prot: 6, port: 1 }).result();
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

fn set2(e: &Env, prog: u32, vers: u32, prot: u32, port: u32) -> u32 {
    e.call(PMAP, 2, PMAP2_SET, &pmap2_mapping { prog, vers, prot, port }).result()
}

fn getport2(e: &Env, prog: u32, vers: u32, prot: u32) -> u32 {
    e.call(PMAP, 2, PMAP2_GETPORT, &pmap2_mapping { prog, vers, prot, port: 0 }).result()
}

fn mapping3(prog: u32, vers: u32, netid: &str, addr: &str) -> pmap3_mapping {
    pmap3_mapping {
        prog,
        vers,
        netid: Bytes::copy_from_slice(netid.as_bytes()),
        addr: Bytes::copy_from_slice(addr.as_bytes()),
        owner: Bytes::from_static(b"1000"),
    }
}

/// Programs on the server's host register with SET (as with rpcbind);
/// other hosts may not.
#[test]
fn set_and_unset_from_local_callers() {
    const PROG: u32 = 400_123;
    let mut e = rw_env();
    assert_eq!(set2(&e, PROG, 1, 6, 900), 1);
    assert_eq!(set2(&e, PROG, 1, 6, 901), 0, "already registered");
    assert_eq!(getport2(&e, PROG, 1, 6), 900);
    assert_eq!(getport2(&e, PROG, 1, 17), 0);
    let dump: pmap2_dump_result = e.call(PMAP, 2, PMAP2_DUMP, &()).result();
    assert_eq!(dump.list.len(), 9);
    assert!(dump.list.iter().any(|m| m.map.prog == PROG && m.map.port == 900));
    let r: pmap3_string_result = e.call(PMAP, 3, PMAP3_GETADDR, &mapping3(PROG, 1, "tcp", "")).result();
    assert_eq!(r.addr, "127.0.0.1.3.132");
    // rpcbind v4 SET with a universal address, then DUMP lists it.
    let r: u32 = e.call(PMAP, 4, PMAP3_SET, &mapping3(PROG, 2, "udp", "0.0.0.0.3.133")).result();
    assert_eq!(r, 1);
    let dump: pmap4_dump_result = e.call(PMAP, 4, PMAP4_DUMP, &()).result();
    let mine: Vec<_> = dump.list.iter().filter(|m| m.map.prog == PROG).map(|m| m.map.clone()).collect();
    assert_eq!(mine.len(), 2);
    assert!(mine.iter().any(|m| m.vers == 2 && m.netid == "udp" && m.addr == "127.0.0.1.3.133" && m.owner == "1000"));
    assert_eq!(getport2(&e, PROG, 2, 17), 901);
    // Another host may neither register nor unregister.
    let local = e.peer.clone();
    e.peer = peer("10.0.0.9:700");
    assert_eq!(set2(&e, PROG + 1, 1, 6, 902), 0);
    let r: u32 = e.call(PMAP, 2, PMAP2_UNSET, &pmap2_mapping { prog: PROG, vers: 1, prot: 6, port: 0 }).result();
    assert_eq!(r, 0);
    assert_eq!(getport2(&e, PROG, 1, 6), 900, "lookups answer everyone");
    // A caller from the address it reached us on is local too.
    e.peer.local = "10.0.0.9:2049".parse().unwrap();
    assert_eq!(set2(&e, PROG + 1, 1, 6, 902), 1);
    e.peer = local;
    // v2 UNSET drops both transports; v3 UNSET with an empty netid too.
    let r: u32 = e.call(PMAP, 2, PMAP2_UNSET, &pmap2_mapping { prog: PROG, vers: 1, prot: 17, port: 0 }).result();
    assert_eq!(r, 1);
    assert_eq!(getport2(&e, PROG, 1, 6), 0);
    let r: u32 = e.call(PMAP, 3, PMAP3_UNSET, &mapping3(PROG, 2, "", "")).result();
    assert_eq!(r, 1);
    assert_eq!(getport2(&e, PROG, 2, 17), 0);
    assert_eq!(getport2(&e, PROG + 1, 1, 6), 902);
    // A universal address without a port is refused.
    let r: u32 = e.call(PMAP, 3, PMAP3_SET, &mapping3(PROG, 3, "tcp", "junk")).result();
    assert_eq!(r, 0);
}

/// A lock client on the server's host registers NLM and NSM for the
/// server's callbacks: the lookups keep answering nfsx's own services,
/// the callbacks find the client's port.
#[test]
fn nlm_registrations_are_kept_for_callbacks() {
    let e = rw_env();
    assert_eq!(set2(&e, 100021, 4, 6, 4045), 1);
    assert_eq!(set2(&e, 100024, 1, 17, 4046), 1);
    assert_eq!(getport2(&e, 100021, 4, 6), 2049);
    assert_eq!(getport2(&e, 100024, 1, 17), 0);
    let dump: pmap2_dump_result = e.call(PMAP, 2, PMAP2_DUMP, &()).result();
    assert_eq!(dump.list.len(), 8);
    assert_eq!(e.core.local_callback_port(100021, 4, "tcp"), Some(4045));
    assert_eq!(e.core.local_callback_port(100024, 1, "udp"), Some(4046));
    assert_eq!(e.core.local_callback_port(100021, 4, "udp"), None);
    let r: u32 = e.call(PMAP, 2, PMAP2_UNSET, &pmap2_mapping { prog: 100021, vers: 4, prot: 6, port: 0 }).result();
    assert_eq!(r, 1);
    assert_eq!(e.core.local_callback_port(100021, 4, "tcp"), None);
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

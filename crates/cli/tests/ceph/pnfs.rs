//! pNFS flex-files over CephFS heads: layouts that send I/O to another
//! head, failed data servers reported and left out.

use super::*;

/// Two heads of one CephFS with one handle key: a data server, and a
/// metadata server whose layouts name it.
fn pnfs_heads(conf: &str, path: &str) -> (TestServer, TestServer) {
    let key = Some([7u8; 32]);
    let ceph = format!("[ceph]\nconf = \"{conf}\"\n");
    let ds = TestServer::start(ServerOpts {
        backend: "ceph",
        extra_config: &ceph,
        export_path: Some(path),
        handle_key: key,
        ..Default::default()
    });
    let mds = TestServer::start(ServerOpts {
        backend: "ceph",
        extra_config: &format!("[core]\npnfs_data_servers = [\"127.0.0.1:{}\"]\n{ceph}", ds.port),
        export_path: Some(path),
        handle_key: key,
        ..Default::default()
    });
    (ds, mds)
}

/// Writes `data` to `name` through nfsx's client in 1 MiB calls, creating
/// or truncating it, and closes it.
async fn write_whole(c: &client::Client, name: &str, data: &[u8]) {
    let how = client::OpenOptions { write: true, create: true, truncate: true, ..Default::default() };
    let mut f = c.open(name, how).await.unwrap();
    for (i, chunk) in data.chunks(1 << 20).enumerate() {
        f.write((i << 20) as u64, chunk).await.unwrap();
    }
    f.close().await.unwrap();
}

/// Reads `len` bytes of `name` through nfsx's client.
async fn read_whole(c: &client::Client, name: &str, len: usize) -> Vec<u8> {
    let mut f = c.open(name, client::OpenOptions::read()).await.unwrap();
    let mut back = vec![0u8; len];
    let mut at = 0;
    while at < len {
        let n = f.read(at as u64, &mut back[at..]).await.unwrap();
        assert!(n > 0, "{name}: short file, {at} bytes");
        at += n;
    }
    f.close().await.unwrap();
    back
}

/// nfsx's client with layouts: a file written and read back through the
/// metadata server's address goes to the data server over NFSv3 (the
/// client counts those calls), COMMIT included, and reads back whole.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn nfsx_client_sends_io_through_layouts() {
    let (conf, path) = ceph_dir("pnfs-client");
    let (_ds, mds) = pnfs_heads(&conf, &path);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let url = format!("nfs://127.0.0.1:{}{path}?version=4.1", mds.port);
        let c = client::Client::connect(&url, client::ClientSettings::default()).await.unwrap();
        let data: Vec<u8> = (0..(4u32 << 20)).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
        write_whole(&c, "laid-out", &data).await;
        assert!(read_whole(&c, "laid-out", data.len()).await == data, "read back differs");
        let counters = c.nfs41().unwrap().counters();
        assert!(counters.ds_writes > 0 && counters.ds_reads > 0, "{counters:?}");
        // The client's call statistics include the data servers' calls.
        let stats = c.stats();
        let writes = stats.ops.get("WRITE").map_or(0, |o| o.count);
        assert!(writes >= counters.ds_writes, "{writes} WRITEs counted, {counters:?}");
    });
}

/// A data server that goes away while nfsx's client writes through it:
/// the writes fall back to the metadata server, the client reports the
/// data server (LAYOUTERROR over NFSv4.2, the error report of the layout's
/// LAYOUTRETURN at close over NFSv4.1), and the metadata server then
/// names it in no new layout, so a new file's LAYOUTGET is answered
/// LAYOUTUNAVAILABLE and its I/O goes straight through the metadata
/// server, with no attempt at the dead data server. Every file reads back
/// whole. (The data server is stopped, not killed: a killed head's CephFS
/// session keeps its caps until the MDS times it out, a minute here, which
/// would hold up this file's read and other tests' files; docs/SCALE-OUT.md.)
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn a_failed_data_server_is_reported_and_left_out_of_new_layouts() {
    failed_data_server("4.2");
}

#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn a_failed_data_server_is_reported_in_the_layoutreturn_over_nfs41() {
    failed_data_server("4.1");
}

fn failed_data_server(version: &str) {
    use proto::nfs4::*;
    use support::v4::*;
    let (conf, path) = ceph_dir(&format!("pnfs-failed-ds-{version}"));
    let (mut ds, mds) = pnfs_heads(&conf, &path);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let data: Vec<u8> = (0..(2u32 << 20)).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    let url = format!("nfs://127.0.0.1:{}{path}?version={version}", mds.port);
    let c = rt.block_on(client::Client::connect(&url, client::ClientSettings::default())).unwrap();
    rt.block_on(write_whole(&c, "before", &data));
    let through_ds = c.nfs41().unwrap().counters().ds_writes;
    assert!(through_ds > 0, "the first file went through the data server");
    ds.sigterm();
    let started = std::time::Instant::now();
    rt.block_on(async {
        write_whole(&c, "after", &data).await;
        write_whole(&c, "later", &data).await;
    });
    let took = started.elapsed();
    assert_eq!(c.nfs41().unwrap().counters().ds_writes, through_ds, "nothing more reached the dead data server");
    assert!(took < Duration::from_secs(10), "falling back took {took:?}");

    // The metadata server heard: a new layout names no data server.
    let raw = Client41::connect_manual(mds.port, "pnfs-after-failure");
    let (open, fh) = open_file(&mds, &raw, "o", "new-file", OPEN4_SHARE_ACCESS_BOTH);
    let r = raw.run(vec![nfs_argop4::OP_PUTFH(PUTFH4args { object: fh }), layoutget_rw(open)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE, "metadata server's log:\n{}", mds.log_text());

    for name in ["before", "after", "later"] {
        assert!(rt.block_on(read_whole(&c, name, data.len())) == data, "{name} reads back different bytes");
    }
}

/// LAYOUTRETURN of the current file's flexible-file layout, with `body`.
fn layoutreturn_file(stateid: proto::nfs4::stateid4, body: Bytes) -> proto::nfs4::nfs_argop4 {
    use proto::nfs4::*;
    nfs_argop4::OP_LAYOUTRETURN(LAYOUTRETURN4args {
        lora_reclaim: false,
        lora_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
        lora_iomode: layoutiomode4::LAYOUTIOMODE4_ANY,
        lora_layoutreturn: layoutreturn4::LAYOUTRETURN4_FILE(layoutreturn_file4 {
            lrf_offset: 0,
            lrf_length: u64::MAX,
            lrf_stateid: stateid,
            lrf_body: body,
        }),
    })
}

fn layoutget_rw(stateid: proto::nfs4::stateid4) -> proto::nfs4::nfs_argop4 {
    use proto::nfs4::*;
    nfs_argop4::OP_LAYOUTGET(LAYOUTGET4args {
        loga_signal_layout_avail: false,
        loga_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
        loga_iomode: layoutiomode4::LAYOUTIOMODE4_RW,
        loga_offset: 0,
        loga_length: u64::MAX,
        loga_minlength: 0,
        loga_stateid: stateid,
        loga_maxcount: 4096,
    })
}

/// An NFSv4.1 client reports a data server's errors in the layout's
/// LAYOUTRETURN (RFC 8435 section 9.1.1): a refusal (ACCESS, as fencing
/// would give) is only counted and the data server stays in layouts; an
/// unreachable one (NXIO) is left out of new layouts. A return whose body
/// does not decode still returns the layout.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn layoutreturn_error_reports_hold_a_data_server_out_of_layouts() {
    use proto::nfs4::*;
    use support::v4::*;
    use xdr::{Decode, Decoder, Encode, Encoder};
    let (conf, path) = ceph_dir("pnfs-ioerr");
    let (_ds, mds) = pnfs_heads(&conf, &path);
    let c = Client41::connect_manual(mds.port, "pnfs-ioerr");
    let (open, fh) = open_file(&mds, &c, "o", "reported", OPEN4_SHARE_ACCESS_BOTH);
    let on = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() });
    let layout = || {
        let r = c.run(vec![on(), layoutget_rw(open.clone())]);
        match &r.resarray[1] {
            nfs_resop4::OP_LAYOUTGET(LAYOUTGET4res::NFS4_OK(lg)) => {
                let ff = ff_layout4::decode(&mut Decoder::new(lg.logr_layout[0].lo_content.loc_body.clone())).unwrap();
                Ok((lg.logr_stateid.clone(), ff.ffl_mirrors[0].ffm_data_servers[0].ffds_deviceid))
            }
            _ => Err(r.status),
        }
    };
    let give_back = |sid: stateid4, body: Bytes| c.run(vec![on(), layoutreturn_file(sid, body)]);
    let report = |sid: &stateid4, device: deviceid4, status: nfsstat4| {
        let err = device_error4 { de_deviceid: device, de_status: status, de_opnum: nfs_opnum4::OP_WRITE };
        let ioerr =
            ff_ioerr4 { ffie_offset: 0, ffie_length: u64::MAX, ffie_stateid: sid.clone(), ffie_errors: vec![err] };
        let mut e = Encoder::new();
        ff_layoutreturn4 { fflr_ioerr_report: vec![ioerr], fflr_iostats_report: vec![] }.encode(&mut e);
        e.into_bytes()
    };
    let (sid, device) = layout().expect("a layout");
    ok_res(&give_back(sid.clone(), Bytes::from_static(b"\x00\x00\x00")));
    let (sid, device2) = layout().expect("a layout after a return with a garbled body");
    assert_eq!(device2, device);
    ok_res(&give_back(sid.clone(), report(&sid, device, nfsstat4::NFS4ERR_ACCESS)));
    let (sid, _) = layout().expect("a refusal does not hold the data server out");
    ok_res(&give_back(sid.clone(), report(&sid, device, nfsstat4::NFS4ERR_NXIO)));
    assert_eq!(layout().err(), Some(nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE), "an unreachable data server is held out");
}

/// pNFS with flexible-file layouts over two heads of one CephFS sharing a
/// handle key: head 1, the metadata server, names head 2 as NFSv3 data
/// server; a WRITE sent to head 2 with the layout's handle and ids reads
/// back through head 1, and the layout is returned.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn flex_file_layouts_send_io_to_another_head() {
    use proto::nfs4::*;
    use support::v4::*;
    use xdr::{Decode, Decoder, Encode, Encoder};
    let (conf, path) = ceph_dir("pnfs");
    let (ds, mds) = pnfs_heads(&conf, &path);

    // The metadata server says so, and lists the layout type for the export.
    let r = Conn::connect(mds.port).compound(
        1,
        vec![nfs_argop4::OP_EXCHANGE_ID(EXCHANGE_ID4args {
            eia_clientowner: client_owner4 { co_verifier: [1; 8], co_ownerid: Bytes::from_static(b"pnfs-probe") },
            eia_flags: 0,
            eia_state_protect: state_protect4_a::SP4_NONE,
            eia_client_impl_id: vec![],
        })],
    );
    let nfs_resop4::OP_EXCHANGE_ID(EXCHANGE_ID4res::NFS4_OK(eid)) = &r.resarray[0] else { panic!("{r:?}") };
    assert_ne!(eid.eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS, 0, "flags {:#x}", eid.eir_flags);
    // Recalls are reported, not answered (CB_LAYOUTRECALL below).
    let c = Client41::connect_manual(mds.port, "pnfs-client");
    let mut ops = walk(&mds.export);
    let mut mask = Vec::new();
    let word = FATTR4_FS_LAYOUT_TYPES as usize / 32;
    mask.resize(word + 1, 0u32);
    mask[word] |= 1 << (FATTR4_FS_LAYOUT_TYPES % 32);
    ops.push(nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: mask }));
    let r = c.run(ops);
    ok_res(&r);
    let nfs_resop4::OP_GETATTR(GETATTR4res::NFS4_OK(attrs)) = r.resarray.last().unwrap() else { panic!("{r:?}") };
    let types = Vec::<layouttype4>::decode(&mut Decoder::new(attrs.obj_attributes.attr_vals.clone())).unwrap();
    assert_eq!(types, [layouttype4::LAYOUT4_FLEX_FILES]);

    let (open, fh) = open_file(&mds, &c, "o", "through-a-data-server", OPEN4_SHARE_ACCESS_BOTH);
    let on = || nfs_argop4::OP_PUTFH(PUTFH4args { object: fh.clone() });
    let get = layoutget_rw;
    let r = c.run(vec![on(), get(open.clone())]);
    ok_res(&r);
    let nfs_resop4::OP_LAYOUTGET(LAYOUTGET4res::NFS4_OK(lg)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!((lg.logr_layout.len(), lg.logr_stateid.seqid), (1, 1));
    let layout = &lg.logr_layout[0];
    assert_eq!((layout.lo_offset, layout.lo_length), (0, u64::MAX));
    let ff = ff_layout4::decode(&mut Decoder::new(layout.lo_content.loc_body.clone())).unwrap();
    assert_ne!(ff.ffl_flags & FF_FLAGS_NO_LAYOUTCOMMIT, 0);
    let server = &ff.ffl_mirrors[0].ffm_data_servers[0];
    assert_eq!(server.ffds_fh_vers[0], fh, "the data server is given the file's own handle");

    let r = c.run(vec![nfs_argop4::OP_GETDEVICEINFO(GETDEVICEINFO4args {
        gdia_device_id: server.ffds_deviceid,
        gdia_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
        gdia_maxcount: 4096,
        gdia_notify_types: vec![],
    })]);
    ok_res(&r);
    let nfs_resop4::OP_GETDEVICEINFO(GETDEVICEINFO4res::NFS4_OK(di)) = &r.resarray[0] else { panic!("{r:?}") };
    let addr = ff_device_addr4::decode(&mut Decoder::new(di.gdir_device_addr.da_addr_body.clone())).unwrap();
    let p = ds.port;
    assert_eq!(&addr.ffda_netaddrs[0].na_r_addr[..], format!("127.0.0.1.{}.{}", p >> 8, p & 0xff).as_bytes());
    assert_eq!((addr.ffda_versions[0].ffdv_version, addr.ffda_versions[0].ffdv_tightly_coupled), (3, false));
    // The export's device list names that data server.
    let r = c.run(vec![
        on(),
        nfs_argop4::OP_GETDEVICELIST(GETDEVICELIST4args {
            gdla_layout_type: layouttype4::LAYOUT4_FLEX_FILES,
            gdla_maxdevices: 8,
            gdla_cookie: 0,
            gdla_cookieverf: [0; 8],
        }),
    ]);
    ok_res(&r);
    let nfs_resop4::OP_GETDEVICELIST(GETDEVICELIST4res::NFS4_OK(list)) = &r.resarray[1] else { panic!("{r:?}") };
    assert!(list.gdlr_eof && list.gdlr_deviceid_list.contains(&server.ffds_deviceid), "{list:?}");

    // The I/O goes to the data server over NFSv3, as the layout's owner.
    let uid: u32 = std::str::from_utf8(&server.ffds_user).unwrap().parse().unwrap();
    let gid: u32 = std::str::from_utf8(&server.ffds_group).unwrap().parse().unwrap();
    let data = Bytes::from((0..65536u32).map(|i| (i * 7 % 251) as u8).collect::<Vec<u8>>());
    let mut v3 = RpcClient::connect(ds.port).unwrap();
    let args = WRITE3args {
        file: nfs_fh3 { data: server.ffds_fh_vers[0].clone() },
        offset: 0,
        count: data.len() as u32,
        stable: stable_how::FILE_SYNC,
        data: data.clone(),
    };
    match v3.call_as::<_, WRITE3res>(NFS_PROGRAM, NFS_V3, NFS3_WRITE, rpc::auth_sys(uid, gid), &args) {
        Ok(WRITE3res::NFS3_OK(ok)) => assert_eq!(ok.count, 65536),
        other => panic!("WRITE to the data server: {other:?}"),
    }
    // (In pieces a session's reply cache takes.)
    for offset in [0u64, 61440] {
        let r = c.run(vec![on(), nfs_argop4::OP_READ(READ4args { stateid: open.clone(), offset, count: 4096 })]);
        ok_res(&r);
        let nfs_resop4::OP_READ(READ4res::NFS4_OK(read)) = &r.resarray[1] else { panic!("{r:?}") };
        let at = offset as usize;
        assert_eq!(read.data, data.slice(at..at + 4096), "the metadata server reads what the data server wrote");
    }

    // A second LAYOUTGET names the layout stateid and gets its next seqid;
    // the layout is then returned, and its stateid is gone.
    let r = c.run(vec![on(), get(lg.logr_stateid.clone())]);
    let nfs_resop4::OP_LAYOUTGET(LAYOUTGET4res::NFS4_OK(again)) = &r.resarray[1] else { panic!("{r:?}") };
    assert_eq!(again.logr_stateid.seqid, 2);
    // Another client truncates the file: the layout is recalled.
    let other = Client41::connect(mds.port, "pnfs-truncater");
    let mut size = Encoder::with_capacity(8);
    0u64.encode(&mut size);
    let mut attrmask = Vec::new();
    proto::bitmap4::add(&mut attrmask, FATTR4_SIZE);
    let truncate = nfs_argop4::OP_SETATTR(SETATTR4args {
        stateid: stateid4 { seqid: 0, other: [0; 12] },
        obj_attributes: fattr4 { attrmask, attr_vals: size.into_bytes() },
    });
    ok_res(&other.run(vec![on(), truncate]));
    let recall = c.conn.recalls.lock().unwrap().recv_timeout(Duration::from_secs(10)).expect("CB_LAYOUTRECALL");
    assert_eq!((recall.stateid.other, &recall.fh), (again.logr_stateid.other, &fh));
    let ret = |sid: stateid4| layoutreturn_file(sid, Bytes::new());
    ok_res(&c.run(vec![on(), ret(again.logr_stateid.clone())]));
    assert_eq!(c.run(vec![on(), ret(again.logr_stateid.clone())]).status, nfsstat4::NFS4ERR_BAD_STATEID);

    // A server without data servers hands out no layouts.
    let plain = Client41::connect(ds.port, "pnfs-client-2");
    let (open2, fh2) = open_file(&ds, &plain, "o", "no-layout", OPEN4_SHARE_ACCESS_BOTH);
    let r = plain.run(vec![nfs_argop4::OP_PUTFH(PUTFH4args { object: fh2 }), get(open2)]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE);
    let mut e = Encoder::with_capacity(16);
    layouttype4::LAYOUT4_FLEX_FILES.encode(&mut e);
    assert_eq!(&e.into_bytes()[..], [0, 0, 0, 4], "RFC 8435 section 2's number");
}

//! `nfsx serve --backend ceph` against a real Ceph cluster, driven by real
//! clients: libnfs-utils and nfsx's own client (NFSv4.2 and NFSv3).
//!
//! Runs when `NFSX_CEPH_CONF` names a cluster's `ceph.conf`
//! (`scripts/ceph.sh start` prints it; `scripts/test.sh` sets it when a
//! cluster could start); without it every test says it was skipped.

mod support;

use std::time::Duration;

use support::bench::*;
use support::*;
use vfs::{Owner, SetAttrs, Vfs};
use vfs_ceph::{CephFs, CephSettings};

const MIN: Duration = Duration::from_secs(60);

/// A fresh directory in the Ceph file system, anyone may write in; `None`
/// without a cluster.
fn ceph_dir(tag: &str) -> Option<(String, String)> {
    let Some(conf) = std::env::var_os("NFSX_CEPH_CONF") else {
        eprintln!("skipped: NFSX_CEPH_CONF is not set (no Ceph cluster)");
        return None;
    };
    let conf = conf.to_string_lossy().into_owned();
    let settings = CephSettings { conf: Some(conf.clone().into()), ..CephSettings::default() };
    let fs = CephFs::open(&settings, "/").expect("mount CephFS");
    let name = format!("nfsx-e2e-{tag}-{}", std::process::id());
    let set = SetAttrs { mode: Some(0o777), ..SetAttrs::default() };
    fs.mkdir(fs.root(), name.as_bytes(), &set, Owner { uid: 0, gid: 0 }).expect("mkdir in CephFS");
    Some((conf, format!("/{name}")))
}

fn ceph_server(conf: &str, path: &str) -> TestServer {
    let extra = format!("[ceph]\nconf = \"{conf}\"\n");
    TestServer::start(ServerOpts {
        backend: "ceph",
        extra_config: &extra,
        export_path: Some(path),
        ..Default::default()
    })
}

#[test]
fn files_in_and_out_with_libnfs() {
    let Some((conf, path)) = ceph_dir("cp") else { return };
    let srv = ceph_server(&conf, &path);
    let tmp = tempfile::tempdir().unwrap();
    let (src, back) = (tmp.path().join("src.bin"), tmp.path().join("back.bin"));
    random_file(&src, 64 << 20, 7);
    ok(&run("nfs-cp", &[src.to_str().unwrap(), &srv.url("/big.bin")], 5 * MIN), "nfs-cp in");
    ok(&run("nfs-cp", &[&srv.url("/big.bin"), back.to_str().unwrap()], 5 * MIN), "nfs-cp out");
    assert_eq!(sha256_file(&back), sha256_file(&src), "file read back differs");
}

#[test]
fn namespace_operations_with_libnfs() {
    let Some((conf, path)) = ceph_dir("ns") else { return };
    let srv = ceph_server(&conf, &path);
    namespace_round(&srv.url(""), "hello-ceph");
}

/// nfsx's own client over NFSv4.2 and NFSv3: data and metadata workloads
/// checked by `nfsx bench` itself, and file handles kept across a restart
/// of the head (a new libcephfs client resolves the same inode numbers).
#[test]
fn nfsx_client_workloads_and_a_restart() {
    let Some((conf, path)) = ceph_dir("bench") else { return };
    let mut srv = ceph_server(&conf, &path);
    let tmp = tempfile::tempdir().unwrap();
    for version in ["4.2", "3"] {
        let t = format!("nfs://127.0.0.1:{}{path}?version={version}", srv.port);
        let args = ["data", "--mode", "seq-write,seq-read,rand-read", "--size", "4MiB", "--io-size", "64KiB"];
        let (out, v) = bench(&[&args[..], &["--target", &t, "--runs", "1"]].concat(), tmp.path(), 5 * MIN);
        all_ok(&out, &v);
        let args = ["metadata", "--op", "create,list,stat", "--files", "100", "--target", &t, "--runs", "1"];
        let (out, v) = bench(&args, tmp.path(), 5 * MIN);
        all_ok(&out, &v);
    }
    let keep = tmp.path().join("keep");
    std::fs::write(&keep, b"across a restart").unwrap();
    ok(&run("nfs-cp", &[keep.to_str().unwrap(), &srv.url("/keep")], MIN), "nfs-cp in");
    srv.restart();
    let out = run("nfs-cat", &[&srv.url("/keep")], MIN);
    assert_eq!(ok(&out, "nfs-cat after restart"), "across a restart");
}

//! `nfsx serve --backend ceph` against a real Ceph cluster, driven by real
//! clients: libnfs-utils and nfsx's own client (NFSv4.2 and NFSv3).
//!
//! The tests that need a cluster are ignored in a plain `cargo test` and run
//! with `--ignored` when `NFSX_CEPH_CONF` names a cluster's `ceph.conf`
//! (`scripts/ceph.sh start` prints it); those of `heads` need `NFSX_HEADS`
//! instead (`scripts/heads.sh start 2`). `scripts/test.sh` runs them all
//! when a cluster could start. Asked for without one, a test fails: it must
//! not pass without running.

#[path = "../support/mod.rs"]
mod support;

mod backend;
mod delegations;
mod failures;
mod heads;
mod pnfs;
mod sharing;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs3::*;
use support::rpc::{self, RpcClient};

use support::bench::*;
use support::*;
use vfs::{Owner, SetAttrs, Vfs};
use vfs_ceph::{CephFs, CephSettings};

const MIN: Duration = Duration::from_secs(60);

/// A fresh directory in the Ceph file system, anyone may write in: the
/// cluster's `ceph.conf` and the directory's path.
fn ceph_dir(tag: &str) -> (String, String) {
    let Some(conf) = std::env::var_os("NFSX_CEPH_CONF") else {
        panic!("NFSX_CEPH_CONF is not set: this test needs a Ceph cluster (scripts/ceph.sh start prints it)");
    };
    let conf = conf.to_string_lossy().into_owned();
    let settings = CephSettings { conf: Some(conf.clone().into()), ..CephSettings::default() };
    let fs = CephFs::open(&settings, "/").expect("mount CephFS");
    let name = format!("nfsx-e2e-{tag}-{}", std::process::id());
    let set = SetAttrs { mode: Some(0o777), ..SetAttrs::default() };
    fs.mkdir(fs.root(), name.as_bytes(), &set, Owner { uid: 0, gid: 0 }).expect("mkdir in CephFS");
    (conf, format!("/{name}"))
}

fn ceph_server(conf: &str, path: &str) -> TestServer {
    ceph_server_with(conf, path, "")
}

/// A head with its metrics endpoint, and the endpoint's port.
fn ceph_server_with_metrics(conf: &str, path: &str) -> (TestServer, u16) {
    let mport = free_port();
    let extra =
        format!("metrics = \"127.0.0.1:{mport}\"\n[ceph]\nconf = \"{conf}\"\nshare_gate_path = \"{path}.gate\"\n");
    let srv = TestServer::start(ServerOpts {
        backend: "ceph",
        extra_config: &extra,
        export_path: Some(path),
        ..Default::default()
    });
    (srv, mport)
}

/// The value of the first series on the metrics endpoint at `port` whose
/// line starts with `prefix` (a name, with `{` when it has labels).
fn metric(port: u16, prefix: &str) -> u64 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    std::io::Write::write_all(&mut s, b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut m = String::new();
    std::io::Read::read_to_string(&mut s, &mut m).unwrap();
    m.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no {prefix} on the metrics endpoint"))
}

/// A head with more `[ceph]` settings. The heads of one test directory
/// share a share-denial gate of their own, beside it, so that one test's
/// denials do not change how another's heads start.
fn ceph_server_with(conf: &str, path: &str, more: &str) -> TestServer {
    let extra = format!("[ceph]\nconf = \"{conf}\"\nshare_gate_path = \"{path}.gate\"\n{more}\n");
    TestServer::start(ServerOpts {
        backend: "ceph",
        extra_config: &extra,
        export_path: Some(path),
        ..Default::default()
    })
}

/// `NFSX_HEADS` (`nfs://HEAD1,HEAD2,.../export`, as `scripts/heads.sh`
/// prints it): the URL, its hosts and the export.
fn heads_from_env() -> (String, Vec<String>, String) {
    let Some(heads) = std::env::var_os("NFSX_HEADS") else {
        panic!("NFSX_HEADS is not set: this test needs nfsx heads over a Ceph cluster (scripts/heads.sh start 2)");
    };
    let heads = heads.to_string_lossy().into_owned();
    let rest = heads.strip_prefix("nfs://").expect("NFSX_HEADS is nfs://HEAD1,HEAD2,.../export");
    let (hosts, export) = rest.split_at(rest.find('/').expect("an export path"));
    let hosts: Vec<String> = hosts.split(',').map(str::to_string).collect();
    assert!(hosts.len() >= 2, "NFSX_HEADS names one head");
    (heads.clone(), hosts, export.to_string())
}

fn create_args(dir: &nfs_fh3, name: &str) -> CREATE3args {
    CREATE3args { r#where: dirop(dir, name), how: createhow3::UNCHECKED(rpc::sattr_mode_644()) }
}

fn dirop(dir: &nfs_fh3, name: &str) -> diropargs3 {
    diropargs3 { dir: dir.clone(), name: Bytes::from(name.to_string()) }
}

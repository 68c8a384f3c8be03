//! One head over CephFS: files and namespace through libnfs and nfsx's
//! client, changes made elsewhere in the file system, a restart.

use super::*;

#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn files_in_and_out_with_libnfs() {
    let (conf, path) = ceph_dir("cp");
    let srv = ceph_server(&conf, &path);
    let tmp = tempfile::tempdir().unwrap();
    let (src, back) = (tmp.path().join("src.bin"), tmp.path().join("back.bin"));
    random_file(&src, 64 << 20, 7);
    ok(&run("nfs-cp", &[src.to_str().unwrap(), &srv.url("/big.bin")], 5 * MIN), "nfs-cp in");
    ok(&run("nfs-cp", &[&srv.url("/big.bin"), back.to_str().unwrap()], 5 * MIN), "nfs-cp out");
    assert_eq!(sha256_file(&back), sha256_file(&src), "file read back differs");
}

/// CephFS purges a removed file only once no client references it: a head
/// that read the file lets its inode go once idle (`inode_idle_secs`), so
/// a file removed elsewhere gives its space back.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn a_file_removed_elsewhere_is_purged_after_a_head_read_it() {
    let (conf, path) = ceph_dir("purge");
    let srv = ceph_server_with(&conf, &path, "inode_idle_secs = 1");
    let tmp = tempfile::tempdir().unwrap();
    let (src, back) = (tmp.path().join("src.bin"), tmp.path().join("back.bin"));
    random_file(&src, 8 << 20, 5);
    ok(&run("nfs-cp", &[src.to_str().unwrap(), &srv.url("/gone.bin")], MIN), "nfs-cp in");
    ok(&run("nfs-cp", &[&srv.url("/gone.bin"), back.to_str().unwrap()], MIN), "nfs-cp out");
    let settings = CephSettings { conf: Some(conf.clone().into()), ..CephSettings::default() };
    let fs = CephFs::open(&settings, &path).expect("mount CephFS");
    let (ino, _) = fs.lookup(fs.root(), b"gone.bin").expect("lookup");
    fs.remove(fs.root(), b"gone.bin").expect("remove");
    drop(fs);
    // The file's data objects are named INODE.INDEX (hex) in the data pool.
    let prefix = format!("{ino:x}.");
    let objects = || {
        let out = std::process::Command::new("rados")
            .args(["-c", &conf, "-p", "cephfs_data", "ls"])
            .output()
            .expect("rados ls");
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with(&prefix)).count()
    };
    let removed = Instant::now();
    while objects() > 0 {
        assert!(removed.elapsed() < Duration::from_secs(30), "the removed file's objects are still there");
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!("purged {:?} after the removal", removed.elapsed());
}

#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn namespace_operations_with_libnfs() {
    let (conf, path) = ceph_dir("ns");
    let srv = ceph_server(&conf, &path);
    namespace_round(&srv.url(""), "hello-ceph");
}

/// A head keeps whole directory listings and answers them again while the
/// directory is unchanged (`dir_cache_entries`); a name created or removed
/// through another head, or through itself, shows in its next listing.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn kept_listings_see_changes_made_through_another_head() {
    let (conf, path) = ceph_dir("listings");
    let (one, two) = (ceph_server(&conf, &path), ceph_server(&conf, &path));
    let (mut c1, mut c2) = (RpcClient::connect(one.port).unwrap(), RpcClient::connect(two.port).unwrap());
    let (root1, root2) = (c1.mount(&path), c2.mount(&path));
    let create = |c: &mut RpcClient, root: &nfs_fh3, name: &str| match c.nfs(NFS3_CREATE, &create_args(root, name)) {
        CREATE3res::NFS3_OK(_) => {}
        other => panic!("CREATE {name}: {other:?}"),
    };
    let names = |c: &mut RpcClient, root: &nfs_fh3| -> Vec<String> {
        let args =
            READDIRPLUS3args { dir: root.clone(), cookie: 0, cookieverf: [0; 8], dircount: 4096, maxcount: 65536 };
        let READDIRPLUS3res::NFS3_OK(ok) = c.nfs(NFS3_READDIRPLUS, &args) else { panic!("READDIRPLUS") };
        assert!(ok.reply.eof);
        let mut v = Vec::new();
        for x in ok.reply.entries.into_iter().filter(|x| &x.name[..] != b"." && &x.name[..] != b"..") {
            assert!(x.name_attributes.is_some(), "every entry with attributes");
            v.push(String::from_utf8_lossy(&x.name).into_owned());
        }
        v.sort();
        v
    };
    create(&mut c1, &root1, "a");
    assert_eq!(names(&mut c1, &root1), ["a"]);
    assert_eq!(names(&mut c1, &root1), ["a"], "served again");
    create(&mut c2, &root2, "b");
    assert_eq!(names(&mut c1, &root1), ["a", "b"], "a name made through another head");
    create(&mut c1, &root1, "c");
    assert_eq!(names(&mut c1, &root1), ["a", "b", "c"], "a name made through this head");
    let rm = REMOVE3args { object: diropargs3 { dir: root2.clone(), name: Bytes::from_static(b"a") } };
    let REMOVE3res::NFS3_OK(_) = c2.nfs(NFS3_REMOVE, &rm) else { panic!("REMOVE") };
    assert_eq!(names(&mut c1, &root1), ["b", "c"], "a name removed through another head");
}

/// nfsx's own client over NFSv4.2 and NFSv3: data and metadata workloads
/// checked by `nfsx bench` itself, and file handles kept across a restart
/// of the head (a new libcephfs client resolves the same inode numbers).
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn nfsx_client_workloads_and_a_restart() {
    let (conf, path) = ceph_dir("bench");
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

/// A head stopped with SIGTERM unmounts its export and its share-denial
/// gate before it exits, ending both Ceph sessions: a session left open
/// keeps its capabilities until the MDS times it out, and other heads of
/// the same directories wait that long.
#[test]
#[ignore = "needs a Ceph cluster (scripts/ceph.sh start)"]
fn a_stopped_head_ends_its_ceph_sessions() {
    let (conf, path) = ceph_dir("stop");
    let mut srv = ceph_server(&conf, &path);
    let status = srv.sigterm();
    assert!(status.success(), "nfsx exited with {status}:\n{}", srv.log_text());
    let log = srv.log_text();
    let after_stop = log.split_once("nfsx stopped").map_or("", |(_, rest)| rest);
    assert_eq!(after_stop.matches("CephFS unmounted").count(), 2, "export and gate not both unmounted:\n{log}");
}

//! Data acknowledged as stable survives `kill -9` of the server, and file
//! handles issued before the kill still work after the restart.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs3::*;
use support::rpc::RpcClient;
use support::*;

const CHUNK: usize = 64 << 10;

fn chunk(i: u64) -> Vec<u8> {
    (0..CHUNK).map(|j| (i as usize * 31 + j * 7 + (j >> 9)) as u8).collect()
}

fn create(c: &mut RpcClient, dir: &nfs_fh3, name: &str) -> nfs_fh3 {
    let args = CREATE3args {
        r#where: diropargs3 { dir: dir.clone(), name: Bytes::from(name.to_string()) },
        how: createhow3::UNCHECKED(support::rpc::sattr_mode_644()),
    };
    match c.nfs::<_, CREATE3res>(NFS3_CREATE, &args) {
        CREATE3res::NFS3_OK(ok) => ok.obj.expect("CREATE returned no handle"),
        other => panic!("CREATE failed: {other:?}"),
    }
}

fn write(
    c: &mut RpcClient,
    fh: &nfs_fh3,
    offset: u64,
    data: Vec<u8>,
    stable: stable_how,
) -> Result<WRITE3resok, String> {
    let args = WRITE3args { file: fh.clone(), offset, count: data.len() as u32, stable, data: Bytes::from(data) };
    match c.call::<_, WRITE3res>(NFS_PROGRAM, NFS_V3, NFS3_WRITE, &args) {
        Ok(WRITE3res::NFS3_OK(ok)) => Ok(ok),
        Ok(other) => Err(format!("{other:?}")),
        Err(e) => Err(format!("{e:?}")),
    }
}

fn commit(c: &mut RpcClient, fh: &nfs_fh3) -> Result<COMMIT3resok, String> {
    let args = COMMIT3args { file: fh.clone(), offset: 0, count: 0 };
    match c.call::<_, COMMIT3res>(NFS_PROGRAM, NFS_V3, NFS3_COMMIT, &args) {
        Ok(COMMIT3res::NFS3_OK(ok)) => Ok(ok),
        Ok(other) => Err(format!("{other:?}")),
        Err(e) => Err(format!("{e:?}")),
    }
}

#[test]
fn stable_data_survives_kill_9_and_handles_stay_valid() {
    let mut srv = TestServer::start(ServerOpts::default());
    let export = srv.export.display().to_string();
    let mut c = RpcClient::connect(srv.port).unwrap();
    let root = c.mount(&export);
    let fh = create(&mut c, &root, "stream.bin");

    // Offsets whose data the server acknowledged as stable.
    let acked: Arc<Mutex<Vec<u64>>> = Arc::default();
    let verf_before: Arc<Mutex<Option<[u8; 8]>>> = Arc::default();
    let writer = {
        let (acked, verf_before, fh) = (acked.clone(), verf_before.clone(), fh.clone());
        std::thread::spawn(move || {
            let mut unstable = Vec::new();
            for i in 0u64.. {
                let off = i * CHUNK as u64;
                if i % 4 == 3 {
                    // Unstable, then COMMIT: stable only once COMMIT answers.
                    if write(&mut c, &fh, off, chunk(i), stable_how::UNSTABLE).is_err() {
                        return;
                    }
                    unstable.push(off);
                    match commit(&mut c, &fh) {
                        Ok(ok) => {
                            *verf_before.lock().unwrap() = Some(ok.verf);
                            acked.lock().unwrap().append(&mut unstable);
                        }
                        Err(_) => return,
                    }
                } else {
                    match write(&mut c, &fh, off, chunk(i), stable_how::FILE_SYNC) {
                        Ok(ok) => {
                            assert_eq!(ok.committed, stable_how::FILE_SYNC);
                            assert_eq!(ok.count as usize, CHUNK);
                            acked.lock().unwrap().push(off);
                        }
                        Err(_) => return,
                    }
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    srv.kill9();
    writer.join().unwrap();
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 8, "too few writes acknowledged before the kill: {}", acked.len());

    srv.restart();
    // Every acknowledged byte is in the file on the host.
    let on_disk = std::fs::read(srv.export.join("stream.bin")).unwrap();
    for &off in &acked {
        let i = off / CHUNK as u64;
        let end = off as usize + CHUNK;
        assert!(on_disk.len() >= end, "acknowledged chunk {i} missing (file is {} bytes)", on_disk.len());
        assert!(on_disk[off as usize..end] == chunk(i)[..], "acknowledged chunk {i} corrupted");
    }

    // The handles issued before the kill still work.
    let mut c = RpcClient::connect(srv.port).unwrap();
    match c.nfs::<_, GETATTR3res>(NFS3_GETATTR, &GETATTR3args { object: fh.clone() }) {
        GETATTR3res::NFS3_OK(ok) => assert!(ok.obj_attributes.size >= CHUNK as u64),
        other => panic!("old handle rejected after restart: {other:?}"),
    }
    let off = acked[acked.len() / 2];
    let res: READ3res = c.nfs(NFS3_READ, &READ3args { file: fh.clone(), offset: off, count: CHUNK as u32 });
    match res {
        READ3res::NFS3_OK(ok) => assert!(ok.data[..] == chunk(off / CHUNK as u64)[..]),
        other => panic!("READ with old handle failed: {other:?}"),
    }
    let res: LOOKUP3res = c.nfs(
        NFS3_LOOKUP,
        &LOOKUP3args { what: diropargs3 { dir: root.clone(), name: Bytes::from_static(b"stream.bin") } },
    );
    match res {
        LOOKUP3res::NFS3_OK(ok) => assert_eq!(ok.object, fh, "handles are not deterministic across restarts"),
        other => panic!("LOOKUP with old root handle failed: {other:?}"),
    }

    // A new server instance has a new write verifier, so clients resend
    // unstable data it may have lost.
    let before = *verf_before.lock().unwrap();
    if let Some(before) = before {
        let after = write(&mut c, &fh, 0, chunk(0), stable_how::UNSTABLE).unwrap().verf;
        assert_ne!(before, after, "write verifier did not change across a restart");
    }
}

fn try_create(c: &mut RpcClient, dir: &nfs_fh3, name: &str) -> Result<nfs_fh3, String> {
    let args = CREATE3args {
        r#where: diropargs3 { dir: dir.clone(), name: Bytes::from(name.to_string()) },
        how: createhow3::UNCHECKED(support::rpc::sattr_mode_644()),
    };
    match c.call::<_, CREATE3res>(NFS_PROGRAM, NFS_V3, NFS3_CREATE, &args) {
        Ok(CREATE3res::NFS3_OK(ok)) => ok.obj.ok_or_else(|| "no handle".to_string()),
        Ok(other) => Err(format!("{other:?}")),
        Err(e) => Err(format!("{e:?}")),
    }
}

/// The same guarantee while group commit is batching: several stable
/// writers share each flush of one file and several creators share each
/// flush of one directory and of the id journal, and the server is killed
/// while batches are in flight. Everything acknowledged before the kill is
/// there after it, and the handles of acknowledged creations resolve.
/// (A kill leaves the page cache alone, so this checks that no reply goes
/// out before the batch's work was done; that the reply also waits for the
/// batch's flush to *return* is checked on an event log in
/// `vfs::localfs::flush`.)
#[test]
fn group_commit_members_survive_kill_9() {
    const WRITERS: u64 = 4;
    const CREATORS: u64 = 4;
    let mut srv = TestServer::start(ServerOpts::default());
    let export = srv.export.display().to_string();
    let mut c = RpcClient::connect(srv.port).unwrap();
    let root = c.mount(&export);
    let fh = create(&mut c, &root, "shared.bin");
    let written: Arc<Mutex<Vec<u64>>> = Arc::default();
    let created: Arc<Mutex<Vec<(String, nfs_fh3)>>> = Arc::default();
    let mut threads = Vec::new();
    for t in 0..WRITERS {
        let (written, fh, port) = (written.clone(), fh.clone(), srv.port);
        threads.push(std::thread::spawn(move || {
            let mut c = RpcClient::connect(port).unwrap();
            for i in (t..).step_by(WRITERS as usize) {
                match write(&mut c, &fh, i * CHUNK as u64, chunk(i), stable_how::FILE_SYNC) {
                    Ok(ok) if ok.committed == stable_how::FILE_SYNC => written.lock().unwrap().push(i),
                    _ => return,
                }
            }
        }));
    }
    for t in 0..CREATORS {
        let (created, root, port) = (created.clone(), root.clone(), srv.port);
        threads.push(std::thread::spawn(move || {
            let mut c = RpcClient::connect(port).unwrap();
            for i in 0.. {
                let name = format!("c-{t}-{i}");
                match try_create(&mut c, &root, &name) {
                    Ok(fh) => created.lock().unwrap().push((name, fh)),
                    Err(_) => return,
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    srv.kill9();
    for t in threads {
        t.join().unwrap();
    }
    let (written, created) = (written.lock().unwrap().clone(), created.lock().unwrap().clone());
    assert!(written.len() >= 2 * WRITERS as usize, "too few stable writes before the kill: {}", written.len());
    assert!(created.len() >= 2 * CREATORS as usize, "too few creations before the kill: {}", created.len());

    srv.restart();
    let on_disk = std::fs::read(srv.export.join("shared.bin")).unwrap();
    for &i in &written {
        let off = (i * CHUNK as u64) as usize;
        assert!(
            on_disk.len() >= off + CHUNK && on_disk[off..off + CHUNK] == chunk(i)[..],
            "acknowledged chunk {i} lost"
        );
    }
    let mut c = RpcClient::connect(srv.port).unwrap();
    for (name, fh) in &created {
        assert!(srv.export.join(name).exists(), "acknowledged creation {name} lost");
        match c.nfs::<_, GETATTR3res>(NFS3_GETATTR, &GETATTR3args { object: fh.clone() }) {
            GETATTR3res::NFS3_OK(_) => {}
            other => panic!("handle of {name} rejected after restart: {other:?}"),
        }
    }
}

#[test]
fn forged_and_foreign_handles_are_refused() {
    let srv = TestServer::start(ServerOpts::default());
    let mut c = RpcClient::connect(srv.port).unwrap();
    let root = c.mount(&srv.export.display().to_string());
    for i in 0..root.data.len() {
        let mut forged = root.data.to_vec();
        forged[i] ^= 0x01;
        let res: GETATTR3res = c.nfs(NFS3_GETATTR, &GETATTR3args { object: nfs_fh3 { data: Bytes::from(forged) } });
        match res {
            GETATTR3res::default(st) => {
                assert!(matches!(st, nfsstat3::NFS3ERR_BADHANDLE | nfsstat3::NFS3ERR_STALE), "byte {i}: {st:?}")
            }
            GETATTR3res::NFS3_OK(_) => panic!("forged handle (byte {i} flipped) accepted"),
        }
    }
    // A handle signed by another server's key is refused too.
    let other = TestServer::start(ServerOpts::default());
    let mut c2 = RpcClient::connect(other.port).unwrap();
    let res: GETATTR3res = c2.nfs(NFS3_GETATTR, &GETATTR3args { object: root.clone() });
    assert!(matches!(res, GETATTR3res::default(_)), "foreign handle accepted: {res:?}");
}

fn dirop(dir: &nfs_fh3, name: &str) -> diropargs3 {
    diropargs3 { dir: dir.clone(), name: Bytes::from(name.to_string()) }
}

/// A machine crash can take the id journal's tail: namespace changes wait
/// for their own flushes but not for the journal's (`sync_id_journal`
/// off). Simulated here by a kill -9 and then cutting the journal back to
/// what it held before the changes. The handles of the directory made,
/// the files created in it and a file renamed into it all work after the
/// restart (found by the one walk of the export), and LOOKUP gives the
/// same handles again.
#[test]
fn handles_survive_losing_the_id_journal_tail() {
    let mut srv = TestServer::start(ServerOpts::default());
    let export = srv.export.display().to_string();
    let mut c = RpcClient::connect(srv.port).unwrap();
    let root = c.mount(&export);
    let journal = std::fs::read_dir(srv.state.join("exports"))
        .unwrap()
        .map(|e| e.unwrap().path().join("ids.journal"))
        .find(|p| p.exists())
        .expect("no id journal in the state directory");
    let synced = std::fs::metadata(&journal).unwrap().len();

    let args = MKDIR3args { r#where: dirop(&root, "made"), attributes: support::rpc::sattr_mode_644() };
    let dir = match c.nfs::<_, MKDIR3res>(NFS3_MKDIR, &args) {
        MKDIR3res::NFS3_OK(ok) => ok.obj.expect("MKDIR returned no handle"),
        other => panic!("MKDIR failed: {other:?}"),
    };
    let mut handles = vec![("made".to_string(), dir.clone())];
    for i in 0..10 {
        let name = format!("f{i}");
        handles.push((format!("made/{name}"), create(&mut c, &dir, &name)));
    }
    let moved = create(&mut c, &root, "moved");
    let res: RENAME3res = c.nfs(NFS3_RENAME, &RENAME3args { from: dirop(&root, "moved"), to: dirop(&dir, "here") });
    assert!(matches!(res, RENAME3res::NFS3_OK(_)), "RENAME failed: {res:?}");
    handles.push(("made/here".to_string(), moved));
    srv.kill9();
    let f = std::fs::OpenOptions::new().write(true).open(&journal).unwrap();
    assert!(f.metadata().unwrap().len() > synced, "the changes were not journalled");
    f.set_len(synced).unwrap();
    f.sync_all().unwrap();
    drop(f);

    srv.restart();
    let mut c = RpcClient::connect(srv.port).unwrap();
    for (path, fh) in &handles {
        match c.nfs::<_, GETATTR3res>(NFS3_GETATTR, &GETATTR3args { object: fh.clone() }) {
            GETATTR3res::NFS3_OK(_) => {}
            other => panic!("handle of {path} rejected after losing the journal's tail: {other:?}"),
        }
    }
    let res: LOOKUP3res = c.nfs(NFS3_LOOKUP, &LOOKUP3args { what: dirop(&dir, "here") });
    match res {
        LOOKUP3res::NFS3_OK(ok) => assert_eq!(ok.object, handles.last().unwrap().1),
        other => panic!("LOOKUP in the found directory failed: {other:?}"),
    }
}

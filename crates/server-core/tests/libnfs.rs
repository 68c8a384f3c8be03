//! Interoperability with a real client: Debian's libnfs utilities
//! (nfs-cp, nfs-ls, nfs-cat) copy a file in and out of a MemFs export
//! served by `Core` behind a minimal blocking TCP loop written here (the
//! real transport lives in crates/server). Skipped when the tools are
//! not installed.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use bytes::Bytes;
use common::*;
use server_core::{Core, CoreSettings, Export, PeerInfo, ServicePorts};

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--help").output().is_ok()
}

fn serve_conn(core: Arc<Core>, mut s: TcpStream) {
    let peer = PeerInfo { addr: s.peer_addr().unwrap(), local: s.local_addr().unwrap(), hostname: None };
    let mut record = Vec::new();
    loop {
        let mut hdr = [0u8; 4];
        if s.read_exact(&mut hdr).is_err() {
            return;
        }
        let h = u32::from_be_bytes(hdr);
        let mut frag = vec![0u8; (h & 0x7fff_ffff) as usize];
        if s.read_exact(&mut frag).is_err() {
            return;
        }
        record.extend_from_slice(&frag);
        if h & 0x8000_0000 == 0 {
            continue;
        }
        let out = core.handle(Bytes::from(std::mem::take(&mut record)), &peer);
        if let Some(segs) = out.reply {
            let len: usize = segs.iter().map(|b| b.len()).sum();
            let mut buf = Vec::with_capacity(len + 4);
            buf.extend_from_slice(&(len as u32 | 0x8000_0000).to_be_bytes());
            for seg in segs {
                buf.extend_from_slice(&seg);
            }
            if s.write_all(&buf).is_err() {
                return;
            }
        }
    }
}

fn start() -> (u16, Arc<Core>, Arc<vfs::MemFs>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let rules = server_core::exports::parse_exports("/export *(rw,insecure,no_root_squash)\n").unwrap().entries.remove(0).rules;
    // Small transfer sizes so that a modest file takes many READs/WRITEs.
    let settings = CoreSettings { rtmax: 65536, rtpref: 65536, wtmax: 65536, wtpref: 65536, ..Default::default() };
    let mem = memfs();
    let fs: Arc<dyn vfs::Vfs> = mem.clone();
    let core = Arc::new(Core::new(
        settings,
        vec![Export { id: 1, path: "/export".into(), fs, rules }],
        SECRET,
        VERF,
        ServicePorts { tcp: port, udp: None },
    ));
    let c = core.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let c = c.clone();
            std::thread::spawn(move || serve_conn(c, s));
        }
    });
    (port, core, mem)
}

fn run(cmd: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn libnfs_copy_in_list_cat_copy_out() {
    if !(have("nfs-cp") && have("nfs-ls") && have("nfs-cat")) {
        eprintln!("libnfs utilities not installed; skipping");
        return;
    }
    let (port, _core, mem) = start();
    let q = format!("?version=3&nfsport={port}&mountport={port}");
    let url = |p: &str| format!("nfs://127.0.0.1/export{p}{q}");
    let tmp = std::env::temp_dir().join(format!("nfsx-core-libnfs-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let src = tmp.join("src.bin");
    let data: Vec<u8> = (0..1_000_003u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&src, &data).unwrap();

    run("nfs-cp", &[src.to_str().unwrap(), &url("/copied.bin")]);
    let ls = run("nfs-ls", &[&url("")]);
    let listing = String::from_utf8_lossy(&ls.stdout);
    assert!(listing.contains("copied.bin"), "{listing}");
    let cat = run("nfs-cat", &[&url("/copied.bin")]);
    assert_eq!(cat.stdout.len(), data.len());
    assert!(cat.stdout == data, "nfs-cat returned different bytes");
    let back = tmp.join("back.bin");
    run("nfs-cp", &[&url("/copied.bin"), back.to_str().unwrap()]);
    assert!(std::fs::read(&back).unwrap() == data, "copied-out file differs");
    let _ = std::fs::remove_dir_all(Path::new(&tmp));

    // A directory of 3,000 entries takes many READDIRPLUS pages.
    let (big, _) = vfs::Vfs::mkdir(&*mem, vfs::Vfs::root(&*mem), b"big", &Default::default(), vfs::Owner { uid: 0, gid: 0 }).unwrap();
    for i in 0..3000 {
        let how = vfs::CreateHow::Guarded(Default::default());
        vfs::Vfs::create(&*mem, big, format!("f{i:04}").as_bytes(), &how, vfs::Owner { uid: 0, gid: 0 }).unwrap();
    }
    let ls = run("nfs-ls", &[&url("/big")]);
    let listing = String::from_utf8_lossy(&ls.stdout);
    let names: std::collections::HashSet<&str> =
        listing.lines().filter_map(|l| l.split_whitespace().last()).filter(|n| n.starts_with('f')).collect();
    assert_eq!(names.len(), 3000, "{}", &listing[..listing.len().min(500)]);
}

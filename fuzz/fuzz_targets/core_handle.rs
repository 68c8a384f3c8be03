//! The whole server dispatch on an in-memory export: any record gets a
//! reply or none, never a panic.
//!
//! Random bytes rarely get past the RPC header, so half the inputs are
//! instead mutations of valid calls that carry a real root handle (taken
//! from a MOUNT at start-up): those reach the NFSv3 operations themselves.
#![no_main]
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use proto::mount3;
use proto::nfs3::*;
use proto::rpc::*;
use server_core::exports::{ClientMatcher, ClientRule, ExportOptions};
use server_core::{Core, CoreSettings, Export, ServicePorts};
use xdr::{Decode, Decoder};
#[path = "core_common.rs"]
mod core_common;
use core_common::{call, peer, record};

struct State {
    core: Core,
    templates: Vec<Vec<u8>>,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        let options = ExportOptions { read_only: false, root_squash: false, secure: false, ..ExportOptions::default() };
        let export = Export {
            id: 1,
            path: "/fuzz".into(),
            fs: Arc::new(vfs::MemFs::new()),
            rules: vec![ClientRule::new(ClientMatcher::Everyone, options)],
        };
        let core =
            Core::new(CoreSettings::default(), vec![export], [7; 32], [1; 8], ServicePorts { tcp: 2049, udp: None });
        let mnt = call(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, mount3::MOUNT3_MNT, &Bytes::from_static(b"/fuzz"));
        let reply = core.handle(Bytes::from(mnt), &peer()).reply.expect("MNT reply");
        let mut d = Decoder::new(reply.concat().into());
        rpc_msg::decode(&mut d).expect("reply header");
        let root = match mount3::mountres3::decode(&mut d).expect("mountres3") {
            mount3::mountres3::MNT3_OK(ok) => nfs_fh3 { data: ok.fhandle },
            other => panic!("MNT failed: {other:?}"),
        };
        let name = |n: &'static [u8]| diropargs3 { dir: root.clone(), name: Bytes::from_static(n) };
        let sattr = sattr3 { mode: Some(0o644), ..Default::default() };
        // A file and a directory to act on.
        for t in [
            call(
                NFS_PROGRAM,
                NFS_V3,
                NFS3_CREATE,
                &CREATE3args { r#where: name(b"f"), how: createhow3::UNCHECKED(sattr.clone()) },
            ),
            call(NFS_PROGRAM, NFS_V3, NFS3_MKDIR, &MKDIR3args { r#where: name(b"d"), attributes: sattr.clone() }),
        ] {
            core.handle(Bytes::from(t), &peer());
        }
        let templates = vec![
            call(NFS_PROGRAM, NFS_V3, NFS3_GETATTR, &GETATTR3args { object: root.clone() }),
            call(
                NFS_PROGRAM,
                NFS_V3,
                NFS3_SETATTR,
                &SETATTR3args { object: root.clone(), new_attributes: sattr.clone(), guard: None },
            ),
            call(NFS_PROGRAM, NFS_V3, NFS3_LOOKUP, &LOOKUP3args { what: name(b"f") }),
            call(NFS_PROGRAM, NFS_V3, NFS3_ACCESS, &ACCESS3args { object: root.clone(), access: 0x3f }),
            call(NFS_PROGRAM, NFS_V3, NFS3_READ, &READ3args { file: root.clone(), offset: 0, count: 4096 }),
            call(
                NFS_PROGRAM,
                NFS_V3,
                NFS3_WRITE,
                &WRITE3args {
                    file: root.clone(),
                    offset: 0,
                    count: 4,
                    stable: stable_how::FILE_SYNC,
                    data: Bytes::from_static(b"abcd"),
                },
            ),
            call(
                NFS_PROGRAM,
                NFS_V3,
                NFS3_CREATE,
                &CREATE3args { r#where: name(b"g"), how: createhow3::EXCLUSIVE([3; 8]) },
            ),
            call(NFS_PROGRAM, NFS_V3, NFS3_MKDIR, &MKDIR3args { r#where: name(b"e"), attributes: sattr.clone() }),
            call(
                NFS_PROGRAM,
                NFS_V3,
                NFS3_SYMLINK,
                &SYMLINK3args {
                    r#where: name(b"s"),
                    symlink: symlinkdata3 { symlink_attributes: sattr.clone(), symlink_data: Bytes::from_static(b"f") },
                },
            ),
            call(NFS_PROGRAM, NFS_V3, NFS3_REMOVE, &REMOVE3args { object: name(b"f") }),
            call(NFS_PROGRAM, NFS_V3, NFS3_RMDIR, &RMDIR3args { object: name(b"d") }),
            call(NFS_PROGRAM, NFS_V3, NFS3_RENAME, &RENAME3args { from: name(b"f"), to: name(b"h") }),
            call(NFS_PROGRAM, NFS_V3, NFS3_LINK, &LINK3args { file: root.clone(), link: name(b"l") }),
            call(
                NFS_PROGRAM,
                NFS_V3,
                NFS3_READDIR,
                &READDIR3args { dir: root.clone(), cookie: 0, cookieverf: [0; 8], count: 4096 },
            ),
            call(
                NFS_PROGRAM,
                NFS_V3,
                NFS3_READDIRPLUS,
                &READDIRPLUS3args { dir: root.clone(), cookie: 0, cookieverf: [0; 8], dircount: 1024, maxcount: 8192 },
            ),
            call(NFS_PROGRAM, NFS_V3, NFS3_FSSTAT, &FSSTAT3args { fsroot: root.clone() }),
            call(NFS_PROGRAM, NFS_V3, NFS3_COMMIT, &COMMIT3args { file: root.clone(), offset: 0, count: 0 }),
            call(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, mount3::MOUNT3_MNT, &Bytes::from_static(b"/fuzz/d")),
        ];
        State { core, templates }
    })
}

fuzz_target!(|data: &[u8]| {
    let st = state();
    let Some(record) = record(&st.templates, data) else { return };
    // Where the transport would run it: peeks that must never panic either.
    let record = st.core.parse(Bytes::from(record));
    let _ = st.core.placement(&record, data.first().is_some_and(|b| b & 1 == 1));
    let _ = st.core.may_run_in_place(&record);
    let _ = st.core.waits_for_the_file_system_only(&record);
    let _ = st.core.serial_key(&record);
    let _ = st.core.handle_record(&record, &peer());
});

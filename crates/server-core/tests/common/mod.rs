//! Whole-request / whole-reply harness: builds RPC call records with the
//! generated types, runs them through `Core::handle` over MemFs exports,
//! and decodes the replies.
#![allow(dead_code)]

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use proto::nfs3::*;
use proto::rpc::*;
use server_core::exports::parse_exports;
use server_core::{Core, CoreSettings, Export, Outcome, PeerInfo, ServicePorts};
use vfs::memfs::MemFsSettings;
use vfs::{MemFs, Vfs};
use xdr::{Decode, Decoder, Encode, Encoder};

pub mod outbound;
pub mod v4;

pub const SECRET: [u8; 32] = [7; 32];
pub const VERF: [u8; 8] = *b"bootverf";
pub const NFS: u32 = NFS_PROGRAM;
pub const MOUNT: u32 = proto::mount3::MOUNT_PROGRAM;
pub const PMAP: u32 = proto::portmap::PMAP_PROGRAM;

#[derive(Debug, Clone)]
pub enum Cred {
    None,
    Sys(u32, u32, Vec<u32>),
    Raw(u32, Bytes),
}

pub fn user() -> Cred {
    Cred::Sys(1000, 1000, vec![1000])
}

pub fn root() -> Cred {
    Cred::Sys(0, 0, vec![0])
}

pub fn peer(addr: &str) -> PeerInfo {
    PeerInfo {
        addr: addr.parse().unwrap(),
        local: "127.0.0.1:2049".parse().unwrap(),
        hostname: None,
        conn: 0,
        tls: Default::default(),
    }
}

pub struct Env {
    pub core: Core,
    pub peer: PeerInfo,
    pub fs: Vec<Arc<MemFs>>,
    xid: std::sync::atomic::AtomicU32,
}

/// A MemFs whose root belongs to uid/gid 1000 (the test user).
pub fn memfs() -> Arc<MemFs> {
    Arc::new(MemFs::with_settings(MemFsSettings { root_owner: (1000, 1000), ..MemFsSettings::default() }))
}

/// An Env with the exports of `exports_text` (export ids 1, 2, ...), each
/// on its own MemFs, seen from 127.0.0.1:700.
pub fn env(exports_text: &str) -> Env {
    env_with(exports_text, CoreSettings::default())
}

/// An Env whose exports (ids 1, 2, ...) are served from `backends`, one
/// per exports line, in order.
pub fn env_on(exports_text: &str, backends: Vec<Arc<dyn vfs::Vfs>>) -> Env {
    env_on_with(exports_text, backends, CoreSettings::default())
}

pub fn env_on_with(exports_text: &str, backends: Vec<Arc<dyn vfs::Vfs>>, settings: CoreSettings) -> Env {
    let parsed = parse_exports(exports_text).unwrap();
    let exports = parsed
        .entries
        .into_iter()
        .zip(backends)
        .enumerate()
        .map(|(i, (e, fs))| Export { id: i as u32 + 1, path: e.path, fs, rules: e.rules })
        .collect();
    let core = Core::new(settings, exports, SECRET, VERF, ServicePorts { tcp: 2049, udp: None });
    Env { core, peer: peer("127.0.0.1:700"), fs: Vec::new(), xid: 1.into() }
}

pub fn env_with(exports_text: &str, settings: CoreSettings) -> Env {
    let parsed = parse_exports(exports_text).unwrap();
    let mut exports = Vec::new();
    let mut fss = Vec::new();
    for (i, e) in parsed.entries.into_iter().enumerate() {
        let fs = memfs();
        fss.push(fs.clone());
        exports.push(Export { id: i as u32 + 1, path: e.path, fs, rules: e.rules });
    }
    let core = Core::new(settings, exports, SECRET, VERF, ServicePorts { tcp: 2049, udp: None });
    Env { core, peer: peer("127.0.0.1:700"), fs: fss, xid: 1.into() }
}

/// A LocalFs export over a fresh directory the test user owns.
pub fn localfs(dir: &tempfile::TempDir) -> Arc<dyn Vfs> {
    let export = dir.path().join("export");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&export).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    if std::os::unix::fs::chown(&export, Some(1000), Some(1000)).is_err() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&export, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    Arc::new(vfs::LocalFs::open(&export, &state, vfs::LocalFsSettings::default()).unwrap())
}

/// The default: one read-write export /export for everyone, no root squash
/// off, insecure ports allowed.
pub fn rw_env() -> Env {
    env("/export *(rw,insecure)\n")
}

pub fn opaque_auth_of(c: &Cred) -> opaque_auth {
    match c {
        Cred::None => opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() },
        Cred::Sys(uid, gid, gids) => {
            let p = authsys_parms {
                stamp: 1,
                machinename: Bytes::from_static(b"testhost"),
                uid: *uid,
                gid: *gid,
                gids: gids.clone(),
            };
            opaque_auth { flavor: auth_flavor::AUTH_SYS, body: xdr::to_bytes(&p) }
        }
        Cred::Raw(..) => unreachable!("raw credentials are encoded by hand"),
    }
}

pub fn call_record(xid: u32, prog: u32, vers: u32, proc_: u32, cred: &Cred, args: &[u8]) -> Bytes {
    let mut e = Encoder::new();
    match cred {
        Cred::Raw(flavor, body) => {
            for v in [xid, 0, 2, prog, vers, proc_, *flavor] {
                e.u32(v);
            }
            e.opaque_var(body);
            e.u32(0);
            e.u32(0);
        }
        c => {
            let msg = rpc_msg {
                xid,
                body: rpc_msg_body::CALL(call_body {
                    rpcvers: 2,
                    prog,
                    vers,
                    proc: proc_,
                    cred: opaque_auth_of(c),
                    verf: opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() },
                }),
            };
            msg.encode(&mut e);
        }
    }
    let mut b = BytesMut::from(&e.into_bytes()[..]);
    b.extend_from_slice(args);
    b.freeze()
}

pub fn join(segs: &[Bytes]) -> Bytes {
    let mut b = BytesMut::new();
    for s in segs {
        b.extend_from_slice(s);
    }
    b.freeze()
}

/// A decoded reply: its header and the bytes after it.
pub struct Reply {
    pub xid: u32,
    pub body: reply_body,
    pub rest: Bytes,
    pub outcome: Outcome,
}

impl Reply {
    pub fn accept_stat(&self) -> Option<accept_stat> {
        match &self.body {
            reply_body::MSG_ACCEPTED(a) => Some(a.reply_data.discriminant()),
            _ => None,
        }
    }

    /// Decodes the procedure results, which must fill the rest exactly.
    pub fn result<R: Decode>(&self) -> R {
        assert_eq!(self.accept_stat(), Some(accept_stat::SUCCESS), "call not accepted: {:?}", self.body);
        xdr::from_bytes(self.rest.clone()).expect("result decodes and fills the reply")
    }

    pub fn result_with<R>(&self, f: impl FnOnce(&mut Decoder) -> xdr::Result<R>) -> R {
        assert_eq!(self.accept_stat(), Some(accept_stat::SUCCESS), "call not accepted: {:?}", self.body);
        let mut d = Decoder::new(self.rest.clone());
        let r = f(&mut d).expect("result decodes");
        assert_eq!(d.remaining(), 0, "trailing bytes after result");
        r
    }
}

pub fn parse_reply(outcome: Outcome) -> Reply {
    let segs = outcome.reply.clone().expect("a reply");
    let mut d = Decoder::new(join(&segs));
    let msg = rpc_msg::decode(&mut d).expect("reply header decodes");
    let rpc_msg_body::REPLY(body) = msg.body else { panic!("not a reply") };
    Reply { xid: msg.xid, body, rest: d.rest(), outcome }
}

impl Env {
    pub fn next_xid(&self) -> u32 {
        self.xid.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    pub fn raw(&self, record: Bytes) -> Outcome {
        self.core.handle(record, &self.peer)
    }

    pub fn call_as(&self, prog: u32, vers: u32, proc_: u32, cred: &Cred, args: &[u8]) -> Reply {
        let xid = self.next_xid();
        let out = self.raw(call_record(xid, prog, vers, proc_, cred, args));
        let r = parse_reply(out);
        assert_eq!(r.xid, xid);
        r
    }

    pub fn call<A: Encode>(&self, prog: u32, vers: u32, proc_: u32, args: &A) -> Reply {
        self.call_as(prog, vers, proc_, &user(), &xdr::to_bytes(args))
    }

    /// An NFSv3 call as the test user, decoded to `R`.
    pub fn nfs<A: Encode, R: Decode>(&self, proc_: u32, args: &A) -> R {
        self.nfs_as(&user(), proc_, args)
    }

    pub fn nfs_as<A: Encode, R: Decode>(&self, cred: &Cred, proc_: u32, args: &A) -> R {
        self.call_as(NFS, 3, proc_, cred, &xdr::to_bytes(args)).result()
    }

    /// MNT of `path`; panics unless it succeeds.
    pub fn mount(&self, path: &str) -> nfs_fh3 {
        match self.mnt(path) {
            proto::mount3::mountres3::MNT3_OK(ok) => nfs_fh3 { data: ok.fhandle },
            other => panic!("MNT {path} failed: {other:?}"),
        }
    }

    pub fn mnt(&self, path: &str) -> proto::mount3::mountres3 {
        let args = Bytes::copy_from_slice(path.as_bytes());
        self.call(MOUNT, 3, proto::mount3::MOUNT3_MNT, &args).result()
    }

    pub fn root(&self) -> nfs_fh3 {
        self.mount("/export")
    }

    pub fn lookup(&self, dir: &nfs_fh3, name: &str) -> Result<(nfs_fh3, fattr3), nfsstat3> {
        let args = LOOKUP3args { what: diropargs3 { dir: dir.clone(), name: name_of(name) } };
        match self.nfs::<_, LOOKUP3res>(NFS3_LOOKUP, &args) {
            LOOKUP3res::NFS3_OK(ok) => Ok((ok.object, ok.obj_attributes.expect("attrs"))),
            LOOKUP3res::default(s, _) => Err(s),
        }
    }

    pub fn getattr(&self, fh: &nfs_fh3) -> Result<fattr3, nfsstat3> {
        match self.nfs::<_, GETATTR3res>(NFS3_GETATTR, &GETATTR3args { object: fh.clone() }) {
            GETATTR3res::NFS3_OK(ok) => Ok(ok.obj_attributes),
            GETATTR3res::default(s) => Err(s),
        }
    }

    pub fn create_file(&self, dir: &nfs_fh3, name: &str) -> nfs_fh3 {
        let args = CREATE3args {
            r#where: diropargs3 { dir: dir.clone(), name: name_of(name) },
            how: createhow3::GUARDED(sattr3 { mode: Some(0o644), ..sattr3::default() }),
        };
        match self.nfs::<_, CREATE3res>(NFS3_CREATE, &args) {
            CREATE3res::NFS3_OK(ok) => ok.obj.expect("handle"),
            other => panic!("CREATE {name} failed: {other:?}"),
        }
    }

    pub fn mkdir(&self, dir: &nfs_fh3, name: &str) -> nfs_fh3 {
        let args = MKDIR3args {
            r#where: diropargs3 { dir: dir.clone(), name: name_of(name) },
            attributes: sattr3 { mode: Some(0o755), ..sattr3::default() },
        };
        match self.nfs::<_, MKDIR3res>(NFS3_MKDIR, &args) {
            MKDIR3res::NFS3_OK(ok) => ok.obj.expect("handle"),
            other => panic!("MKDIR {name} failed: {other:?}"),
        }
    }

    pub fn write(&self, fh: &nfs_fh3, offset: u64, data: &[u8], stable: stable_how) -> WRITE3res {
        let args = WRITE3args {
            file: fh.clone(),
            offset,
            count: data.len() as u32,
            stable,
            data: Bytes::copy_from_slice(data),
        };
        self.nfs(NFS3_WRITE, &args)
    }

    pub fn read(&self, fh: &nfs_fh3, offset: u64, count: u32) -> READ3res {
        self.nfs(NFS3_READ, &READ3args { file: fh.clone(), offset, count })
    }
}

pub fn name_of(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The status of any NFSv3 result union.
pub fn status_of<T: Encode>(r: &T) -> nfsstat3 {
    let b = xdr::to_bytes(r);
    let v = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    nfsstat3::try_from(v).unwrap()
}

pub fn vfs_root(fs: &MemFs) -> u64 {
    fs.root()
}

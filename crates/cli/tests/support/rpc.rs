//! A minimal blocking ONC RPC client over TCP built on the generated
//! protocol types, for tests that need exact control of what is sent
//! (stability levels, retransmissions, malformed messages).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use proto::rpc::*;
use proto::{mount3, nfs3};
use xdr::{Decode, Decoder, Encode, Encoder};

pub struct RpcClient {
    pub stream: TcpStream,
    xid: u32,
}

#[derive(Debug)]
pub enum RpcError {
    Io(std::io::Error),
    Rejected(String),
    Decode(xdr::XdrError),
}

impl From<std::io::Error> for RpcError {
    fn from(e: std::io::Error) -> Self {
        RpcError::Io(e)
    }
}

pub fn auth_sys(uid: u32, gid: u32) -> opaque_auth {
    let parms = authsys_parms { stamp: 1, machinename: Bytes::from_static(b"test"), uid, gid, gids: vec![gid] };
    opaque_auth { flavor: auth_flavor::AUTH_SYS, body: xdr::to_bytes(&parms) }
}

pub fn auth_none() -> opaque_auth {
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }
}

/// Attributes of a new file: mode 0644, nothing else set.
pub fn sattr_mode_644() -> nfs3::sattr3 {
    nfs3::sattr3 {
        mode: Some(0o644),
        uid: None,
        gid: None,
        size: None,
        atime: nfs3::set_atime::default(nfs3::time_how::DONT_CHANGE),
        mtime: nfs3::set_mtime::default(nfs3::time_how::DONT_CHANGE),
    }
}

/// The bytes of a CALL message (without record marking).
pub fn call_bytes<A: Encode>(xid: u32, prog: u32, vers: u32, proc_: u32, cred: opaque_auth, args: &A) -> Bytes {
    let msg = rpc_msg {
        xid,
        body: rpc_msg_body::CALL(call_body { rpcvers: 2, prog, vers, proc: proc_, cred, verf: auth_none() }),
    };
    let mut e = Encoder::new();
    msg.encode(&mut e);
    args.encode(&mut e);
    e.into_bytes()
}

impl RpcClient {
    pub fn connect(port: u16) -> std::io::Result<RpcClient> {
        Self::connect_addr(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
    }

    pub fn connect_addr(addr: std::net::SocketAddr) -> std::io::Result<RpcClient> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream.set_nodelay(true)?;
        Ok(RpcClient { stream, xid: 1 })
    }

    /// Sends one record (one last fragment).
    pub fn send_record(&mut self, body: &[u8]) -> std::io::Result<()> {
        let hdr = (body.len() as u32 | 0x8000_0000).to_be_bytes();
        let mut msg = Vec::with_capacity(4 + body.len());
        msg.extend_from_slice(&hdr);
        msg.extend_from_slice(body);
        self.stream.write_all(&msg)
    }

    pub fn recv_record(&mut self) -> std::io::Result<Bytes> {
        let mut out = Vec::new();
        loop {
            let mut hdr = [0u8; 4];
            self.stream.read_exact(&mut hdr)?;
            let word = u32::from_be_bytes(hdr);
            let len = (word & 0x7fff_ffff) as usize;
            let start = out.len();
            out.resize(start + len, 0);
            self.stream.read_exact(&mut out[start..])?;
            if word & 0x8000_0000 != 0 {
                return Ok(Bytes::from(out));
            }
        }
    }

    /// Calls and returns the decoded results, or the rejection.
    pub fn call<A: Encode, R: Decode>(&mut self, prog: u32, vers: u32, proc_: u32, args: &A) -> Result<R, RpcError> {
        self.call_as(prog, vers, proc_, auth_sys(0, 0), args)
    }

    pub fn call_as<A: Encode, R: Decode>(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        cred: opaque_auth,
        args: &A,
    ) -> Result<R, RpcError> {
        self.xid = self.xid.wrapping_add(1);
        let xid = self.xid;
        self.send_record(&call_bytes(xid, prog, vers, proc_, cred, args))?;
        loop {
            let rec = self.recv_record()?;
            let mut d = Decoder::new(rec);
            let msg = rpc_msg::decode(&mut d).map_err(RpcError::Decode)?;
            if msg.xid != xid {
                continue;
            }
            match msg.body {
                rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(accepted_reply {
                    reply_data: reply_data::SUCCESS,
                    ..
                })) => return R::decode(&mut d).map_err(RpcError::Decode),
                other => return Err(RpcError::Rejected(format!("{other:?}"))),
            }
        }
    }

    /// MOUNT v3 MNT: the root handle of `path`.
    pub fn mount(&mut self, path: &str) -> nfs3::nfs_fh3 {
        let res: mount3::mountres3 = self
            .call(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, mount3::MOUNT3_MNT, &Bytes::from(path.to_string()))
            .expect("MNT");
        match res {
            mount3::mountres3::MNT3_OK(ok) => nfs3::nfs_fh3 { data: ok.fhandle },
            other => panic!("MNT {path} failed: {other:?}"),
        }
    }

    pub fn nfs<A: Encode, R: Decode>(&mut self, proc_: u32, args: &A) -> R {
        self.call(nfs3::NFS_PROGRAM, nfs3::NFS_V3, proc_, args).expect("NFS call")
    }
}

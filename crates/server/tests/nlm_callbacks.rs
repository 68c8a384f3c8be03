//! NLM's calls back to clients through the real transport: a blocked
//! LOCK is granted when the holder unlocks, and the waiting client's lock
//! manager, registered with the server's own portmapper (a client on the
//! server's host), receives NLM_GRANTED.

use std::time::Duration;

use bytes::Bytes;
use proto::framer::{frame_segments, RecordDecoder};
use proto::nlm::*;
use proto::portmap::{pmap2_mapping, PMAP2_SET, PMAP_PROGRAM};
use proto::rpc::{auth_flavor, authsys_parms, call_body, opaque_auth, reply_body, reply_data, rpc_msg, rpc_msg_body};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use xdr::{Decode, Decoder, Encode, Encoder};

async fn read_record(s: &mut TcpStream, dec: &mut RecordDecoder) -> Bytes {
    let mut buf = vec![0u8; 4096];
    loop {
        if let Some(r) = dec.next_record().unwrap() {
            return r;
        }
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed");
        dec.push(&buf[..n]);
    }
}

async fn write_record(s: &mut TcpStream, record: Vec<Bytes>) {
    for seg in frame_segments(record) {
        s.write_all(&seg).await.unwrap();
    }
}

/// One RPC over `s` as root; the results.
async fn call(s: &mut TcpStream, xid: u32, prog: u32, vers: u32, proc_: u32, args: &impl Encode) -> Bytes {
    let cred = authsys_parms { stamp: 1, machinename: Bytes::from_static(b"t"), uid: 0, gid: 0, gids: vec![] };
    let msg = rpc_msg {
        xid,
        body: rpc_msg_body::CALL(call_body {
            rpcvers: 2,
            prog,
            vers,
            proc: proc_,
            cred: opaque_auth { flavor: auth_flavor::AUTH_SYS, body: xdr::to_bytes(&cred) },
            verf: opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() },
        }),
    };
    let mut e = Encoder::new();
    msg.encode(&mut e);
    args.encode(&mut e);
    write_record(s, e.into_segments()).await;
    let mut dec = RecordDecoder::new(1 << 20);
    let r = read_record(s, &mut dec).await;
    let mut d = Decoder::new(r);
    let reply = rpc_msg::decode(&mut d).unwrap();
    assert_eq!(reply.xid, xid);
    let rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(a)) = reply.body else { panic!("refused") };
    assert!(matches!(a.reply_data, reply_data::SUCCESS));
    d.rest()
}

fn alock(host: &str, fh: &Bytes, svid: u32) -> nlm4_lock {
    nlm4_lock {
        caller_name: Bytes::copy_from_slice(host.as_bytes()),
        fh: fh.clone(),
        oh: Bytes::copy_from_slice(host.as_bytes()),
        svid,
        l_offset: 0,
        l_len: 0,
    }
}

fn lockargs(cookie: &'static [u8], l: nlm4_lock, block: bool) -> nlm4_lockargs {
    nlm4_lockargs { cookie: Bytes::from_static(cookie), block, exclusive: true, alock: l, reclaim: false, state: 1 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_lock_is_granted_through_a_callback() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut settings =
        server::Settings { listen: "127.0.0.1:0".parse().unwrap(), portmap_port: Some(0), ..Default::default() };
    settings.state_dir = Some(state.path().to_path_buf());
    let cfg = server::ServeConfig {
        dir: Some(dir.path().to_path_buf()),
        backend: server::Backend::Local,
        exports_file: None,
        settings,
    };
    let srv = server::Server::start(cfg).await.unwrap();

    // The client's lock manager: answers GRANTED with `granted`.
    let lockd = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let lockd_port = lockd.local_addr().unwrap().port();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (mut s, _) = lockd.accept().await.unwrap();
        let mut dec = RecordDecoder::new(1 << 20);
        let r = read_record(&mut s, &mut dec).await;
        let mut d = Decoder::new(r);
        let msg = rpc_msg::decode(&mut d).unwrap();
        let rpc_msg_body::CALL(body) = msg.body else { panic!("not a call") };
        let args = nlm4_testargs::decode(&mut d).unwrap();
        let mut e = Encoder::new();
        for v in [msg.xid, 1, 0, 0, 0, 0] {
            e.u32(v);
        }
        nlm4_res { cookie: args.cookie.clone(), stat: nlm4_stat { stat: nlm4_stats::nlm4_granted } }.encode(&mut e);
        write_record(&mut s, e.into_segments()).await;
        let _ = tx.send((body.prog, body.vers, body.proc, args));
    });

    let mut c = TcpStream::connect(srv.local_addr).await.unwrap();
    let set = pmap2_mapping { prog: NLM_PROG, vers: 4, prot: 6, port: lockd_port.into() };
    let r = call(&mut c, 1, PMAP_PROGRAM, 2, PMAP2_SET, &set).await;
    assert_eq!(u32::decode(&mut Decoder::new(r)).unwrap(), 1, "SET from this host");
    let path = Bytes::copy_from_slice(dir.path().to_str().unwrap().as_bytes());
    let r = call(&mut c, 2, proto::mount3::MOUNT_PROGRAM, 3, proto::mount3::MOUNT3_MNT, &path).await;
    let proto::mount3::mountres3::MNT3_OK(m) = proto::mount3::mountres3::decode(&mut Decoder::new(r)).unwrap() else {
        panic!("MNT failed")
    };
    let fh = m.fhandle;
    let lock = |r: Bytes| nlm4_res::decode(&mut Decoder::new(r)).unwrap().stat.stat;
    let r = call(&mut c, 3, NLM_PROG, 4, NLM_LOCK, &lockargs(b"a", alock("a", &fh, 1), false)).await;
    assert_eq!(lock(r), nlm4_stats::nlm4_granted);
    let r = call(&mut c, 4, NLM_PROG, 4, NLM_LOCK, &lockargs(b"b", alock("b", &fh, 2), true)).await;
    assert_eq!(lock(r), nlm4_stats::nlm4_blocked);
    let unlock = nlm4_unlockargs { cookie: Bytes::new(), alock: alock("a", &fh, 1) };
    let r = call(&mut c, 5, NLM_PROG, 4, NLM_UNLOCK, &unlock).await;
    assert_eq!(lock(r), nlm4_stats::nlm4_granted);

    let (prog, vers, proc_, args) = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap();
    assert_eq!((prog, vers, proc_), (NLM_PROG, 4, NLM_GRANTED));
    assert_eq!((&args.cookie[..], args.alock.svid, &args.alock.caller_name[..]), (&b"b"[..], 2, &b"b"[..]));
    // The acknowledgement reaches the core.
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while srv.shared.core.nlm_grants() != (1, 0, 0) {
        assert!(std::time::Instant::now() < give_up, "grant not acknowledged: {:?}", srv.shared.core.nlm_grants());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = srv.shutdown().await;
}

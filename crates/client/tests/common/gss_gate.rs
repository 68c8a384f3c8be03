//! A gate that puts RPCSEC_GSS in front of the scripted NFSv4.1 fake
//! (`fake41`), which speaks AUTH_NONE only: it sets up contexts with the
//! client (a stand-in mechanism, [`Initiator`]), checks and opens its
//! calls and seals the fake's replies, and does what a server does with
//! the contexts the client lends for callbacks (RFC 8881 section
//! 2.10.8.2): the fake's callbacks go to the client under the context lent
//! last, with the client's handle, and their answers are checked before
//! the fake sees them. It also answers what the fake does not know
//! (BACKCHANNEL_CTL), can refuse a context the way a server that lost it
//! does, or one whose lifetime ended, set SEQUENCE status flags, and send
//! the client calls of its own.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::transport::{ConnParams, GssParams};
use client::ClientSettings;
use parking_lot::Mutex;
use proto::framer::{record_header, RecordDecoder};
use proto::nfs4::*;
use proto::rpc::*;
use proto::rpcsec_gss::{rpc_gss_init_res, rpc_gss_proc_t};
use rpcsec::callee::{self, Callee};
use rpcsec::testing::{FakeContext, FakeInitiator};
use rpcsec::{GssClient, SecContext, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Notify};
use xdr::{Decode, Decoder, Encode, Encoder};

const NFS4_PROGRAM: u32 = 100003;
const WINDOW: u32 = 16;

/// What the gate saw and did, for the test to look at.
#[derive(Default)]
pub struct Seen {
    /// csa_sec_parms of each CREATE_SESSION, in order.
    pub create_sessions: Vec<Vec<callback_sec_parms4>>,
    /// bca_sec_parms of each BACKCHANNEL_CTL.
    pub backchannel_ctls: Vec<Vec<callback_sec_parms4>>,
    /// Context set-ups, by the handle given.
    pub contexts: Vec<Bytes>,
    /// When each of them was set up.
    pub set_up_at: Vec<Instant>,
    /// Calls refused because their context's lifetime had ended.
    pub expired: u32,
    /// Replies sealed under a context older than the newest: to calls
    /// made under it before the client set up the next.
    pub replies_under_older: u32,
    /// Callback answers checked under the lent context.
    pub callbacks_verified: u32,
    /// Callback answers that were not.
    pub callback_failures: Vec<String>,
}

struct Fore {
    key: u64,
    callee: Callee,
    born: Instant,
}

/// A callback under a lent context: its answer is checked with it.
struct Lent {
    client: GssClient,
    service: Service,
}

struct Out {
    /// The call's context and sequence number, to seal the reply with.
    handle: Bytes,
    seq: u32,
    /// BACKCHANNEL_CTL was taken out of the call: its result goes in.
    backchannel_ctl: bool,
}

#[derive(Default)]
struct St {
    seen: Seen,
    fore: HashMap<Bytes, Fore>,
    refused: HashSet<Bytes>,
    out: HashMap<u32, Out>,
    /// The context the fake's callbacks go under.
    lent: Option<Lent>,
    callbacks: HashMap<u32, (u32, Service)>,
    seq_flags: u32,
    noent_on_gss: bool,
    /// Contexts are refused this long after their set-up.
    lifetime: Option<Duration>,
    to_client: Option<mpsc::UnboundedSender<Vec<u8>>>,
    injected: HashMap<u32, oneshot::Sender<(reply_body, Bytes)>>,
}

pub struct Gate {
    pub addr: SocketAddr,
    service: Service,
    st: Mutex<St>,
    changed: Notify,
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut v = record_header(body.len(), true).to_vec();
    v.extend_from_slice(body);
    v
}

fn reply(xid: u32, body: reply_body, rest: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new();
    rpc_msg { xid, body: rpc_msg_body::REPLY(body) }.encode(&mut e);
    let mut v = e.into_bytes().to_vec();
    v.extend_from_slice(rest);
    framed(&v)
}

fn none() -> opaque_auth {
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }
}

fn denied(xid: u32, why: auth_stat) -> Vec<u8> {
    reply(xid, reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(why)), &[])
}

fn gss_handles(parms: &[callback_sec_parms4]) -> Option<gss_cb_handles4> {
    parms.iter().find_map(|p| match p {
        callback_sec_parms4::RPCSEC_GSS(h) => Some(h.clone()),
        _ => None,
    })
}

fn service_of(s: rpc_gss_svc_t) -> Service {
    match s {
        rpc_gss_svc_t::RPC_GSS_SVC_NONE => Service::None,
        rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY => Service::Integrity,
        rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY => Service::Privacy,
    }
}

impl Gate {
    /// Listens on 127.0.0.1; each connection goes on to `fake`. The
    /// client's calls must come under `service`.
    pub async fn start(fake: SocketAddr, service: Service) -> Arc<Gate> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let gate = Arc::new(Gate {
            addr: listener.local_addr().expect("address"),
            service,
            st: Mutex::default(),
            changed: Notify::new(),
        });
        let g = gate.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(fake).await else { return };
                tokio::spawn(g.clone().relay(client, server));
            }
        });
        gate
    }

    pub fn with<R>(&self, f: impl FnOnce(&Seen) -> R) -> R {
        f(&self.st.lock().seen)
    }

    /// Waits until `cond` holds of what the gate saw, for at most 10 s.
    pub async fn until(&self, what: &str, cond: impl Fn(&Seen) -> bool) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if cond(&self.st.lock().seen) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait).await.unwrap_or_else(|_| panic!("no {what} in 10 s"));
    }

    /// SEQUENCE replies carry these status flags from now on.
    pub fn set_seq_flags(&self, flags: u32) {
        self.st.lock().seq_flags = flags;
    }

    /// CREATE_SESSION with an RPCSEC_GSS offer is refused (NFS4ERR_NOENT).
    pub fn refuse_gss_callbacks(&self) {
        self.st.lock().noent_on_gss = true;
    }

    /// The server forgets every context set up so far: calls under them
    /// get RPCSEC_GSS_CREDPROBLEM.
    pub fn forget_contexts(&self) {
        let mut st = self.st.lock();
        let all: Vec<Bytes> = st.fore.keys().cloned().collect();
        st.refused.extend(all);
    }

    /// Calls under a context set up `lifetime` ago or longer get
    /// RPCSEC_GSS_CTXPROBLEM, as from a server that holds it to its
    /// ticket's end.
    pub fn set_lifetime(&self, lifetime: Duration) {
        self.st.lock().lifetime = Some(lifetime);
    }

    /// What a client needs to connect through the gate under `service`,
    /// with contexts of `lifetime` renewed `renew_before` their end.
    pub fn params(
        &self,
        service: Service,
        s: &ClientSettings,
        lifetime: Duration,
        renew_before: Duration,
    ) -> ConnParams {
        ConnParams {
            addr: self.addr,
            rpc: s.rpc.clone(),
            cred: client_core::rpc::auth_sys("gss-test", 0, 0, &[0]),
            connect_timeout: Duration::from_secs(2),
            reconnect_timeout: Duration::from_secs(2),
            reconnect_max_pause: Duration::from_millis(100),
            max_record: s.max_record,
            read_buffer: s.read_buffer,
            copy_replies_below: s.copy_replies_below,
            reply_lowat_min: s.reply_lowat_min,
            reply_lowat_max: s.reply_lowat_max,
            tls: None,
            reply_poll: Duration::ZERO,
            gss: Some(GssParams {
                initiator: Arc::new(FakeInitiator { principal: "alice@TEST".into(), key: AtomicU64::new(1), lifetime }),
                target: "nfs@127.0.0.1".into(),
                service,
                renew_before,
            }),
        }
    }

    /// The handle the callbacks go under now, and its service.
    pub fn lent_handle(&self) -> Option<Bytes> {
        self.st.lock().lent.as_ref().map(|l| l.client.handle().clone())
    }

    /// Sends the client a call of the gate's own (the record without its
    /// mark) and returns its answer, or None if none came within `wait`.
    pub async fn call(&self, xid: u32, record: Vec<u8>, wait: Duration) -> Option<(reply_body, Bytes)> {
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.st.lock();
            st.injected.insert(xid, tx);
            st.to_client.as_ref().expect("a client connection").send(framed(&record)).expect("connection open");
        }
        tokio::time::timeout(wait, rx).await.ok().and_then(Result::ok)
    }

    /// A callback under the context lent last, with the next sequence
    /// number, or `seq` when given; and that number.
    pub fn lent_call(&self, xid: u32, proc_: u32, args: &[u8], seq: Option<u32>) -> (Vec<u8>, u32) {
        let mut st = self.st.lock();
        let lent = st.lent.as_mut().expect("a context lent");
        let seq = seq.unwrap_or_else(|| lent.client.next_seq().expect("a sequence number"));
        let rec = lent.client.call(xid, 0x4000_0000, 1, proc_, lent.service, seq, args, false).expect("sealed");
        (rec.concat(), seq)
    }

    /// Checks an answer to [`Gate::lent_call`]'s call `seq`.
    pub fn check_lent_reply(&self, seq: u32, verf: &opaque_auth, body: Bytes) -> Result<Bytes, String> {
        let mut st = self.st.lock();
        let lent = st.lent.as_mut().expect("a context lent");
        lent.client.reply(lent.service, seq, verf, body).map_err(|e| e.to_string())
    }

    async fn relay(self: Arc<Self>, client: TcpStream, server: TcpStream) {
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (mut crd, mut cwr) = client.into_split();
        let (mut srd, mut swr) = server.into_split();
        let (to_client, mut client_q) = mpsc::unbounded_channel::<Vec<u8>>();
        let (to_server, mut server_q) = mpsc::unbounded_channel::<Vec<u8>>();
        self.st.lock().to_client = Some(to_client.clone());
        tokio::spawn(async move {
            while let Some(r) = client_q.recv().await {
                if cwr.write_all(&r).await.is_err() {
                    return;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(r) = server_q.recv().await {
                if swr.write_all(&r).await.is_err() {
                    return;
                }
            }
        });
        let me = self.clone();
        let (tc, ts) = (to_client.clone(), to_server.clone());
        tokio::spawn(async move {
            let mut framer = RecordDecoder::new(16 << 20);
            while matches!(srd.read_buf(framer.buffer_mut()).await, Ok(n) if n > 0) {
                while let Ok(Some(rec)) = framer.next_record() {
                    me.from_server(rec, &tc, &ts);
                }
            }
        });
        let mut framer = RecordDecoder::new(16 << 20);
        while matches!(crd.read_buf(framer.buffer_mut()).await, Ok(n) if n > 0) {
            while let Ok(Some(rec)) = framer.next_record() {
                self.from_client(rec, &to_client, &to_server);
            }
            self.changed.notify_waiters();
        }
    }

    fn from_client(
        &self,
        rec: Bytes,
        to_client: &mpsc::UnboundedSender<Vec<u8>>,
        to_server: &mpsc::UnboundedSender<Vec<u8>>,
    ) {
        let mut d = Decoder::new(rec.clone());
        let msg = rpc_msg::decode(&mut d).expect("the client's record decodes");
        let xid = msg.xid;
        let mut guard = self.st.lock();
        let st = &mut *guard;
        let call = match msg.body {
            rpc_msg_body::REPLY(body) => {
                let rest = d.rest();
                if let Some(w) = st.injected.remove(&xid) {
                    let _ = w.send((body, rest));
                } else if let Some((seq, service)) = st.callbacks.remove(&xid) {
                    let checked = match (&body, st.lent.as_mut()) {
                        (reply_body::MSG_ACCEPTED(a), Some(l)) if a.reply_data == reply_data::SUCCESS => {
                            l.client.reply(service, seq, &a.verf, rest).map_err(|e| e.to_string())
                        }
                        _ => Err(format!("{body:?}")),
                    };
                    match checked {
                        Ok(results) => {
                            st.seen.callbacks_verified += 1;
                            let ok = reply_body::MSG_ACCEPTED(accepted_reply {
                                verf: none(),
                                reply_data: reply_data::SUCCESS,
                            });
                            let _ = to_server.send(reply(xid, ok, &results));
                        }
                        Err(e) => st.seen.callback_failures.push(e),
                    }
                } else {
                    let _ = to_server.send(framed(&rec));
                }
                return;
            }
            rpc_msg_body::CALL(call) => call,
        };
        if call.cred.flavor != auth_flavor::RPCSEC_GSS {
            let _ = to_server.send(framed(&rec));
            return;
        }
        let cred = callee::credential(call.cred.body.clone()).expect("an RPCSEC_GSS credential");
        let header = rec.slice(..32 + call.cred.body.len().div_ceil(4) * 4);
        if cred.gss_proc != rpc_gss_proc_t::RPCSEC_GSS_DATA as u32 {
            // Context creation: the token is the key.
            let token = Bytes::decode(&mut d).expect("a token");
            let text = std::str::from_utf8(&token).expect("a stand-in token");
            let key: u64 = text.rsplit('\0').next().and_then(|k| k.parse().ok()).expect("a stand-in token's key");
            let handle = Bytes::from(format!("ctx-{key}"));
            let mut ctx = FakeContext::pair(key).0;
            let verf = opaque_auth {
                flavor: auth_flavor::RPCSEC_GSS,
                body: Bytes::from(ctx.get_mic(&WINDOW.to_be_bytes()).expect("a checksum")),
            };
            let callee = Callee::new(handle.clone(), self.service, Box::new(FakeContext::pair(key).0), WINDOW);
            st.fore.insert(handle.clone(), Fore { key, callee, born: Instant::now() });
            st.seen.contexts.push(handle.clone());
            st.seen.set_up_at.push(Instant::now());
            let res = rpc_gss_init_res {
                handle,
                gss_major: rpcsec::major::GSS_S_COMPLETE,
                gss_minor: 0,
                seq_window: WINDOW,
                gss_token: Bytes::from_static(b"ok"),
            };
            let ok = reply_body::MSG_ACCEPTED(accepted_reply { verf, reply_data: reply_data::SUCCESS });
            let _ = to_client.send(reply(xid, ok, &xdr::to_bytes(&res)));
            return;
        }
        if st.refused.contains(&cred.handle) || !st.fore.contains_key(&cred.handle) {
            let _ = to_client.send(denied(xid, auth_stat::RPCSEC_GSS_CREDPROBLEM));
            return;
        }
        let Some(fore) = st.fore.get_mut(&cred.handle) else { return };
        if st.lifetime.is_some_and(|l| fore.born.elapsed() >= l) {
            st.seen.expired += 1;
            let _ = to_client.send(denied(xid, auth_stat::RPCSEC_GSS_CTXPROBLEM));
            return;
        }
        let admitted = match fore.callee.admit(&header, &cred, &call.verf, d.rest()) {
            Ok(a) => a,
            Err(e) => panic!("the gate refused the client's call: {e:?}"),
        };
        let mut args = admitted.args;
        let mut out = Out { handle: cred.handle.clone(), seq: admitted.seq, backchannel_ctl: false };
        if call.prog == NFS4_PROGRAM && call.proc == 1 {
            let mut c = COMPOUND4args::decode(&mut Decoder::new(args.clone())).expect("a COMPOUND");
            let mut noent = false;
            for op in &c.argarray {
                let parms = match op {
                    nfs_argop4::OP_CREATE_SESSION(a) => {
                        st.seen.create_sessions.push(a.csa_sec_parms.clone());
                        &a.csa_sec_parms
                    }
                    nfs_argop4::OP_BACKCHANNEL_CTL(a) => {
                        st.seen.backchannel_ctls.push(a.bca_sec_parms.clone());
                        out.backchannel_ctl = true;
                        &a.bca_sec_parms
                    }
                    _ => continue,
                };
                let Some(h) = gss_handles(parms) else { continue };
                match st.fore.get(&h.gcbp_handle_from_server) {
                    Some(f) if !st.noent_on_gss => {
                        let client =
                            GssClient::new(h.gcbp_handle_from_client, Box::new(FakeContext::pair(f.key).0), WINDOW);
                        st.lent = Some(Lent { client, service: service_of(h.gcbp_service) });
                    }
                    _ => noent = true,
                }
            }
            if noent {
                let res = COMPOUND4res {
                    status: nfsstat4::NFS4ERR_NOENT,
                    tag: Bytes::new(),
                    resarray: vec![nfs_resop4::OP_CREATE_SESSION(CREATE_SESSION4res::default(nfsstat4::NFS4ERR_NOENT))],
                };
                let sealed = self.seal(st, &out, xdr::to_bytes(&res));
                let _ = to_client.send(reply(xid, sealed.0, &sealed.1));
                return;
            }
            if out.backchannel_ctl {
                c.argarray.retain(|op| !matches!(op, nfs_argop4::OP_BACKCHANNEL_CTL(_)));
                args = xdr::to_bytes(&c);
            }
        }
        st.out.insert(xid, out);
        let plain = call_body { cred: none(), verf: none(), ..call };
        let mut e = Encoder::new();
        rpc_msg { xid, body: rpc_msg_body::CALL(plain) }.encode(&mut e);
        let mut v = e.into_bytes().to_vec();
        v.extend_from_slice(&args);
        let _ = to_server.send(framed(&v));
    }

    /// The accepted reply to `out`'s call with `results`, sealed.
    fn seal(&self, st: &mut St, out: &Out, results: Bytes) -> (reply_body, Bytes) {
        if st.seen.contexts.last() != Some(&out.handle) {
            st.seen.replies_under_older += 1;
        }
        let fore = st.fore.get_mut(&out.handle).expect("the call's context");
        let verf = fore.callee.verifier(out.seq).expect("a verifier");
        let body = fore.callee.seal_results(out.seq, &results).expect("sealed");
        (reply_body::MSG_ACCEPTED(accepted_reply { verf, reply_data: reply_data::SUCCESS }), Bytes::from(body.concat()))
    }

    fn from_server(
        &self,
        rec: Bytes,
        to_client: &mpsc::UnboundedSender<Vec<u8>>,
        to_server: &mpsc::UnboundedSender<Vec<u8>>,
    ) {
        let mut d = Decoder::new(rec.clone());
        let msg = rpc_msg::decode(&mut d).expect("the fake's record decodes");
        let xid = msg.xid;
        let mut st = self.st.lock();
        match msg.body {
            rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(a)) if st.out.contains_key(&xid) => {
                let Some(out) = st.out.remove(&xid) else { return };
                assert_eq!(a.reply_data, reply_data::SUCCESS, "the fake refused a call");
                let mut results = d.rest();
                if let Ok(mut r) = COMPOUND4res::decode(&mut Decoder::new(results.clone())) {
                    if let Some(nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(ok))) = r.resarray.first_mut() {
                        ok.sr_status_flags |= st.seq_flags;
                    }
                    if out.backchannel_ctl && r.status == nfsstat4::NFS4_OK {
                        r.resarray.push(nfs_resop4::OP_BACKCHANNEL_CTL(BACKCHANNEL_CTL4res {
                            bcr_status: nfsstat4::NFS4_OK,
                        }));
                    }
                    results = xdr::to_bytes(&r);
                }
                let (body, rest) = self.seal(&mut st, &out, results);
                let _ = to_client.send(reply(xid, body, &rest));
            }
            rpc_msg_body::CALL(call) => {
                let args = d.rest();
                match st.lent.as_mut() {
                    Some(l) => {
                        let seq = l.client.next_seq().expect("a sequence number");
                        let rec = l.client.call(xid, call.prog, call.vers, call.proc, l.service, seq, &args, false);
                        let service = l.service;
                        st.callbacks.insert(xid, (seq, service));
                        let _ = to_client.send(framed(&rec.expect("sealed").concat()));
                    }
                    None => {
                        let _ = to_client.send(framed(&rec));
                    }
                }
            }
            _ => {
                let _ = to_client.send(framed(&rec));
            }
        }
        let _ = to_server;
        drop(st);
        self.changed.notify_waiters();
    }
}

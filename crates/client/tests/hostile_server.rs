//! A hostile server: a proxy between the client and the nfsx server in
//! process rewrites one reply per case (a record that never completes, no
//! reply, a 1 GiB record marker and a close, flipped bytes, an unknown
//! xid, a duplicate, an NFSv4.1 COMPOUND with fewer results than
//! operations). Each case, over NFSv3 and NFSv4.1, ends in a clean error or
//! a recovery: no panic, no call waiting past the retransmit timeout (plus
//! a margin for a loaded machine), and the next call succeeds.

use std::collections::HashSet;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::{Client, ClientSettings, NfsUrl, ServerAddrs};
use proto::nfs3::{NFS3_LOOKUP, NFS3_MKDIR, NFS_PROGRAM};
use proto::nfs4::{nfs_argop4, nfsstat4, COMPOUND4args, COMPOUND4res};
use proto::rpc::{reply_body, reply_data, rpc_msg, rpc_msg_body};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use xdr::{Decode, Decoder};

mod common;

use common::Srv;

/// The client's retransmit timeout in these tests (`[rpc] timeout_ms`).
const RETRANSMIT: Duration = Duration::from_millis(500);
/// Room for a machine busy with other builds: every step here takes
/// milliseconds when it goes right.
const MARGIN: Duration = Duration::from_millis(2500);
/// No case may take longer than this, whatever the client does.
const CASE_LIMIT: Duration = Duration::from_secs(60);

fn settings() -> ClientSettings {
    let mut s = ClientSettings::default();
    s.rpc.timeout_ms = RETRANSMIT.as_millis() as u64;
    s.rpc.max_timeout_ms = 4 * RETRANSMIT.as_millis() as u64;
    s.rpc.retrans = 2;
    s.connect_timeout_ms = 1000;
    s.reconnect_timeout_ms = 3000;
    s.reconnect_max_pause_ms = 100;
    s
}

#[derive(Debug, Clone, Copy)]
enum Mutation {
    /// A record marker announcing 4 MiB, half the reply, then silence on a
    /// connection kept open.
    Truncated,
    /// No reply at all.
    Swallowed,
    /// A record marker announcing 1 GiB, a few bytes, then a close.
    HugeThenClose,
    /// A few bytes of the reply flipped, chosen by the seed.
    Flipped(u64),
    /// The reply under an xid no call has.
    UnknownXid,
    /// The reply twice.
    Duplicated,
    /// An NFS4_OK COMPOUND reply without its last result.
    FewerResults,
}

#[derive(Default)]
struct Plan {
    armed: Option<(Mutation, Op)>,
    /// Calls of the armed operation seen going to the server.
    targets: HashSet<u32>,
    applied: u32,
}

/// Notes `record` (a call to the server) when it is of the operation the
/// armed mutation is for: an NFSv3 procedure, or an NFSv4 COMPOUND with
/// the operation in it.
fn watch_call(plan: &Mutex<Plan>, record: &[u8]) {
    let mut p = plan.lock().unwrap();
    let Some((_, op)) = p.armed else { return };
    let mut d = Decoder::new(Bytes::copy_from_slice(record));
    let Ok(msg) = rpc_msg::decode(&mut d) else { return };
    let rpc_msg_body::CALL(call) = msg.body else { return };
    let (v3, v4): (u32, fn(&nfs_argop4) -> bool) = match op {
        Op::Mkdir | Op::Mkdirs => (NFS3_MKDIR, |o| matches!(o, nfs_argop4::OP_CREATE(_))),
        Op::Stat => (NFS3_LOOKUP, |o| matches!(o, nfs_argop4::OP_LOOKUP(_))),
    };
    let ours = match (call.prog, call.vers, call.proc) {
        (NFS_PROGRAM, 3, proc_) => proc_ == v3,
        (NFS_PROGRAM, 4, 1) => COMPOUND4args::decode(&mut d).is_ok_and(|a| a.argarray.iter().any(v4)),
        _ => false,
    };
    if ours {
        p.targets.insert(msg.xid);
    }
}

/// Takes the armed mutation if it applies to `record`: a reply to a call
/// of the armed operation, and for `FewerResults` an NFS4_OK COMPOUND
/// with two results or more.
fn take(plan: &Mutex<Plan>, record: &[u8]) -> Option<Mutation> {
    let mut p = plan.lock().unwrap();
    let (m, _) = p.armed?;
    let xid = u32::from_be_bytes(record.get(..4)?.try_into().ok()?);
    if record.get(4..8) != Some(&[0, 0, 0, 1][..]) || !p.targets.contains(&xid) {
        return None;
    }
    if matches!(m, Mutation::FewerResults) && fewer_results(record).is_none() {
        return None;
    }
    p.armed = None;
    p.applied += 1;
    Some(m)
}

/// `record` (an accepted NFSv4 reply) with the COMPOUND's last result
/// left off, its status still NFS4_OK.
fn fewer_results(record: &[u8]) -> Option<Vec<u8>> {
    let all = Bytes::copy_from_slice(record);
    let mut d = Decoder::new(all.clone());
    let msg = rpc_msg::decode(&mut d).ok()?;
    let rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(a)) = msg.body else { return None };
    if !matches!(a.reply_data, reply_data::SUCCESS) {
        return None;
    }
    let rest = d.rest();
    let header = &record[..record.len() - rest.len()];
    let mut res = COMPOUND4res::decode(&mut Decoder::new(rest)).ok()?;
    if res.status != nfsstat4::NFS4_OK || res.resarray.len() < 2 {
        return None;
    }
    res.resarray.pop();
    let mut out = header.to_vec();
    out.extend_from_slice(&xdr::to_bytes(&res));
    Some(out)
}

fn marker(len: usize) -> [u8; 4] {
    (0x8000_0000 | len as u32).to_be_bytes()
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A TCP proxy in front of one server: calls go through untouched, the
/// replies record by record, one of them rewritten when a mutation is
/// armed.
struct Proxy {
    addr: SocketAddr,
    plan: Arc<Mutex<Plan>>,
    connections: Arc<Mutex<u32>>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let plan = Arc::new(Mutex::new(Plan::default()));
        let connections = Arc::new(Mutex::new(0));
        let (p, n) = (plan.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                *n.lock().unwrap() += 1;
                tokio::spawn(relay(client, upstream, p.clone()));
            }
        });
        Proxy { addr, plan, connections }
    }

    /// Rewrites the next reply to a call of `op` with `m`.
    fn arm(&self, m: Mutation, op: Op) {
        *self.plan.lock().unwrap() = Plan { armed: Some((m, op)), ..Plan::default() };
    }

    fn applied(&self) -> u32 {
        self.plan.lock().unwrap().applied
    }

    fn connections(&self) -> u32 {
        *self.connections.lock().unwrap()
    }
}

/// How the replies of one connection ended.
enum Down {
    /// The server or the client closed it.
    Closed,
    /// Part of a record went out: stay silent, the connection open.
    Silent,
    /// Close the client's connection now.
    Close,
}

async fn relay(client: TcpStream, upstream: SocketAddr, plan: Arc<Mutex<Plan>>) {
    let Ok(server) = TcpStream::connect(upstream).await else { return };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (mut cr, cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let calls = plan.clone();
    let mut up = tokio::spawn(async move {
        while let Some(record) = read_record(&mut cr).await {
            watch_call(&calls, &record);
            let mut out = marker(record.len()).to_vec();
            out.extend_from_slice(&record);
            if sw.write_all(&out).await.is_err() {
                return;
            }
        }
    });
    let mut cw = cw;
    match replies(&mut sr, &mut cw, &plan).await {
        Down::Closed => {
            let _ = up.await;
        }
        Down::Silent => {
            // What the server still sends goes nowhere, until the client
            // gives up on the connection.
            let drain = async {
                let _ = tokio::io::copy(&mut sr, &mut tokio::io::sink()).await;
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = &mut up => {}
                _ = drain => {}
            }
        }
        Down::Close => up.abort(),
    }
}

async fn read_record(sr: &mut OwnedReadHalf) -> Option<Vec<u8>> {
    let mut record = Vec::new();
    loop {
        let mut h = [0u8; 4];
        sr.read_exact(&mut h).await.ok()?;
        let h = u32::from_be_bytes(h);
        let start = record.len();
        record.resize(start + (h & 0x7fff_ffff) as usize, 0);
        sr.read_exact(&mut record[start..]).await.ok()?;
        if h & 0x8000_0000 != 0 {
            return Some(record);
        }
    }
}

async fn replies(sr: &mut OwnedReadHalf, cw: &mut OwnedWriteHalf, plan: &Mutex<Plan>) -> Down {
    while let Some(mut record) = read_record(sr).await {
        let mut out = Vec::new();
        let mut end = None;
        match take(plan, &record) {
            None => {}
            Some(Mutation::Truncated) => {
                out.extend_from_slice(&marker(4 << 20));
                out.extend_from_slice(&record[..record.len() / 2]);
                end = Some(Down::Silent);
            }
            Some(Mutation::Swallowed) => continue,
            Some(Mutation::HugeThenClose) => {
                out.extend_from_slice(&marker(1 << 30));
                out.extend_from_slice(&record[..record.len().min(12)]);
                end = Some(Down::Close);
            }
            Some(Mutation::Flipped(seed)) => {
                let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                for _ in 0..1 + xorshift(&mut s) % 3 {
                    let at = (xorshift(&mut s) % record.len() as u64) as usize;
                    record[at] ^= (xorshift(&mut s) % 255 + 1) as u8;
                }
            }
            Some(Mutation::UnknownXid) => {
                for b in &mut record[..4] {
                    *b ^= 0x5a;
                }
            }
            Some(Mutation::Duplicated) => {
                out.extend_from_slice(&marker(record.len()));
                out.extend_from_slice(&record);
            }
            Some(Mutation::FewerResults) => {
                record = fewer_results(&record).unwrap_or(record);
            }
        }
        if end.is_none() {
            out.extend_from_slice(&marker(record.len()));
            out.extend_from_slice(&record);
        }
        if cw.write_all(&out).await.is_err() {
            return Down::Closed;
        }
        if let Some(end) = end {
            return end;
        }
    }
    Down::Closed
}

/// Panics seen on the client's runtime threads, by thread name.
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn count_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current().name().unwrap_or_default().to_string();
            PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{thread}: {info}"));
            default(info);
        }));
    });
}

/// Runs `case` on a runtime of its own whose threads carry the case's
/// name, so a panic in any task of the client (its connection's, the
/// back channel's, the calls the case spawns) is found, not only one on
/// the test's own thread.
fn run<F: Future<Output = ()>>(name: &str, case: F) {
    count_panics();
    let prefix = format!("hostile-{name}");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(&prefix)
        .enable_all()
        .build()
        .unwrap();
    let done = rt.block_on(async { tokio::time::timeout(CASE_LIMIT, case).await });
    rt.shutdown_timeout(Duration::from_secs(5));
    let panics: Vec<String> =
        PANICS.lock().unwrap().iter().filter(|p| p.starts_with(&format!("{prefix}:"))).cloned().collect();
    assert!(panics.is_empty(), "the client panicked: {panics:#?}");
    assert!(done.is_ok(), "{name}: still running after {CASE_LIMIT:?}");
}

fn long_lease(s: &mut server::Settings) {
    // Lease renewals stay out of the way of the cases.
    s.core.nfs4.lease_secs = 60;
}

async fn mount(srv: &Srv, proxy: &Proxy, version: &str) -> Client {
    let url = format!("nfs://127.0.0.1:{}{}?version={version}", proxy.addr.port(), srv.dir.path().display());
    let url = NfsUrl::parse(&url).unwrap();
    let addrs = ServerAddrs { mount: proxy.addr, nfs: proxy.addr, nlm: Some(proxy.addr) };
    Client::connect_to(&url, addrs, settings()).await.unwrap()
}

/// What the call whose reply was rewritten may end in.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// It succeeds after the client recovered, on a new connection.
    Reconnect,
    /// It succeeds after the client recovered.
    Recovery,
    /// It fails with an error.
    Error,
    /// Either (what flipped bytes mean cannot be told).
    Either,
}

/// The call whose reply is rewritten.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// A MKDIR: a resent one is answered from the server's reply cache
    /// only when it carries the same xid (NFSv3) or the same slot and
    /// sequence id (NFSv4.1); one executed twice would fail with EXIST.
    Mkdir,
    /// A stat of a file the client has not seen: a LOOKUP with the
    /// attributes (a compound of several results over NFSv4.1).
    Stat,
    /// Four MKDIRs at once, on as many slots over NFSv4.1: all of them
    /// outstanding when one reply is rewritten.
    Mkdirs,
}

async fn call(c: &Client, op: Op, name: String) -> client::Result<()> {
    let c = c.clone();
    let task = tokio::spawn(async move {
        match op {
            Op::Mkdir => c.mkdir(&name).await,
            Op::Stat => c.stat(&name).await.map(drop),
            Op::Mkdirs => {
                let each = (0..4).map(|k| {
                    let (c, name) = (c.clone(), name.clone());
                    tokio::spawn(async move { c.mkdir(&format!("{name}/{k}")).await })
                });
                let each: Vec<_> = each.collect();
                for t in each {
                    t.await.expect("the call panicked")?;
                }
                Ok(())
            }
        }
    });
    task.await.expect("the call panicked")
}

/// The call `op` with its reply rewritten by each mutation in turn, each
/// time followed by a MKDIR that must succeed.
async fn survives(version: &'static str, op: Op, mutations: Vec<Mutation>, expect: Expect) {
    let srv = Srv::start_tuned(&server_core::NfsVersion::ALL, long_lease).await;
    let proxy = Proxy::start(srv.addr).await;
    let c = mount(&srv, &proxy, version).await;
    c.mkdir("before").await.unwrap();
    for (i, m) in mutations.into_iter().enumerate() {
        let during = format!("during{i}");
        match op {
            Op::Stat => std::fs::write(srv.path(&during), b"x").unwrap(),
            Op::Mkdirs => c.mkdir(&during).await.unwrap(),
            Op::Mkdir => {}
        }
        let connections = proxy.connections();
        proxy.arm(m, op);
        let t = Instant::now();
        let r = call(&c, op, during.clone()).await;
        let took = t.elapsed();
        let what = format!("{op:?} with {m:?} over NFSv{version}");
        assert_eq!(proxy.applied(), 1, "{what}: the reply was rewritten");
        assert!(took < RETRANSMIT + MARGIN, "{what}: the call took {took:?}");
        match (&r, expect) {
            (Ok(()), Expect::Recovery | Expect::Reconnect | Expect::Either) => {
                assert!(srv.path(&during).exists(), "{what}");
                if let Op::Mkdirs = op {
                    assert_eq!(std::fs::read_dir(srv.path(&during)).unwrap().count(), 4, "{what}");
                }
            }
            (Err(_), Expect::Error | Expect::Either) => {}
            _ => panic!("{what}: {r:?}"),
        }
        let outcome = format!("{r:?}");
        if expect == Expect::Reconnect {
            assert!(proxy.connections() > connections, "{what}: resent on the same connection");
        }
        let t = Instant::now();
        let after = format!("after{i}");
        let r = call(&c, Op::Mkdir, after.clone()).await;
        let took_next = t.elapsed();
        eprintln!("{what}: {outcome} after {took:?}, the next call {took_next:?}");
        assert!(r.is_ok(), "{what}: the next call failed: {r:?}");
        assert!(took_next < RETRANSMIT + MARGIN, "{what}: the next call took {took_next:?}");
        assert!(srv.path(&after).is_dir());
        if expect == Expect::Reconnect && version == "4.1" {
            back_channel_bound_again(&c, &what).await;
        }
    }
    c.shutdown().await;
}

/// A new connection carries no back channel until the client binds it to
/// the session, which it does after each reconnect.
async fn back_channel_bound_again(c: &Client, what: &str) {
    let binds = |c: &Client| c.stats().ops.get("BIND_CONN_TO_SESSION").map_or(0, |o| o.count);
    let give_up = Instant::now() + MARGIN;
    while binds(c) == 0 {
        assert!(Instant::now() < give_up, "{what}: no BIND_CONN_TO_SESSION after the reconnect");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

macro_rules! case {
    ($name:ident, $version:literal, $op:expr, $mutations:expr, $expect:expr) => {
        #[test]
        fn $name() {
            run(stringify!($name), survives($version, $op, $mutations, $expect));
        }
    };
}

use Mutation::*;
use Op::*;

case!(truncated_record_reconnects_v3, "3", Mkdir, vec![Truncated], Expect::Reconnect);
case!(truncated_record_reconnects_v41, "4.1", Mkdir, vec![Truncated], Expect::Reconnect);
case!(truncated_lookup_reconnects_v41, "4.1", Stat, vec![Truncated], Expect::Reconnect);
case!(truncated_record_among_others_reconnects_v3, "3", Mkdirs, vec![Truncated], Expect::Reconnect);
case!(truncated_record_among_others_reconnects_v41, "4.1", Mkdirs, vec![Truncated], Expect::Reconnect);
case!(swallowed_reply_reconnects_v3, "3", Mkdir, vec![Swallowed], Expect::Reconnect);
case!(swallowed_reply_reconnects_v41, "4.1", Mkdir, vec![Swallowed], Expect::Reconnect);
case!(huge_marker_and_close_reconnects_v3, "3", Mkdir, vec![HugeThenClose], Expect::Reconnect);
case!(huge_marker_and_close_reconnects_v41, "4.1", Mkdir, vec![HugeThenClose], Expect::Reconnect);
case!(flipped_bytes_v3, "3", Mkdir, (1..=8).map(Flipped).collect(), Expect::Either);
case!(flipped_bytes_v41, "4.1", Mkdir, (1..=8).map(Flipped).collect(), Expect::Either);
case!(flipped_bytes_in_lookups_v3, "3", Stat, (11..=18).map(Flipped).collect(), Expect::Either);
case!(flipped_bytes_in_lookups_v41, "4.1", Stat, (11..=18).map(Flipped).collect(), Expect::Either);
case!(unknown_xid_is_dropped_v3, "3", Mkdir, vec![UnknownXid], Expect::Recovery);
case!(unknown_xid_is_dropped_v41, "4.1", Mkdir, vec![UnknownXid], Expect::Recovery);
case!(duplicate_reply_is_dropped_v3, "3", Mkdir, vec![Duplicated], Expect::Recovery);
case!(duplicate_reply_is_dropped_v41, "4.1", Mkdir, vec![Duplicated], Expect::Recovery);
case!(fewer_results_than_operations_v41, "4.1", Mkdir, vec![FewerResults], Expect::Error);
case!(fewer_results_in_a_lookup_v41, "4.1", Stat, vec![FewerResults], Expect::Error);

/// After a reconnect the server calls back on the new connection: a
/// delegation the client held from before is recalled at once when
/// another client opens the file for writing.
#[test]
fn a_recall_reaches_the_client_on_its_new_connection() {
    run("recall_after_reconnect", async {
        let srv = Srv::start_tuned(&server_core::NfsVersion::ALL, long_lease).await;
        std::fs::write(srv.path("shared"), b"before").unwrap();
        let proxy = Proxy::start(srv.addr).await;
        let a = mount(&srv, &proxy, "4.1").await;
        let b = Client::connect(&format!("{}?version=4.1", srv.url()), settings()).await.unwrap();
        let a41 = a.nfs41().unwrap();
        for _ in 0..100 {
            if a41.delegations_held() > 0 {
                break;
            }
            common::read_file(&a, "shared").await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(a41.delegations_held(), 1, "{:?}", a41.counters());
        proxy.arm(Truncated, Op::Mkdir);
        let connections = proxy.connections();
        call(&a, Op::Mkdir, "during".into()).await.unwrap();
        assert!(proxy.connections() > connections);
        call(&a, Op::Mkdir, "after".into()).await.unwrap();
        // Without a back channel the server could only wait for A's lease
        // (a minute here) to run out.
        let t = Instant::now();
        let open = b.open("shared", client::OpenOptions::read_write());
        let mut f = tokio::time::timeout(MARGIN, open).await.expect("the recall did not reach A").unwrap();
        let took = t.elapsed();
        f.write(0, b"change").await.unwrap();
        f.close().await.unwrap();
        assert_eq!(a41.counters().recalls, 1, "{:?}", a41.counters());
        assert!(took < MARGIN, "the conflicting OPEN took {took:?}");
        a.shutdown().await;
        b.shutdown().await;
    });
}

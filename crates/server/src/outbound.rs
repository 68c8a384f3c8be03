//! Calls to clients over connections the server opens: the transport of
//! the core's [`Outbound`] calls (NLM results and grants). Each call asks
//! the client host's portmapper for the program's port (remembered for a
//! while), connects from the address the client reached us on (from a
//! reserved port when running as root: some lock managers only believe
//! privileged callers), sends the record and waits for the reply with the
//! call's xid. The end of each call goes back to the core through a
//! channel the server drains ([`crate::Server::start`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use proto::framer::{frame_segments, RecordDecoder};
use proto::portmap::{pmap2_mapping, PMAP2_GETPORT, PMAP_PROGRAM};
use proto::rpc::{auth_flavor, call_body, opaque_auth, reply_body, reply_data, rpc_msg, rpc_msg_body};
use server_core::{OutCall, OutReply, Outbound};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream, UdpSocket};
use tokio::sync::{mpsc, Semaphore};
use xdr::{Decode, Decoder, Encode, Encoder};

/// How long a port learnt from a client's portmapper is used before it is
/// asked again (a lock manager restarted elsewhere is found within it;
/// a failed connection forgets the port at once).
const PORT_CACHE_TTL: Duration = Duration::from_secs(60);
/// Calls in progress at once; past it a call is refused and the core
/// tries it again later.
const MAX_CALLS_IN_FLIGHT: usize = 64;
/// Largest reply record read from a client.
const MAX_REPLY: usize = 64 * 1024;
/// Reserved source ports tried when running as root before an ordinary
/// one is used.
const RESERVED_PORT_TRIES: usize = 8;
const IPPROTO_TCP: u32 = 6;
const IPPROTO_UDP: u32 = 17;

type PortKey = (IpAddr, u32, u32, bool);

/// The core's calls to clients, over TCP (and UDP when asked).
pub struct TcpOutbound {
    rt: tokio::runtime::Handle,
    done: mpsc::UnboundedSender<(u64, OutReply)>,
    ports: Arc<Mutex<HashMap<PortKey, (u16, Instant)>>>,
    limit: Arc<Semaphore>,
    /// Our own listening ports: a "client" on our host whose portmapper
    /// (ours) names one of them is nfsx itself, never called.
    own_ports: Vec<u16>,
    /// Bind a reserved source port (the process runs as root).
    reserved: bool,
}

impl TcpOutbound {
    /// A transport whose calls run on `rt`; their ends come out of the
    /// returned receiver, for [`server_core::Core::outbound_done`].
    pub fn new(
        rt: tokio::runtime::Handle,
        own_ports: Vec<u16>,
    ) -> (Arc<TcpOutbound>, mpsc::UnboundedReceiver<(u64, OutReply)>) {
        let (done, rx) = mpsc::unbounded_channel();
        // SAFETY: geteuid has no preconditions and cannot fail.
        let reserved = unsafe { libc::geteuid() } == 0;
        let out = TcpOutbound {
            rt,
            done,
            ports: Default::default(),
            limit: Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT)),
            own_ports,
            reserved,
        };
        (Arc::new(out), rx)
    }
}

impl Outbound for TcpOutbound {
    fn send(&self, call: OutCall) -> bool {
        let Ok(permit) = self.limit.clone().try_acquire_owned() else {
            tracing::debug!(host = %call.host, "too many calls to clients in progress; call deferred");
            return false;
        };
        let caller = Caller { ports: self.ports.clone(), own_ports: self.own_ports.clone(), reserved: self.reserved };
        let done = self.done.clone();
        self.rt.spawn(async move {
            let id = call.id;
            let r = tokio::time::timeout(call.timeout, caller.call(&call)).await.unwrap_or(OutReply::TimedOut);
            tracing::debug!(host = %call.host, prog = call.prog, reply = ?short(&r), "call to a client ended");
            let _ = done.send((id, r));
            drop(permit);
        });
        true
    }
}

fn short(r: &OutReply) -> &'static str {
    match r {
        OutReply::Reply(_) => "reply",
        OutReply::NoService => "no service",
        OutReply::Unreachable => "unreachable",
        OutReply::TimedOut => "timed out",
    }
}

/// What one call needs of the transport.
struct Caller {
    ports: Arc<Mutex<HashMap<PortKey, (u16, Instant)>>>,
    own_ports: Vec<u16>,
    reserved: bool,
}

impl Caller {
    async fn call(&self, c: &OutCall) -> OutReply {
        let Some(xid) = c.xid() else { return OutReply::Unreachable };
        let key = (c.host, c.prog, c.vers, c.udp);
        let port = match c.port {
            Some(p) => p,
            None => match self.cached(key) {
                Some(p) => p,
                None => {
                    let prot = if c.udp { IPPROTO_UDP } else { IPPROTO_TCP };
                    match self.getport(c, prot).await {
                        Ok(0) => return OutReply::NoService,
                        Ok(p) => {
                            self.ports.lock().insert(key, (p, Instant::now()));
                            p
                        }
                        Err(r) => return r,
                    }
                }
            },
        };
        let ours = c.host.is_loopback() || c.host == c.from;
        if ours && self.own_ports.contains(&port) {
            return OutReply::NoService;
        }
        let to = SocketAddr::new(c.host, port);
        let r = if c.udp {
            self.exchange_udp(c.from, to, c.record.clone(), xid).await
        } else {
            self.exchange_tcp(c.from, to, c.record.clone(), xid).await
        };
        if matches!(r, OutReply::Unreachable) {
            self.ports.lock().remove(&key);
        }
        r
    }

    fn cached(&self, key: PortKey) -> Option<u16> {
        let mut ports = self.ports.lock();
        match ports.get(&key) {
            Some((p, at)) if at.elapsed() < PORT_CACHE_TTL => Some(*p),
            Some(_) => {
                ports.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Portmap v2 GETPORT of the call's program on its host (over TCP).
    async fn getport(&self, c: &OutCall, prot: u32) -> Result<u16, OutReply> {
        let xid: u32 = rand::random();
        let args = pmap2_mapping { prog: c.prog, vers: c.vers, prot, port: 0 };
        let record = plain_call(xid, PMAP_PROGRAM, 2, PMAP2_GETPORT, &args);
        let to = SocketAddr::new(c.host, c.portmap_port);
        match self.exchange_tcp(c.from, to, record, xid).await {
            OutReply::Reply(r) => {
                let mut d = Decoder::new(r);
                let port = accepted_results(&mut d).and_then(|()| d.u32().ok());
                Ok(port.and_then(|p| u16::try_from(p).ok()).unwrap_or(0))
            }
            other => Err(other),
        }
    }

    async fn connect(&self, from: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
        if self.reserved {
            for _ in 0..RESERVED_PORT_TRIES {
                let port = 600 + rand::random::<u16>() % 424;
                let Ok(s) = socket_for(to) else { break };
                if s.bind(SocketAddr::new(from, port)).is_ok() {
                    if let Ok(stream) = s.connect(to).await {
                        return Ok(stream);
                    }
                }
            }
        }
        let s = socket_for(to)?;
        s.bind(SocketAddr::new(from, 0))?;
        s.connect(to).await
    }

    async fn exchange_tcp(&self, from: IpAddr, to: SocketAddr, record: Vec<Bytes>, xid: u32) -> OutReply {
        let Ok(mut stream) = self.connect(from, to).await else { return OutReply::Unreachable };
        for seg in frame_segments(record) {
            if stream.write_all(&seg).await.is_err() {
                return OutReply::Unreachable;
            }
        }
        let mut dec = RecordDecoder::new(MAX_REPLY);
        let mut buf = vec![0u8; 4096];
        loop {
            loop {
                match dec.next_record() {
                    Ok(Some(r)) if r.get(..4) == Some(&xid.to_be_bytes()[..]) => return OutReply::Reply(r),
                    Ok(Some(_)) => continue,
                    Ok(None) => break,
                    Err(_) => return OutReply::Unreachable,
                }
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return OutReply::Unreachable,
                Ok(n) => dec.push(buf.get(..n).unwrap_or_default()),
            }
        }
    }

    async fn exchange_udp(&self, from: IpAddr, to: SocketAddr, record: Vec<Bytes>, xid: u32) -> OutReply {
        let Ok(sock) = UdpSocket::bind(SocketAddr::new(from, 0)).await else { return OutReply::Unreachable };
        if sock.send_to(&record.concat(), to).await.is_err() {
            return OutReply::Unreachable;
        }
        let mut buf = vec![0u8; MAX_REPLY];
        loop {
            match sock.recv_from(&mut buf).await {
                Ok((n, src)) if src == to => {
                    let r = buf.get(..n).unwrap_or_default();
                    if r.get(..4) == Some(&xid.to_be_bytes()[..]) {
                        return OutReply::Reply(Bytes::copy_from_slice(r));
                    }
                }
                Ok(_) => {}
                Err(_) => return OutReply::Unreachable,
            }
        }
    }
}

fn socket_for(to: SocketAddr) -> std::io::Result<TcpSocket> {
    if to.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
}

/// A call record under AUTH_NONE.
fn plain_call(xid: u32, prog: u32, vers: u32, proc_: u32, args: &impl Encode) -> Vec<Bytes> {
    let none = || opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() };
    let msg = rpc_msg {
        xid,
        body: rpc_msg_body::CALL(call_body { rpcvers: 2, prog, vers, proc: proc_, cred: none(), verf: none() }),
    };
    let mut e = Encoder::with_capacity(64);
    msg.encode(&mut e);
    args.encode(&mut e);
    e.into_segments()
}

/// Reads a reply's header; `Some` when the call was accepted and ran
/// (its results follow in `d`).
fn accepted_results(d: &mut Decoder) -> Option<()> {
    let _xid = d.u32().ok()?;
    if d.u32().ok()? != 1 {
        return None;
    }
    match reply_body::decode(d).ok()? {
        reply_body::MSG_ACCEPTED(a) if matches!(a.reply_data, reply_data::SUCCESS) => Some(()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// Answers every record on one accepted connection with `answer(call)`
    /// (None: no answer at all), recording the calls.
    async fn fake_server(
        answer: impl Fn(&Bytes) -> Option<Vec<u8>> + Send + 'static,
    ) -> (SocketAddr, mpsc::UnboundedReceiver<Bytes>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else { return };
                let mut dec = RecordDecoder::new(MAX_REPLY);
                let mut buf = vec![0u8; 4096];
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    dec.push(&buf[..n]);
                    while let Ok(Some(r)) = dec.next_record() {
                        let _ = tx.send(r.clone());
                        if let Some(reply) = answer(&r) {
                            for seg in frame_segments(vec![Bytes::from(reply)]) {
                                s.write_all(&seg).await.unwrap();
                            }
                        }
                    }
                }
            }
        });
        (addr, rx)
    }

    /// An accepted, successful reply to `call` with `results`.
    fn reply_to(call: &Bytes, results: &[u32]) -> Vec<u8> {
        let mut e = Encoder::new();
        e.u32(u32::from_be_bytes(call[..4].try_into().unwrap()));
        for v in [1, 0, 0, 0, 0] {
            e.u32(v);
        }
        for v in results {
            e.u32(*v);
        }
        e.into_bytes().to_vec()
    }

    fn nlm_call(id: u64, port: Option<u16>, portmap_port: u16, timeout: Duration) -> OutCall {
        let record = plain_call(id as u32, 100021, 4, 12, &7u32);
        OutCall {
            id,
            host: "127.0.0.1".parse().unwrap(),
            from: "127.0.0.1".parse().unwrap(),
            prog: 100021,
            vers: 4,
            udp: false,
            port,
            portmap_port,
            record,
            timeout,
        }
    }

    #[tokio::test]
    async fn asks_the_portmapper_then_calls_and_remembers_the_port() {
        let (nlm, mut nlm_calls) = fake_server(|c| Some(reply_to(c, &[]))).await;
        let nlm_port = nlm.port();
        let (pmap, mut pmap_calls) = fake_server(move |c| Some(reply_to(c, &[u32::from(nlm_port)]))).await;
        let (out, mut done) = TcpOutbound::new(tokio::runtime::Handle::current(), vec![]);
        let timeout = Duration::from_secs(5);
        assert!(out.send(nlm_call(41, None, pmap.port(), timeout)));
        let (id, r) = done.recv().await.unwrap();
        assert_eq!(id, 41);
        let OutReply::Reply(reply) = r else { panic!("{r:?}") };
        assert_eq!(&reply[..4], &41u32.to_be_bytes());
        // The portmapper was asked for NLM v4 over TCP.
        let q = pmap_calls.recv().await.unwrap();
        let mut d = Decoder::new(q);
        let _ = rpc_msg::decode(&mut d).unwrap();
        let m = pmap2_mapping::decode(&mut d).unwrap();
        assert_eq!((m.prog, m.vers, m.prot), (100021, 4, 6));
        let c = nlm_calls.recv().await.unwrap();
        assert_eq!(&c[..4], &41u32.to_be_bytes());
        // The second call goes straight to the port learnt.
        assert!(out.send(nlm_call(42, None, pmap.port(), timeout)));
        assert!(matches!(done.recv().await.unwrap(), (42, OutReply::Reply(_))));
        assert!(pmap_calls.try_recv().is_err(), "the portmapper was asked again");
    }

    #[tokio::test]
    async fn unanswered_unregistered_and_unreachable_calls() {
        let (silent, _calls) = fake_server(|_| None).await;
        let (out, mut done) = TcpOutbound::new(tokio::runtime::Handle::current(), vec![2049]);
        assert!(out.send(nlm_call(1, Some(silent.port()), 111, Duration::from_millis(200))));
        assert_eq!(done.recv().await.unwrap(), (1, OutReply::TimedOut));
        // A portmapper that knows no NLM.
        let (pmap, _q) = fake_server(|c| Some(reply_to(c, &[0]))).await;
        assert!(out.send(nlm_call(2, None, pmap.port(), Duration::from_secs(5))));
        assert_eq!(done.recv().await.unwrap(), (2, OutReply::NoService));
        // Nobody listening.
        let closed = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        assert!(out.send(nlm_call(3, Some(closed.port()), 111, Duration::from_secs(5))));
        assert_eq!(done.recv().await.unwrap(), (3, OutReply::Unreachable));
        // Our own port on our own host is never called.
        assert!(out.send(nlm_call(4, Some(2049), 111, Duration::from_secs(5))));
        assert_eq!(done.recv().await.unwrap(), (4, OutReply::NoService));
    }
}

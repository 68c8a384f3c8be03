//! Several nfsx processes on one host, one portmapper: the first lock
//! service to register NLM version 4 holds the entry, so every server
//! calls it back, for every process. The others join it (RELAY_JOIN of
//! nfsx's own program, `lockd_relay.x`), and it hands on to them what is
//! theirs (RELAY_FORWARD): a GRANTED for a lock one of them waits for
//! (the owner handle starts with the waiting process's id), answered
//! with that process's reply, and every SM_NOTIFY.
//!
//! The holder is found through the portmapper (GETPORT names it), or,
//! where the portmapper is an nfsx server's own and names that server's
//! lock manager, through the file `lockd-holder` in `[nlm] state_dir`,
//! which the holder writes.
//!
//! A joined process checks every `relay_check_secs` that the holder
//! still runs and joins again (a holder that restarted has forgotten
//! it); when the holder is gone, it takes the portmapper's entries over
//! and becomes the holder the others join. A grant lost in between is
//! recovered by the waiter asking again (`repoll_secs`) and by the
//! server's retries of GRANTED.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::lockd_relay::*;
use proto::nlm::{NLM_PROG, NLM_VERS4};
use proto::nsm::{SM_PROG, SM_VERS};
use proto::portmap::{pmap2_mapping, PMAP2_SET, PMAP2_UNSET};
use tokio::net::TcpStream;
use xdr::Decode;

use super::{pmap_bool, pmap_port, LockService, Registration, IPPROTO_TCP};
use crate::transport::{ConnParams, Connection};

/// Bound of the processes that may join one holder.
const MAX_PEERS: usize = 1024;

/// How long the holder waits for a joined process to answer a call it
/// hands on, and a joining process for the holder: both are on this
/// host, so a process that takes longer is stuck.
const RELAY_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a joining process waits for a holder that just registered to
/// write itself down, when the portmapper cannot name it.
const HOLDER_WRITE_WAIT: Duration = Duration::from_millis(100);

/// Where this process's service stands with a portmapper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// It holds NLM version 4 there.
    Holder,
    /// Another process of this host holds it, listening on this port,
    /// and this one joined it.
    Joined(u16),
}

impl LockService {
    /// Registers with the portmapper at `portmap`, or joins the live
    /// service that holds NLM there; `dir`: where the holder is written
    /// down.
    pub(super) async fn register_with(
        &self,
        portmap: SocketAddr,
        params: &ConnParams,
        dir: &Path,
    ) -> Result<Registration, String> {
        let conn = Connection::connect(ConnParams { addr: portmap, ..params.clone() })
            .await
            .map_err(|e| format!("no portmapper: {e}"))?;
        let params = params.clone();
        let reg = |role, held| Registration { params: params.clone(), role, held, dir: dir.to_path_buf() };
        if let Some(held) = self.claim(&conn, portmap, NLM_PROG, NLM_VERS4).await? {
            // A holder that registered a moment ago writes itself down
            // right after.
            let mut written = written_holder(dir);
            if written.is_none() {
                tokio::time::sleep(HOLDER_WRITE_WAIT).await;
                written = written_holder(dir);
            }
            let (named, gone) = match written {
                Some(port) if port != self.port => (Some(port), !self.is_live(portmap.ip(), port).await),
                _ => (None, false),
            };
            let mut why = Vec::new();
            for port in [Some(held), named.filter(|p| *p != held && !gone)].into_iter().flatten() {
                match self.join(&params, portmap.ip(), port).await {
                    Ok(()) => return Ok(reg(Role::Joined(port), Vec::new())),
                    Err(e) => why.push(e),
                }
            }
            // The portmapper names its own lock manager, and the nfsx
            // process that held the entry beside it is gone: taken over.
            if !gone || !self.take_over(&conn, NLM_PROG, NLM_VERS4).await? {
                return Err(why.join("; "));
            }
            // Its NSM entry too, which the portmapper hides the same way.
            if self.take_over(&conn, SM_PROG, SM_VERS).await? {
                write_holder(dir, self.port);
                return Ok(reg(Role::Holder, vec![(NLM_PROG, NLM_VERS4), (SM_PROG, SM_VERS)]));
            }
        }
        write_holder(dir, self.port);
        let mut held = vec![(NLM_PROG, NLM_VERS4)];
        match self.claim(&conn, portmap, SM_PROG, SM_VERS).await {
            Ok(None) => held.push((SM_PROG, SM_VERS)),
            Ok(Some(port)) => tracing::info!(
                "NSM is served at port {port} of the portmapper at {portmap} (rpc.statd?): a restarted server's \
                 SM_NOTIFY goes there, so this client does not reclaim its NFSv3 locks"
            ),
            Err(e) => tracing::info!("NSM not registered with the portmapper at {portmap}: {e}"),
        }
        Ok(reg(Role::Holder, held))
    }

    async fn is_live(&self, host: IpAddr, port: u16) -> bool {
        let at = SocketAddr::new(loopback_for(host), port);
        tokio::time::timeout(RELAY_TIMEOUT, TcpStream::connect(at)).await.is_ok_and(|c| c.is_ok())
    }

    /// UNSET, then SET of `prog`/`vers` to this service's port.
    async fn take_over(&self, conn: &Connection, prog: u32, vers: u32) -> Result<bool, String> {
        let m = pmap2_mapping { prog, vers, prot: IPPROTO_TCP, port: u32::from(self.port) };
        pmap_bool(conn, PMAP2_UNSET, &m).await?;
        pmap_bool(conn, PMAP2_SET, &m).await
    }

    /// Sets `prog`/`vers` to this service's port; Some(port): a live
    /// service holds it there. A registration whose port refuses
    /// connections is taken over.
    async fn claim(&self, conn: &Connection, portmap: SocketAddr, prog: u32, vers: u32) -> Result<Option<u16>, String> {
        let m = pmap2_mapping { prog, vers, prot: IPPROTO_TCP, port: u32::from(self.port) };
        if pmap_bool(conn, PMAP2_SET, &m).await? {
            return Ok(None);
        }
        let held = pmap_port(conn, &m).await?;
        if held == u32::from(self.port) {
            return Ok(None);
        }
        if let Ok(port) = u16::try_from(held) {
            if port != 0 && TcpStream::connect(SocketAddr::new(portmap.ip(), port)).await.is_ok() {
                return Ok(Some(port));
            }
        }
        if !self.take_over(conn, prog, vers).await? {
            return Err(format!("the portmapper refused program {prog} version {vers}"));
        }
        Ok(None)
    }

    /// RELAY_JOIN to the service listening on `port` of `host` (this host,
    /// as its portmapper is reached).
    async fn join(&self, params: &ConnParams, host: IpAddr, port: u16) -> Result<(), String> {
        let at = SocketAddr::new(loopback_for(host), port);
        let args = relay_join { pid: std::process::id(), port: u32::from(self.port) };
        let reply = relay_call(params, at, RELAY_JOIN, xdr::to_bytes(&args))
            .await
            .map_err(|e| format!("NLM is served at port {port}, which does not take nfsx's relay: {e}"))?;
        match bool::decode(&mut xdr::Decoder::new(reply)) {
            Ok(true) => Ok(()),
            _ => Err(format!("NLM is served at port {port}, which refused to relay")),
        }
    }

    /// While joined to another process's service: checks on it every
    /// `every`, joins again, or takes over the portmapper's entries.
    pub(super) async fn keep(self: Arc<Self>, portmap: SocketAddr, params: ConnParams, dir: PathBuf, every: Duration) {
        loop {
            tokio::time::sleep(every).await;
            let mut done = self.registered.lock().await;
            let before = done.get(&portmap).cloned().flatten().map(|r| r.role);
            let again = tokio::time::timeout(RELAY_TIMEOUT, self.register_with(portmap, &params, &dir)).await;
            match again {
                Ok(Ok(now)) => {
                    let holder = now.role == Role::Holder;
                    if Some(now.role) != before {
                        tracing::info!("lock service at the portmapper {portmap}: {:?} (was {before:?})", now.role);
                    }
                    done.insert(portmap, Some(now));
                    if holder {
                        return;
                    }
                }
                Ok(Err(e)) => tracing::debug!("lock service: checking the registration at {portmap}: {e}"),
                Err(_) => tracing::debug!("lock service: the portmapper at {portmap} did not answer"),
            }
        }
    }

    /// Another process's service joined this one.
    pub(super) fn joined(&self, pid: u32, port: u16) {
        let mut peers = self.peers.lock();
        if peers.len() < MAX_PEERS || peers.contains_key(&pid) {
            peers.insert(pid, port);
        } else {
            tracing::warn!(pid, "lock service: {MAX_PEERS} processes joined already; this one is not");
        }
    }

    /// Hands a GRANTED for a lock of process `pid` on to it, if it joined:
    /// its reply, record-marked.
    pub(super) async fn hand_on(&self, pid: u32, record: Bytes, from: IpAddr) -> Option<Vec<Bytes>> {
        let port = *self.peers.lock().get(&pid)?;
        let params = self.relay_params().await?;
        match forward(&params, port, record, from).await {
            Ok(reply) => Some(vec![reply]),
            Err(e) => {
                tracing::debug!(pid, "lock service: process gone from the relay ({e})");
                self.peers.lock().remove(&pid);
                None
            }
        }
    }

    /// Hands a call every process must see (SM_NOTIFY) on to all that
    /// joined, without waiting for them.
    pub(super) fn hand_on_to_all(self: &Arc<Self>, record: Bytes, from: IpAddr) {
        let pids: Vec<u32> = self.peers.lock().keys().copied().collect();
        for pid in pids {
            let (svc, record) = (self.clone(), record.clone());
            self.rt.spawn(async move { svc.hand_on(pid, record, from).await });
        }
    }

    /// Connection parameters for calls on this host: those of the first
    /// registration (security and TLS are for servers, not for loopback).
    async fn relay_params(&self) -> Option<ConnParams> {
        let done = self.registered.lock().await;
        let reg = done.values().flatten().next()?;
        Some(ConnParams { tls: None, gss: None, ..reg.params.clone() })
    }
}

/// The file in `[nlm] state_dir` that names the holder's port.
const HOLDER_FILE: &str = "lockd-holder";

/// The holder's port as written down.
fn written_holder(dir: &Path) -> Option<u16> {
    std::fs::read_to_string(dir.join(HOLDER_FILE)).ok()?.split_whitespace().nth(1)?.parse().ok()
}

/// Writes this process down as the holder ("PID PORT").
fn write_holder(dir: &Path, port: u16) {
    let tmp = dir.join(format!(".{HOLDER_FILE}.{}", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, format!("{} {port}\n", std::process::id())))
        .and_then(|()| std::fs::rename(&tmp, dir.join(HOLDER_FILE)));
    if let Err(e) = written {
        tracing::debug!("cannot write {}: {e}", dir.join(HOLDER_FILE).display());
    }
}

/// Takes the holder's file out if it names this process's `port`.
pub(super) fn remove_holder(dir: &Path, port: u16) {
    if written_holder(dir) == Some(port) {
        let _ = std::fs::remove_file(dir.join(HOLDER_FILE));
    }
}

/// The loopback address of the family of `host`, where the other
/// processes' services listen (on every address).
fn loopback_for(host: IpAddr) -> IpAddr {
    match host {
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

/// RELAY_FORWARD of `record`, a call from `from`, to the service on
/// `port` of loopback: its reply, record-marked.
async fn forward(params: &ConnParams, port: u16, record: Bytes, from: IpAddr) -> Result<Bytes, String> {
    let at = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let args = relay_forward { from: Bytes::from(from.to_string()), call: record };
    let reply = relay_call(params, at, RELAY_FORWARD, xdr::to_bytes(&args)).await?;
    let r = relay_reply::decode(&mut xdr::Decoder::new(reply)).map_err(|e| e.to_string())?;
    Ok(r.reply)
}

/// One call of the relay program to the service at `at`, bounded by
/// RELAY_TIMEOUT.
async fn relay_call(params: &ConnParams, at: SocketAddr, proc_: u32, args: Bytes) -> Result<Bytes, String> {
    let params = ConnParams {
        addr: at,
        tls: None,
        gss: None,
        connect_timeout: RELAY_TIMEOUT,
        reconnect_timeout: Duration::ZERO,
        ..params.clone()
    };
    let call = async {
        let conn = Connection::connect(params).await.map_err(|e| e.to_string())?;
        conn.call(LOCKD_RELAY_PROG, LOCKD_RELAY_VERS, proc_, vec![args]).await.map_err(|e| e.to_string())
    };
    tokio::time::timeout(RELAY_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {RELAY_TIMEOUT:?}")))
}

//! Byte-range locks over NFSv3: NLM version 4 (the Open Group's XNFS
//! lock manager with 64-bit offsets), the side protocol NFSv3 leaves
//! locking to.
//!
//! A lock held elsewhere is waited for the way Linux's lockd waits: a
//! LOCK with `block` set, which the server answers `blocked` and queues;
//! when the lock is free the server grants it and calls back NLM_GRANTED
//! on this process's lock service ([`crate::lockd`]), which wakes the
//! caller. A wait that hears nothing for `[nlm] repoll_secs` asks again
//! (the server knows the request and answers `granted` if it granted
//! it). A server that does not queue (it answers `denied`), or a client
//! whose lock service could not register with this host's portmapper,
//! asks again without `block`, 1 ms first and doubling up to a second.
//! A wait that is given up (a signal interrupting `F_SETLKW`) sends
//! CANCEL.
//!
//! Locks this client holds are kept (`held`, by file, owner and range),
//! so that when the server's status monitor says it restarted
//! (SM_NOTIFY, received by the lock service) they are taken again as
//! reclaims within its grace period ([`reclaim`]).
//!
//! The server knows a lock owner by the caller's host name and `svid`
//! (Linux lockd uses only those two) plus the owner handle `oh`, so each
//! owner the caller names gets an `svid` unique within this process, and
//! `oh` carries the process id beside it, unique on this machine.

mod reclaim;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client_core::stats::{procedure_name, Stats};
use client_core::v41::backoff::{Backoff, RetrySettings};
use client_core::v41::locallocks::{range_end, LocalLocks};
use parking_lot::Mutex;
use proto::nlm::*;
use tokio::sync::OnceCell;
use xdr::{Decode, Decoder, Encode, Encoder};

use crate::error::{Error, Result};
use crate::lockd::{monitor_record, LockService, LockServiceSettings, MonitoredServer, Wait};
use crate::nfs41::LockConflict;
use crate::transport::{ConnParams, Connection};

pub const NLM_V4: u32 = 4;

/// Longest pause between two asks for a lock held elsewhere.
const LOCK_POLL_MAX: Duration = Duration::from_secs(1);

/// The NSM state this client reports in LOCK: odd ("up"), and another
/// number in each process (its start time), as a host's changes at each
/// boot.
fn nsm_state() -> i32 {
    static STATE: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *STATE.get_or_init(|| {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        (secs as i32 & i32::MAX) | 1
    })
}

/// NLM's "to the end of the file" length.
const NLM_TO_END: u64 = 0;

/// Owners of this process get `svid`s from here; the process id goes in
/// the owner handle, so two processes on one host never share an owner.
static NEXT_SVID: AtomicU32 = AtomicU32::new(1);

/// The NLM side of one NFSv3 client: where the server's lock manager is,
/// a connection made at the first lock, and which owners hold locks.
pub struct Nlm {
    addr: Option<SocketAddr>,
    /// The server's portmapper, where its status monitor is found.
    portmap: SocketAddr,
    params: ConnParams,
    conn: OnceCell<Connection>,
    caller_name: Bytes,
    retry: RetrySettings,
    cookie: AtomicU64,
    svids: Arc<Mutex<HashMap<u64, u32>>>,
    /// The locks the server granted this client, by file (its handle),
    /// owner and range: what an unlock must be sent for, and what is
    /// reclaimed after the server restarts.
    held: Arc<Mutex<LocalLocks<Bytes>>>,
    /// Locks reclaimed after a server restart, and locks lost (the
    /// server refused the reclaim).
    reclaims: Arc<reclaim::Counts>,
    lockd: LockServiceSettings,
    /// The process's lock service, when it registered with this host's
    /// portmapper (looked up at the first wait).
    service: OnceCell<Option<Arc<LockService>>>,
}

/// How a wait by callback ended.
enum Waited {
    Granted,
    /// The server does not queue requests: ask again without `block`.
    NotQueued,
}

/// Sends CANCEL for a blocked request whose caller stopped waiting, and
/// ends the wait either way.
struct WaitGuard {
    svc: Arc<LockService>,
    conn: Connection,
    args: nlm4_cancargs,
    blocked: bool,
    done: bool,
}

impl WaitGuard {
    fn finish(&mut self, granted: bool) {
        self.done = true;
        self.svc.waiters().done(&self.args.alock, granted);
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.svc.waiters().done(&self.args.alock, false);
        if !self.blocked {
            return;
        }
        // The server would grant a lock nobody waits for any more.
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let (conn, args) = (self.conn.clone(), xdr::to_bytes(&self.args));
        rt.spawn(async move {
            if let Err(e) = conn.call(NLM_PROG, NLM_V4, NLM_CANCEL, vec![args]).await {
                tracing::debug!("NLM_CANCEL of a lock no longer waited for: {e}");
            }
        });
    }
}

/// The NLM lock of `owner` on `fh` over `[offset, offset + length)`.
fn make_alock(
    caller_name: &Bytes,
    svids: &Mutex<HashMap<u64, u32>>,
    fh: &Bytes,
    owner: u64,
    offset: u64,
    length: u64,
) -> nlm4_lock {
    let svid = *svids.lock().entry(owner).or_insert_with(|| NEXT_SVID.fetch_add(1, Ordering::Relaxed));
    let mut oh = std::process::id().to_be_bytes().to_vec();
    oh.extend_from_slice(&owner.to_be_bytes());
    nlm4_lock {
        caller_name: caller_name.clone(),
        fh: fh.clone(),
        oh: Bytes::from(oh),
        svid,
        l_offset: offset,
        l_len: nlm_len(length),
    }
}

/// NFSv4's (offset, length `u64::MAX` = to the end) as NLM's (offset,
/// length 0 = to the end).
fn nlm_len(length: u64) -> u64 {
    if length == u64::MAX {
        NLM_TO_END
    } else {
        length
    }
}

fn conflict(h: &nlm4_holder) -> LockConflict {
    let length = if h.l_len == NLM_TO_END { u64::MAX } else { h.l_len };
    LockConflict { offset: h.l_offset, length, write: h.exclusive }
}

/// An NLM status other than granted or denied, as an error.
fn failed(proc_: &'static str, stat: nlm4_stats) -> Error {
    Error::Nlm { proc: proc_, status: stat }
}

impl Nlm {
    /// `addr`: the server's NLM v4 service over TCP, None when its
    /// portmapper did not know one (locks then fail with NOTSUPP).
    pub fn new(
        addr: Option<SocketAddr>,
        portmap: SocketAddr,
        params: ConnParams,
        caller_name: &str,
        retry: RetrySettings,
        lockd: LockServiceSettings,
    ) -> Nlm {
        Nlm {
            addr,
            portmap,
            params,
            conn: OnceCell::new(),
            caller_name: Bytes::copy_from_slice(caller_name.as_bytes()),
            retry,
            cookie: AtomicU64::new(1),
            svids: Default::default(),
            held: Default::default(),
            reclaims: Default::default(),
            lockd,
            service: OnceCell::new(),
        }
    }

    /// The lock service servers can call back, if it runs and registered
    /// (or joined the process's of this host that did).
    async fn lock_service(&self) -> Option<Arc<LockService>> {
        if !self.lockd.callbacks {
            return None;
        }
        let svc = self
            .service
            .get_or_init(|| async {
                let svc = match LockService::get(self.lockd.listen) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::info!("{e}; blocked locks are asked for again instead of granted by callback");
                        return None;
                    }
                };
                if let (Some(addr), Ok(conn)) = (self.addr, self.conn().await) {
                    let r = reclaim::Reclaimer {
                        server: addr.ip(),
                        conn: conn.clone(),
                        caller_name: self.caller_name.clone(),
                        svids: self.svids.clone(),
                        held: Arc::downgrade(&self.held),
                        counts: self.reclaims.clone(),
                        retry: self.retry.clone(),
                    };
                    r.watch(&svc);
                }
                Some(svc)
            })
            .await
            .clone()?;
        // Asked each time: a registration that failed is tried again.
        svc.register(&self.lockd, &self.params).await.then_some(svc)
    }

    /// LOCK with `block` set, then the wait for the server's GRANTED.
    async fn lock_by_callback(&self, svc: Arc<LockService>, alock: nlm4_lock, write: bool) -> Result<Waited> {
        // Only the server asked may grant it.
        let Some(server) = self.addr.map(|a| a.ip()) else { return Ok(Waited::NotQueued) };
        let wait = svc.waiters().expect(&alock, server);
        let conn = self.conn().await?.clone();
        let cancel = nlm4_cancargs { cookie: self.cookie(), block: true, exclusive: write, alock: alock.clone() };
        let mut guard = WaitGuard { svc, conn, args: cancel, blocked: false, done: false };
        let mut grace = Backoff::new(&self.retry);
        let repoll = Duration::from_secs(self.lockd.repoll_secs.max(1));
        loop {
            let args = nlm4_lockargs {
                cookie: self.cookie(),
                block: true,
                exclusive: write,
                alock: alock.clone(),
                reclaim: false,
                state: nsm_state(),
            };
            let res: nlm4_res = self.call(NLM_LOCK, &args).await?;
            match res.stat.stat {
                nlm4_stats::nlm4_granted => {
                    self.answer_grant_msg(&wait).await;
                    guard.finish(true);
                    return Ok(Waited::Granted);
                }
                nlm4_stats::nlm4_blocked => {
                    guard.blocked = true;
                    if wait.granted_within(repoll).await {
                        self.answer_grant_msg(&wait).await;
                        guard.finish(true);
                        return Ok(Waited::Granted);
                    }
                }
                nlm4_stats::nlm4_denied => {
                    guard.finish(false);
                    return Ok(Waited::NotQueued);
                }
                nlm4_stats::nlm4_denied_grace_period => match grace.next_wait() {
                    Some(pause) => tokio::time::sleep(Duration::from_nanos(pause)).await,
                    None => return Err(failed("NLM_LOCK", res.stat.stat)),
                },
                other => return Err(failed("NLM_LOCK", other)),
            }
        }
    }

    /// A grant that came by message (GRANTED_MSG, NFS-Ganesha's way even
    /// for LOCK) is answered with GRANTED_RES before the caller goes on:
    /// the server holds the lock half-granted until then, and an UNLOCK
    /// that overtook the answer would leave it waiting for one.
    async fn answer_grant_msg(&self, wait: &Wait) {
        let Some(cookie) = wait.granted_by_message() else { return };
        let res = nlm4_res { cookie, stat: nlm4_stat { stat: nlm4_stats::nlm4_granted } };
        if let Err(e) = self.call::<_, ()>(NLM_GRANTED_RES, &res).await {
            tracing::debug!("NLM_GRANTED_RES: {e}");
        }
    }

    async fn conn(&self) -> Result<&Connection> {
        let Some(addr) = self.addr else {
            return Err(Error::Nfs { proc: "NLM_LOCK", status: proto::nfs3::nfsstat3::NFS3ERR_NOTSUPP });
        };
        self.conn
            .get_or_try_init(|| async {
                Connection::connect(ConnParams { addr, ..self.params.clone() })
                    .await
                    .map_err(|e| Error::Connect { what: format!("lock manager (NLM) at {addr}"), why: e.to_string() })
            })
            .await
    }

    async fn call<A: Encode, R: Decode>(&self, proc_: u32, args: &A) -> Result<R> {
        let name = procedure_name(NLM_PROG, NLM_V4, proc_);
        let mut e = Encoder::new();
        args.encode(&mut e);
        let reply = self
            .conn()
            .await?
            .call(NLM_PROG, NLM_V4, proc_, e.into_segments())
            .await
            .map_err(|err| Error::Rpc { proc: name, err })?;
        R::decode(&mut Decoder::new(reply)).map_err(|e| Error::Decode { proc: name, why: e.to_string() })
    }

    fn cookie(&self) -> Bytes {
        Bytes::copy_from_slice(&self.cookie.fetch_add(1, Ordering::Relaxed).to_be_bytes())
    }

    fn alock(&self, fh: &Bytes, owner: u64, offset: u64, length: u64) -> nlm4_lock {
        make_alock(&self.caller_name, &self.svids, fh, owner, offset, length)
    }

    /// Records a lock the server granted.
    fn granted(&self, fh: &Bytes, owner: u64, offset: u64, length: u64, write: bool) {
        self.held.lock().record(fh, owner, offset, range_end(offset, length), write);
        let server = MonitoredServer {
            caller: self.caller_name.clone(),
            state: nsm_state(),
            portmap: self.portmap,
            nlm: self.addr,
        };
        monitor_record(&self.lockd, &self.params, server);
    }

    /// LOCK `[offset, offset + length)` (`length` `u64::MAX`: to the end)
    /// for `owner`. Returns the lock in the way when it is held elsewhere
    /// and `wait` is false; with `wait` asks again until it is granted.
    /// A server in its grace period is asked again the same way.
    pub async fn lock(
        &self,
        fh: &Bytes,
        owner: u64,
        offset: u64,
        length: u64,
        write: bool,
        wait: bool,
    ) -> Result<Option<LockConflict>> {
        // Started at the first lock, waiting or not: the service is also
        // where the server's restart is told, for any lock held.
        let svc = self.lock_service().await;
        if wait {
            if let Some(svc) = svc {
                let alock = self.alock(fh, owner, offset, length);
                if let Waited::Granted = self.lock_by_callback(svc, alock, write).await? {
                    self.granted(fh, owner, offset, length, write);
                    return Ok(None);
                }
            }
        }
        let poll = RetrySettings { delay_max_ms: LOCK_POLL_MAX.as_millis() as u64, ..self.retry.clone() };
        let mut grace = Backoff::new(&poll);
        let mut held = Backoff::new(&RetrySettings { give_up_ms: u64::MAX, ..poll.clone() });
        loop {
            let args = nlm4_lockargs {
                cookie: self.cookie(),
                block: false,
                exclusive: write,
                alock: self.alock(fh, owner, offset, length),
                reclaim: false,
                state: nsm_state(),
            };
            let res: nlm4_res = self.call(NLM_LOCK, &args).await?;
            let pause = match res.stat.stat {
                nlm4_stats::nlm4_granted => {
                    self.granted(fh, owner, offset, length, write);
                    return Ok(None);
                }
                // Who holds it, for the caller (fcntl F_SETLK only needs
                // to know that someone does); if nobody does any more, the
                // lock is asked for again.
                nlm4_stats::nlm4_denied | nlm4_stats::nlm4_blocked if !wait => {
                    if let Some(found) = self.test_lock(fh, owner, offset, length, write).await? {
                        return Ok(Some(found));
                    }
                    held.next_wait()
                }
                nlm4_stats::nlm4_denied | nlm4_stats::nlm4_blocked => held.next_wait(),
                nlm4_stats::nlm4_denied_grace_period => grace.next_wait(),
                other => return Err(failed("NLM_LOCK", other)),
            };
            let Some(pause) = pause else { return Err(failed("NLM_LOCK", res.stat.stat)) };
            tokio::time::sleep(Duration::from_nanos(pause)).await;
        }
    }

    /// TEST: the lock standing in the way of one `owner` would take, if any.
    pub async fn test_lock(
        &self,
        fh: &Bytes,
        owner: u64,
        offset: u64,
        length: u64,
        write: bool,
    ) -> Result<Option<LockConflict>> {
        let mut grace = Backoff::new(&self.retry);
        loop {
            let args =
                nlm4_testargs { cookie: self.cookie(), exclusive: write, alock: self.alock(fh, owner, offset, length) };
            let res: nlm4_testres = self.call(NLM_TEST, &args).await?;
            match res.stat {
                nlm4_testrply::nlm4_denied(h) => return Ok(Some(conflict(&h))),
                nlm4_testrply::default(nlm4_stats::nlm4_granted) => return Ok(None),
                nlm4_testrply::default(nlm4_stats::nlm4_denied_grace_period) => match grace.next_wait() {
                    Some(pause) => tokio::time::sleep(Duration::from_nanos(pause)).await,
                    None => return Err(failed("NLM_TEST", nlm4_stats::nlm4_denied_grace_period)),
                },
                nlm4_testrply::default(other) => return Err(failed("NLM_TEST", other)),
            }
        }
    }

    /// UNLOCK of `[offset, offset + length)` for `owner`; nothing is sent
    /// when the owner holds no lock on the file.
    pub async fn unlock(&self, fh: &Bytes, owner: u64, offset: u64, length: u64) -> Result<()> {
        if !self.held.lock().holds(fh, Some(owner)) {
            return Ok(());
        }
        let args = nlm4_unlockargs { cookie: self.cookie(), alock: self.alock(fh, owner, offset, length) };
        if let Some(Some(svc)) = self.service.get() {
            svc.waiters().released(fh, &args.alock.oh);
        }
        let res: nlm4_res = self.call(NLM_UNLOCK, &args).await?;
        match res.stat.stat {
            // Unlocking what is not locked is not an error in POSIX.
            nlm4_stats::nlm4_granted | nlm4_stats::nlm4_denied => {}
            other => return Err(failed("NLM_UNLOCK", other)),
        }
        self.held.lock().unlock(fh, owner, offset, range_end(offset, length));
        Ok(())
    }

    /// Whether some owner of this client may hold a lock on `fh`.
    pub fn has_lock_state(&self, fh: &Bytes) -> bool {
        self.held.lock().holds(fh, None)
    }

    /// Locks reclaimed after server restarts, and locks lost there.
    pub fn reclaim_counts(&self) -> (u64, u64) {
        self.reclaims.get()
    }

    /// Whether the server has a lock manager this client can reach.
    pub fn available(&self) -> bool {
        self.addr.is_some()
    }

    /// Counters of the lock manager's connection (none before a lock).
    pub fn stats(&self) -> Stats {
        self.conn.get().map(|c| c.stats()).unwrap_or_default()
    }
}

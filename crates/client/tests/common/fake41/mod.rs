//! A scripted NFSv4.1 server for the client's virtual-time tests: it
//! speaks enough of RFC 8881 for a mount, opens, I/O, delegations and
//! session recovery, keeps every compound it saw, and lets a test inject
//! faults, hold replies back, send CB_RECALL on the back channel, let a
//! client's lease expire, or reboot.
//!
//! It runs on the test's runtime so that tokio's paused clock only moves
//! when client and server are both idle. Nothing in it sleeps: it acts on
//! requests as they come and on the test's calls, so virtual time is the
//! client's alone (lease renewal, backoff) plus the test's own sleeps.
#![allow(dead_code)]

mod files;
mod script;
mod session;
mod state;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::nfs4::CB_COMPOUND4res;
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

#[allow(unused_imports)]
pub use files::handle;
pub use script::{Fault, Match, Seen};
pub use state::State;

/// Client settings for a test on the paused clock. The transport measures
/// its retransmission timeouts on the wall clock (std::time::Instant) but
/// sleeps on tokio's: with the clock paused the two disagree, so they are
/// put out of reach. Nothing here depends on a retransmission; a lost
/// reply is a closed connection.
#[allow(dead_code)]
pub fn virtual_settings() -> client::ClientSettings {
    let mut s = client::ClientSettings::default();
    s.rpc.timeout_ms = 24 * 3600 * 1000;
    s.rpc.max_timeout_ms = s.rpc.timeout_ms;
    s.connect_timeout_ms = 3600 * 1000;
    s.machine_name = Some("virtual".into());
    s
}

/// A test that hangs fails after ten virtual minutes, which the paused
/// clock reaches in a moment of wall time.
#[allow(dead_code)]
pub async fn within<T>(test: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(600), test).await.expect("hung for 600 virtual seconds")
}

/// How far the paused clock may jump at once. Tokio advances it whenever
/// every task waits, also while bytes are in the kernel between client
/// and server (a loopback write is normally readable at once, but not on
/// a loaded machine): a timer this often keeps such a jump from reaching
/// a far timer (a test's timeout, a lease renewal) early.
const TICK: Duration = Duration::from_millis(10);

pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// Signalled whenever the state changed (a call, a callback reply, a
    /// connection gone), for `Fake::until`.
    pub changed: Notify,
}

pub struct Fake {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Fake {
    /// Listens on 127.0.0.1, with `setup` applied to a default state.
    pub async fn start(setup: impl FnOnce(&mut State)) -> Fake {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let mut state = State::default();
        setup(&mut state);
        let shared = Arc::new(Shared { state: Mutex::new(state), changed: Notify::new() });
        let accept = tokio::spawn(wire::accept(listener, shared.clone()));
        let ticker = tokio::spawn(async {
            loop {
                tokio::time::sleep(TICK).await;
            }
        });
        Fake { addr, shared, tasks: vec![accept, ticker] }
    }

    /// The export over NFSv4.1.
    pub fn url(&self) -> String {
        format!("nfs://127.0.0.1:{}/export?version=4.1", self.addr.port())
    }

    /// Reads or changes the state (knobs, files) under its lock.
    pub fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let r = f(&mut self.shared.state.lock());
        self.shared.changed.notify_waiters();
        r
    }

    /// Where the log is now, to look at what comes after.
    pub fn mark(&self) -> usize {
        self.shared.state.lock().log.len()
    }

    /// The compounds received since `mark`.
    pub fn since(&self, mark: usize) -> Vec<Seen> {
        self.shared.state.lock().log[mark..].to_vec()
    }

    /// Waits until `cond` holds; only state changes wake it, so it takes
    /// no virtual time of its own.
    pub async fn until(&self, cond: impl Fn(&State) -> bool) {
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if cond(&self.shared.state.lock()) {
                return;
            }
            changed.await;
        }
    }

    /// `fault` for the next compound that `m` matches (once).
    pub fn inject(&self, m: Match, fault: Fault) {
        self.with(|s| s.faults.push((m, fault)));
    }

    /// Replies to compounds that `m` matches are kept back until
    /// [`Fake::release`] (None: no more holding).
    pub fn hold(&self, m: Option<Match>) {
        self.with(|s| s.hold = m);
    }

    /// Sends every reply held back, in the order the calls came.
    pub fn release(&self) {
        self.with(State::release);
    }

    /// Sends the oldest held reply only.
    pub fn release_one(&self) {
        self.with(|s| {
            let rest = s.held.split_off(1.min(s.held.len()));
            s.release();
            s.held = rest;
        });
    }

    /// The server loses every session (not the clients): the next
    /// SEQUENCE on one gets NFS4ERR_BADSESSION.
    pub fn lose_sessions(&self) {
        self.with(|s| s.sessions.clear());
    }

    /// CB_COMPOUND (CB_SEQUENCE, CB_RECALL) for the delegation on `fh`,
    /// on its session's back channel; the client's answer.
    pub async fn recall(&self, fh: &Bytes) -> CB_COMPOUND4res {
        let rx: oneshot::Receiver<CB_COMPOUND4res> = self.with(|s| {
            let (conn, record, rx) = s.cb_recall(fh).expect("a recallable delegation");
            s.conns.get(&conn).expect("back channel connection").out.send(record).expect("connection open");
            rx
        });
        rx.await.expect("the client answered CB_COMPOUND")
    }

    /// CB_COMPOUND (CB_SEQUENCE, CB_NOTIFY of `changes`) for the
    /// delegation on the directory `fh`; the client's answer.
    pub async fn notify(&self, fh: &Bytes, changes: Vec<proto::nfs4::notify4>) -> CB_COMPOUND4res {
        let rx: oneshot::Receiver<CB_COMPOUND4res> = self.with(|s| {
            let (conn, record, rx) = s.cb_notify(fh, changes).expect("a delegation on the directory");
            s.conns.get(&conn).expect("back channel connection").out.send(record).expect("connection open");
            rx
        });
        rx.await.expect("the client answered CB_COMPOUND")
    }

    /// CB_COMPOUND (CB_SEQUENCE and the operation `op` makes of the
    /// stateid of the delegation on `fh`, and `fh`); the client's answer.
    pub async fn callback(
        &self,
        fh: &Bytes,
        op: impl FnOnce(proto::nfs4::stateid4, Bytes) -> proto::nfs4::nfs_cb_argop4,
    ) -> CB_COMPOUND4res {
        let rx: oneshot::Receiver<CB_COMPOUND4res> = self.with(|s| {
            let (conn, record, rx) = s.cb_about(fh, op).expect("a delegation");
            s.conns.get(&conn).expect("back channel connection").out.send(record).expect("connection open");
            rx
        });
        rx.await.expect("the client answered CB_COMPOUND")
    }

    /// The client's lease expired: the server forgets it, its sessions
    /// and state (RFC 8881 section 8.4.3).
    pub fn expire_clients(&self) {
        self.with(|s| {
            let ids: Vec<u64> = s.clients.values().map(|c| c.clientid).collect();
            for id in ids {
                s.forget_client(id);
            }
        });
    }

    /// The server restarts: connections drop with whatever replies were
    /// held, clients, sessions and stateids are forgotten (files stay),
    /// and a grace period of `grace` begins.
    pub fn reboot(&self, grace: Duration) {
        self.with(|s| {
            s.held.clear();
            s.hold = None;
            s.boot += 1;
            s.clients.clear();
            s.sessions.clear();
            s.stateids.clear();
            s.cb_waiting.clear();
            s.grace_until = Some(tokio::time::Instant::now() + grace);
            for c in s.conns.values() {
                c.kill.notify_one();
            }
        });
    }

    pub fn file(&self, name: &str) -> Option<Vec<u8>> {
        self.with(|s| s.file(name))
    }

    pub fn violations(&self) -> Vec<String> {
        self.with(|s| s.violations.clone())
    }
}

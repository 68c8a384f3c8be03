//! The calls NLM makes to clients' lock managers: the results of the
//! `_MSG` procedures (TEST_RES, LOCK_RES, ...) and NLM_GRANTED (or
//! GRANTED_MSG) for a blocked request the lock manager granted; and NSM's
//! SM_NOTIFY to the status monitor of every host that held locks before
//! a restart, which has it reclaim them. Each is a
//! job with its own id, sent through the core's [`Outbound`] transport
//! and retried on the core's clock ([`Core::nlm_tick`]); nothing here
//! holds a lock while a call is handed over, and no file's shard is held
//! while the jobs are.
//!
//! A grant the client does not acknowledge is sent again with a growing
//! wait, `grant_retries` times, and then given up: the lock is released,
//! which grants the range to the next waiter. A client that answers
//! anything but `granted` (it no longer waits) has the lock released at
//! once, as Linux's lockd does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use proto::nlm::*;
use xdr::Decode;

use super::blocked::GrantTo;
use super::settings::NlmSettings;
use crate::exports::canonical_ip;
use crate::outbound::{self, OutCall, OutReply, Outbound};
use crate::state::lockmgr::{Granted, LockOwner};
use crate::state::FileKey;
use crate::{Core, PeerInfo};

/// Where a client's lock manager is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub host: IpAddr,
    /// Our address the client reached us on, to call from.
    pub from: IpAddr,
    /// The port a lock manager on our own host registered with our
    /// portmapper; `None`: ask the client host's portmapper.
    pub port: Option<u16>,
}

impl Target {
    /// The lock manager of the host `peer` called from.
    pub fn of(core: &Core, peer: &PeerInfo) -> Target {
        let port = if crate::portmap::registry::is_local(peer) {
            core.local_callback_port(NLM_PROG, super::VERSION, "tcp")
        } else {
            None
        };
        Target { host: canonical_ip(peer.addr.ip()), from: canonical_ip(peer.local.ip()), port }
    }
}

/// A granted blocked request being told.
struct GrantJob {
    file: FileKey,
    owner: LockOwner,
    start: u64,
    end: u64,
    to: Arc<GrantTo>,
    /// Unanswered sends so far.
    attempts: u32,
    /// Sent with GRANTED_MSG, whose void reply came: the client's
    /// GRANTED_RES is awaited until then.
    awaiting_res: Option<Duration>,
}

enum What {
    /// A `_MSG` call's result; tries left.
    Result {
        tries_left: u32,
    },
    Grant(Box<GrantJob>),
    /// SM_NOTIFY of our restart to the host `name`, sent until it is
    /// answered or `until`.
    Notify {
        name: Bytes,
        attempts: u32,
        until: Duration,
    },
}

/// One call to make.
struct Job {
    target: Target,
    prog: u32,
    vers: u32,
    record: Vec<Bytes>,
    xid: u32,
    /// Handed to the transport, its end not reported yet (or, for
    /// GRANTED_MSG, its GRANTED_RES not come yet).
    in_flight: bool,
    /// When to send it (again); `None` while in flight.
    next_at: Option<Duration>,
    what: What,
}

#[derive(Default)]
struct Inner {
    jobs: HashMap<u64, Job>,
    next_id: u64,
}

/// How grants ended, for metrics.
#[derive(Debug, Default)]
pub(crate) struct GrantCounts {
    /// Acknowledged by the client.
    pub acknowledged: AtomicU64,
    /// Refused by the client (it no longer waited): the lock released.
    pub refused: AtomicU64,
    /// Never acknowledged after every try: the lock released.
    pub given_up: AtomicU64,
}

/// The NLM calls in progress.
pub(crate) struct NlmCalls {
    out: Arc<dyn Outbound>,
    pub settings: NlmSettings,
    inner: Mutex<Inner>,
    /// Jobs are due (read after every request, without the lock).
    ready: AtomicBool,
    /// Some job is not finished.
    busy: AtomicBool,
    pub grants: GrantCounts,
    /// SM_NOTIFY calls answered, and given up.
    pub notifies: (AtomicU64, AtomicU64),
    /// Hosts whose SM_NOTIFY ended (answered or given up), for the core
    /// to stop monitoring.
    notified: Mutex<Vec<Bytes>>,
}

/// What finishing a job leaves the core to do, with no lock held.
pub(crate) struct Release {
    pub file: FileKey,
    pub owner: LockOwner,
    pub start: u64,
    pub end: u64,
}

impl NlmCalls {
    pub fn new(out: Arc<dyn Outbound>, settings: NlmSettings, first_id: u64) -> NlmCalls {
        let inner = Inner { next_id: first_id.max(1), ..Inner::default() };
        NlmCalls {
            out,
            settings,
            inner: Mutex::new(inner),
            ready: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            grants: GrantCounts::default(),
            notifies: Default::default(),
            notified: Default::default(),
        }
    }

    /// Whether calls to clients can be made at all.
    pub fn can_call(&self) -> bool {
        self.out.can_call()
    }

    fn add(&self, inner: &mut Inner, target: Target, proc_: u32, args: Bytes, what: What, now: Duration) {
        self.add_call(inner, target, (NLM_PROG, super::VERSION, proc_), args, what, now);
    }

    fn add_call(
        &self,
        inner: &mut Inner,
        target: Target,
        (prog, vers, proc_): (u32, u32, u32),
        args: Bytes,
        what: What,
        now: Duration,
    ) {
        let id = inner.next_id;
        inner.next_id += 1;
        // The xid is the id's low half: ids are consecutive, so no two
        // calls in flight share one.
        let xid = id as u32;
        let machine = target.from.to_string();
        let record = outbound::call_record(xid, prog, vers, proc_, machine.as_bytes(), args);
        inner.jobs.insert(id, Job { target, prog, vers, record, xid, in_flight: false, next_at: Some(now), what });
        self.ready.store(true, Ordering::Release);
        self.busy.store(true, Ordering::Release);
    }

    /// Queues the call of procedure `proc_` with `args` to `target`'s
    /// lock manager (a `_MSG` call's result), tried `result_tries`
    /// times; sent once the request ends.
    pub fn queue_result(&self, target: Target, proc_: u32, args: Bytes, now: Duration) {
        let tries_left = self.settings.result_tries;
        self.add(&mut self.inner.lock(), target, proc_, args, What::Result { tries_left }, now);
    }

    /// Queues the news of granted blocked requests.
    pub fn queue_grants(&self, granted: Vec<Granted>, now: Duration) {
        let mut inner = self.inner.lock();
        for g in granted {
            let to = g.grant;
            let args = nlm4_testargs { cookie: to.cookie.clone(), exclusive: to.exclusive, alock: to.lock.clone() };
            let proc_ = if to.msg { NLM_GRANTED_MSG } else { NLM_GRANTED };
            let job = GrantJob {
                file: g.file,
                owner: g.owner,
                start: g.start,
                end: g.end,
                to: to.clone(),
                attempts: 0,
                awaiting_res: None,
            };
            self.add(&mut inner, to.target.clone(), proc_, xdr::to_bytes(&args), What::Grant(Box::new(job)), now);
        }
    }

    /// Queues SM_NOTIFY of our restart, with NSM state `state`, to each of
    /// `hosts` (those monitored before it), named by the address it called
    /// us at, from that address.
    /// `port_of`: the port of a host's status monitor when known (one on
    /// our own host that registered with us).
    pub fn queue_notifies(
        &self,
        hosts: Vec<crate::NsmHost>,
        state: i32,
        now: Duration,
        port_of: impl Fn(&crate::NsmHost) -> Option<u16>,
    ) {
        let mut inner = self.inner.lock();
        let until = now + Duration::from_secs(self.settings.notify_give_up_secs.into());
        for h in hosts {
            let Some(host) = h.addr else {
                tracing::info!(host = %String::from_utf8_lossy(&h.name), "NSM: no address to notify");
                self.notified.lock().push(h.name);
                continue;
            };
            let from = h.local.unwrap_or(if host.is_ipv4() {
                IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
            } else {
                IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
            });
            let mon_name = Bytes::from(h.local.map_or_else(|| host.to_string(), |l| l.to_string()).into_bytes());
            let args = xdr::to_bytes(&proto::nsm::stat_chge { mon_name, state });
            let target = Target { host, from, port: port_of(&h) };
            let call = (proto::nsm::SM_PROG, proto::nsm::SM_VERS, proto::nsm::SM_NOTIFY);
            self.add_call(&mut inner, target, call, args, What::Notify { name: h.name, attempts: 0, until }, now);
        }
    }

    /// Hosts whose SM_NOTIFY ended since the last look.
    pub fn take_notified(&self) -> Vec<Bytes> {
        std::mem::take(&mut *self.notified.lock())
    }

    fn out_call(&self, id: u64, job: &Job) -> OutCall {
        OutCall {
            id,
            host: job.target.host,
            from: job.target.from,
            prog: job.prog,
            vers: job.vers,
            udp: false,
            port: job.target.port,
            portmap_port: self.settings.client_portmap_port,
            record: job.record.clone(),
            timeout: self.timeout(),
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.settings.callback_timeout_ms.into())
    }

    /// Hands every due job to the transport; what failing to start a
    /// call leaves to release.
    pub fn send_due(&self, now: Duration) -> Vec<Release> {
        // A load first: this runs after every request, and a swap would
        // write the shared line each time.
        if !self.ready.load(Ordering::Acquire) || !self.ready.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        let calls: Vec<OutCall> = {
            let mut inner = self.inner.lock();
            let mut calls = Vec::new();
            for (id, job) in inner.jobs.iter_mut() {
                if job.in_flight || job.next_at.is_none_or(|at| at > now) {
                    continue;
                }
                job.in_flight = true;
                job.next_at = None;
                calls.push(self.out_call(*id, job));
            }
            calls
        };
        let mut releases = Vec::new();
        for c in calls {
            let id = c.id;
            if !self.out.send(c) {
                releases.extend(self.done(id, OutReply::Unreachable, now));
            }
        }
        releases
    }

    /// The end of call `id`.
    pub fn done(&self, id: u64, r: OutReply, now: Duration) -> Vec<Release> {
        let mut inner = self.inner.lock();
        let Some(job) = inner.jobs.get_mut(&id) else { return Vec::new() };
        if !job.in_flight || job.next_at.is_some() {
            return Vec::new();
        }
        let results = match &r {
            OutReply::Reply(record) => outbound::results(job.xid, record.clone()),
            _ => None,
        };
        let timeout = self.timeout();
        let outcome = match &mut job.what {
            What::Result { tries_left } => {
                *tries_left = tries_left.saturating_sub(1);
                if results.is_some() || *tries_left == 0 {
                    if results.is_none() {
                        tracing::info!(host = %job.target.host, reply = ?r, "an NLM result could not be sent to the client's lock manager");
                    }
                    Step::Finish(None)
                } else {
                    // Again on the next tick, not at once: a host that is
                    // down is not hammered.
                    Step::Retry(now)
                }
            }
            What::Grant(g) => match results {
                // GRANTED_MSG was taken: its answer comes as GRANTED_RES.
                Some(_) if g.to.msg => {
                    g.awaiting_res = Some(now + timeout);
                    Step::Wait
                }
                Some(res) => match nlm4_res::decode(&mut xdr::Decoder::new(res)).map(|r| r.stat.stat) {
                    Ok(stat) => self.granted_answer(g, stat, now),
                    Err(_) => self.grant_unanswered(g, &job.target, now),
                },
                None => self.grant_unanswered(g, &job.target, now),
            },
            What::Notify { name, attempts, until } => {
                if results.is_some() {
                    self.notifies.0.fetch_add(1, Ordering::Relaxed);
                    self.notified.lock().push(name.clone());
                    Step::Finish(None)
                } else if now >= *until {
                    tracing::warn!(host = %job.target.host, name = %String::from_utf8_lossy(name), reply = ?r,
                        "NSM: the host never took the news of this server's restart; no longer monitored");
                    self.notifies.1.fetch_add(1, Ordering::Relaxed);
                    self.notified.lock().push(name.clone());
                    Step::Finish(None)
                } else {
                    *attempts += 1;
                    let ms = u64::from(self.settings.grant_retry_ms)
                        .saturating_mul(1u64 << (*attempts - 1).min(20))
                        .min(self.settings.notify_retry_max_ms.into());
                    Step::Retry(now + Duration::from_millis(ms))
                }
            }
        };
        self.apply(&mut inner, id, outcome)
    }

    /// A client's answer to NLM_GRANTED (or its GRANTED_RES).
    fn granted_answer(&self, g: &mut GrantJob, stat: nlm4_stats, now: Duration) -> Step {
        match stat {
            nlm4_stats::nlm4_granted => {
                self.grants.acknowledged.fetch_add(1, Ordering::Relaxed);
                Step::Finish(None)
            }
            // The client restarted and reclaims first: ask again later,
            // not counting it.
            nlm4_stats::nlm4_denied_grace_period => Step::Retry(now + self.backoff(g.attempts.max(1))),
            other => {
                tracing::info!(caller = %String::from_utf8_lossy(&g.to.lock.caller_name), stat = ?other,
                    "the client refused a granted lock (it no longer waits); released");
                self.grants.refused.fetch_add(1, Ordering::Relaxed);
                Step::Finish(Some(release_of(g)))
            }
        }
    }

    /// NLM_GRANTED went unanswered (or was refused by RPC): sent again
    /// later, or given up.
    fn grant_unanswered(&self, g: &mut GrantJob, target: &Target, now: Duration) -> Step {
        g.attempts += 1;
        g.awaiting_res = None;
        if g.attempts >= self.settings.grant_retries {
            tracing::warn!(host = %target.host, caller = %String::from_utf8_lossy(&g.to.lock.caller_name),
                attempts = g.attempts, "a client never acknowledged a granted lock; the lock is released for the next waiter");
            self.grants.given_up.fetch_add(1, Ordering::Relaxed);
            return Step::Finish(Some(release_of(g)));
        }
        Step::Retry(now + self.backoff(g.attempts))
    }

    /// The wait before the send following `attempts` unanswered ones.
    fn backoff(&self, attempts: u32) -> Duration {
        let ms = u64::from(self.settings.grant_retry_ms)
            .saturating_mul(1u64 << attempts.saturating_sub(1).min(20))
            .min(self.settings.grant_retry_max_ms.into());
        Duration::from_millis(ms)
    }

    fn apply(&self, inner: &mut Inner, id: u64, step: Step) -> Vec<Release> {
        match step {
            Step::Wait => Vec::new(),
            Step::Retry(at) => {
                if let Some(job) = inner.jobs.get_mut(&id) {
                    job.in_flight = false;
                    job.next_at = Some(at);
                }
                Vec::new()
            }
            Step::Finish(release) => {
                inner.jobs.remove(&id);
                if inner.jobs.is_empty() {
                    self.busy.store(false, Ordering::Release);
                }
                release.into_iter().collect()
            }
        }
    }

    /// A GRANTED_RES from `host`: the answer to our GRANTED_MSG with
    /// `cookie`.
    pub fn granted_res(&self, host: IpAddr, cookie: &Bytes, stat: nlm4_stats, now: Duration) -> Vec<Release> {
        let mut inner = self.inner.lock();
        let found = inner.jobs.iter_mut().find_map(|(id, job)| match &mut job.what {
            What::Grant(g) if g.awaiting_res.is_some() && job.target.host == host && g.to.cookie == *cookie => {
                Some((*id, g))
            }
            _ => None,
        });
        let Some((id, g)) = found else { return Vec::new() };
        g.awaiting_res = None;
        let step = self.granted_answer(g, stat, now);
        self.apply(&mut inner, id, step)
    }

    /// Puts the jobs whose time came up to be sent; GRANTED_MSG whose
    /// GRANTED_RES did not come in time count as unanswered.
    pub fn tick(&self, now: Duration) -> Vec<Release> {
        let mut inner = self.inner.lock();
        let mut steps = Vec::new();
        let mut due = false;
        for (id, job) in inner.jobs.iter_mut() {
            if let What::Grant(g) = &mut job.what {
                if g.awaiting_res.is_some_and(|until| until <= now) {
                    steps.push((*id, self.grant_unanswered(g, &job.target, now)));
                    continue;
                }
            }
            due |= !job.in_flight && job.next_at.is_some_and(|at| at <= now);
        }
        let mut releases = Vec::new();
        for (id, step) in steps {
            due |= matches!(step, Step::Retry(at) if at <= now);
            releases.extend(self.apply(&mut inner, id, step));
        }
        if due {
            self.ready.store(true, Ordering::Release);
        }
        releases
    }

    /// Drops the grant being told of `owner`'s lock on `start..=end` of
    /// `file` (the client learnt it otherwise, or cancelled); whether
    /// there was one.
    pub fn forget_grant(&self, file: FileKey, owner: &LockOwner, start: u64, end: u64) -> bool {
        let mut inner = self.inner.lock();
        let id = inner.jobs.iter().find_map(|(id, job)| match &job.what {
            What::Grant(g) if g.file == file && g.owner == *owner && g.start == start && g.end == end => Some(*id),
            _ => None,
        });
        let Some(id) = id else { return false };
        self.apply(&mut inner, id, Step::Finish(None));
        true
    }

    /// Drops every grant being told to the host `caller` (it restarted:
    /// its locks are gone).
    pub fn forget_host(&self, caller: &[u8]) {
        let mut inner = self.inner.lock();
        inner.jobs.retain(|_, job| match &job.what {
            What::Grant(g) => !matches!(&g.owner, LockOwner::Nlm { caller: c, .. } if c[..] == *caller),
            What::Result { .. } | What::Notify { .. } => true,
        });
        if inner.jobs.is_empty() {
            self.busy.store(false, Ordering::Release);
        }
    }

    /// Whether some call is not finished.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }
}

/// What a job's end means for it.
enum Step {
    /// Done; the lock to release, if any.
    Finish(Option<Release>),
    /// Send again at this time.
    Retry(Duration),
    /// Still waiting for the client (GRANTED_RES).
    Wait,
}

fn release_of(g: &GrantJob) -> Release {
    Release { file: g.file, owner: g.owner.clone(), start: g.start, end: g.end }
}

impl Core {
    /// Gives the core a transport for calls to clients (see
    /// [`Outbound`]); without one NLM answers as a server that makes no
    /// calls. Call before serving, after [`Core::with_nfs4_env`].
    pub fn with_outbound(mut self, out: Arc<dyn Outbound>) -> Core {
        self.nlm = NlmCalls::new(out, self.settings.nlm.clone(), first_call_id(self.v4.boot));
        // The hosts that held locks before the restart hear of it now.
        if self.nlm.can_call() {
            let hosts = self.v4.nsm_take_before();
            if !hosts.is_empty() {
                tracing::info!(hosts = hosts.len(), state = self.v4.nsm_state(), "NSM: notifying hosts of the restart");
                // A host that is this one reaches its status monitor by
                // the registration it made with us.
                let port_of = |h: &crate::NsmHost| {
                    let local = h.addr.is_some_and(|a| a.is_loopback() || Some(a) == h.local);
                    if local {
                        self.local_callback_port(proto::nsm::SM_PROG, proto::nsm::SM_VERS, "tcp")
                    } else {
                        None
                    }
                };
                self.nlm.queue_notifies(hosts, self.v4.nsm_state(), self.v4.now(), port_of);
            }
        }
        self
    }

    /// The transport's report of the end of call `id`
    /// ([`OutCall::id`]). May block briefly on the core's locks: call it
    /// where blocking is allowed.
    pub fn outbound_done(&self, id: u64, r: OutReply) {
        let releases = self.nlm.done(id, r, self.v4.now());
        self.release_grants(releases);
        self.unmonitor_notified();
        self.send_nlm_calls();
    }

    /// Hosts told of the restart (or never reached) are monitored again
    /// only when they take a lock again, which a reclaim is.
    fn unmonitor_notified(&self) {
        for name in self.nlm.take_notified() {
            self.v4.nsm_unmonitor(&name);
        }
    }

    /// NSM: hosts monitored now, SM_NOTIFY calls answered and given up.
    pub fn nsm_counts(&self) -> (usize, u64, u64) {
        let n = &self.nlm.notifies;
        (self.v4.nsm_monitored(), n.0.load(Ordering::Relaxed), n.1.load(Ordering::Relaxed))
    }

    /// Drives the calls' retries and deadlines, and expires the NFSv4
    /// clients whose lapsed leases may hold blocked requests back; the
    /// transport calls it periodically while [`Core::nlm_busy`] says
    /// there is work.
    pub fn nlm_tick(&self) {
        if self.v4.nlm_blocked() > 0 {
            self.v4.tidy_if_due();
        }
        let releases = self.nlm.tick(self.v4.now());
        self.release_grants(releases);
        self.unmonitor_notified();
        self.send_nlm_calls();
    }

    /// Whether NLM has calls in progress or requests blocked, for
    /// [`Core::nlm_tick`] to drive.
    pub fn nlm_busy(&self) -> bool {
        self.nlm.busy() || self.v4.nlm_blocked() > 0
    }

    /// Blocked NLM lock requests waiting now.
    pub fn nlm_blocked(&self) -> usize {
        self.v4.nlm_blocked()
    }

    /// Grants of blocked NLM requests so far: acknowledged by the client,
    /// refused by it, given up after every try.
    pub fn nlm_grants(&self) -> (u64, u64, u64) {
        let g = &self.nlm.grants;
        (g.acknowledged.load(Ordering::Relaxed), g.refused.load(Ordering::Relaxed), g.given_up.load(Ordering::Relaxed))
    }

    /// Hands the calls queued by the request just run to the transport;
    /// two atomic loads when there are none.
    pub(crate) fn send_nlm_calls(&self) {
        let granted = self.v4.take_grants();
        let now = self.v4.now();
        if !granted.is_empty() {
            self.nlm.queue_grants(granted, now);
        }
        let releases = self.nlm.send_due(now);
        self.release_grants(releases);
    }

    /// Releases the locks of grants that ended without the client taking
    /// them (which may grant the next waiters, told in turn).
    pub(crate) fn release_grants(&self, releases: Vec<Release>) {
        for r in releases {
            self.v4.nlm_unlock(r.file, &r.owner, r.start, r.end);
        }
    }
}

/// The first call id of this server instance: its boot number in the
/// high bits of the xid, so that calls of a restarted server do not reuse
/// a recent instance's xids.
pub(crate) fn first_call_id(boot: u32) -> u64 {
    u64::from(boot & 0xffff) << 16
}

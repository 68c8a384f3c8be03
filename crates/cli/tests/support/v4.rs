//! A small NFSv4.1 client for the integration tests: one TCP connection
//! whose replies are matched to calls by xid, and whose server callbacks
//! are answered on the same connection (CB_NULL, and CB_COMPOUND with
//! CB_SEQUENCE + CB_RECALL, reporting each recall).
//!
//! Replies are read by a reader thread of the connection's own, or, for
//! the benchmarks (`Conn::connect_caller_driven`), by the callers
//! themselves: one caller at a time reads for all and hands the others
//! theirs, so a lone caller pays no wake-up of a reader thread and then
//! its own.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use proto::rpc::*;
// Only what the suites used from here before: these names are glob
// imported into function bodies, where they would shadow the callers'
// own (`name`, `ok`).
use test_support::nfs4::{
    channel, create_session_args, exchange_id_args, lock_new, open_args, without_sequence, Session,
};
pub use test_support::nfs4::{fh_res, ok as ok_res, opened, walk, Transport};
use xdr::{Decode, Decoder, Encode, Encoder};

pub const NFS4: u32 = 100003;
pub const CB_PROGRAM: u32 = 0x4000_0001;

/// A reply for its caller, or `None`: "read for everyone now" (passed on by
/// a caller that stops reading while others still wait).
type Pending = Arc<Mutex<HashMap<u32, mpsc::Sender<Option<Bytes>>>>>;

/// How long a caller that reads for everyone polls the socket before it
/// sleeps in `read`, as nfsx's client does for a lone caller
/// (`reply_poll_us`, same default): a reply within it costs no wake-up.
const REPLY_POLL: Duration = Duration::from_micros(500);
/// How often a caller-driven connection with no call in flight looks for
/// callbacks (nobody else reads it then).
const IDLE_CALLBACK_POLL: Duration = Duration::from_millis(10);
/// How long a call waits for its reply before the test fails.
const REPLY_LIMIT: Duration = Duration::from_secs(30);

/// A delegation recall the server sent.
#[derive(Debug, Clone)]
pub struct Recall {
    pub stateid: stateid4,
    pub fh: nfs_fh4,
    pub at: std::time::Instant,
}

pub struct Conn {
    writer: Arc<Mutex<TcpStream>>,
    pending: Pending,
    /// Set when callers read the replies (`connect_caller_driven`).
    reader: Option<Mutex<TcpStream>>,
    /// Where a record read is taken apart.
    inbox: Inbox,
    xid: AtomicU32,
    pub recalls: Mutex<mpsc::Receiver<Recall>>,
    /// When set, recalled delegations are returned at once, as a real
    /// client does, on this (session, slot) — else recalls are only
    /// reported through `recalls`.
    pub auto_return: Mutex<Option<AutoReturn>>,
    /// The next this many CB_RECALLs are answered NFS4ERR_BADHANDLE (as a
    /// client answers a recall that overtook the OPEN reply granting the
    /// delegation); they are reported all the same.
    pub refuse_recalls: Arc<AtomicU32>,
    /// How CB_GETATTR is answered (as a write delegation's holder).
    pub cb_getattr: Arc<Mutex<CbGetattr>>,
}

/// How a client answers CB_GETATTR.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CbGetattr {
    /// NFS4ERR_NOTSUPP: the server's attributes stand.
    #[default]
    NotSupp,
    /// The holder's size and change.
    Attrs { size: u64, change: u64 },
    /// No answer at all (the whole CB_COMPOUND goes unanswered).
    Silent,
}

/// The session's slot kept for returning recalled delegations: the
/// callback thread sends on it while callers hold the other slots.
#[derive(Debug)]
pub struct AutoReturn {
    pub session: Session,
    pub slot: u32,
}

/// DELEGRETURN for a recall, on the connection's reserved slot.
fn return_delegation(conn: &Conn, recall: Recall) {
    let ops = vec![
        nfs_argop4::OP_PUTFH(PUTFH4args { object: recall.fh }),
        nfs_argop4::OP_DELEGRETURN(DELEGRETURN4args { deleg_stateid: recall.stateid }),
    ];
    let (minor, ops) = {
        let mut a = conn.auto_return.lock().unwrap();
        let Some(a) = a.as_mut() else { return };
        (a.session.minor, a.session.sequenced(a.slot, a.slot, ops))
    };
    let r = conn.compound(minor, ops);
    assert_eq!(r.status, nfsstat4::NFS4_OK, "DELEGRETURN after a recall failed: {r:?}");
}

fn cred() -> opaque_auth {
    let p = proto::rpc::authsys_parms {
        stamp: 1,
        machinename: Bytes::from_static(b"nfsx-test"),
        uid: 0,
        gid: 0,
        gids: vec![0],
    };
    opaque_auth { flavor: proto::rpc::auth_flavor::AUTH_SYS, body: xdr::to_bytes(&p) }
}

fn none() -> opaque_auth {
    opaque_auth { flavor: proto::rpc::auth_flavor::AUTH_NONE, body: Bytes::new() }
}

fn write_record(w: &Mutex<TcpStream>, body: &[u8]) {
    let mut rec = Vec::with_capacity(body.len() + 4);
    rec.extend_from_slice(&(0x8000_0000u32 | body.len() as u32).to_be_bytes());
    rec.extend_from_slice(body);
    let _ = w.lock().unwrap().write_all(&rec);
}

fn read_record(r: &mut TcpStream) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let mut h = [0u8; 4];
        r.read_exact(&mut h).ok()?;
        let h = u32::from_be_bytes(h);
        let mut frag = vec![0u8; (h & 0x7fff_ffff) as usize];
        r.read_exact(&mut frag).ok()?;
        out.extend_from_slice(&frag);
        if h & 0x8000_0000 != 0 {
            return Some(out);
        }
    }
}

/// Answers one callback: CB_NULL with nothing, CB_COMPOUND with OK for
/// CB_SEQUENCE (echoing it) and CB_RECALL (reporting it).
fn answer_callback(
    msg: rpc_msg,
    d: &mut Decoder,
    w: &Mutex<TcpStream>,
    recalls: &mpsc::Sender<Recall>,
    refuse: &AtomicU32,
    cb_getattr: CbGetattr,
) {
    let rpc_msg_body::CALL(call) = msg.body else { return };
    let mut e = Encoder::new();
    let reply = rpc_msg {
        xid: msg.xid,
        body: rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(accepted_reply {
            verf: none(),
            reply_data: reply_data::SUCCESS,
        })),
    };
    reply.encode(&mut e);
    if call.proc == 1 {
        let Ok(args) = CB_COMPOUND4args::decode(d) else { return };
        let mut res = Vec::new();
        for op in args.argarray {
            match op {
                nfs_cb_argop4::OP_CB_SEQUENCE(s) => {
                    res.push(nfs_cb_resop4::OP_CB_SEQUENCE(CB_SEQUENCE4res::NFS4_OK(CB_SEQUENCE4resok {
                        csr_sessionid: s.csa_sessionid,
                        csr_sequenceid: s.csa_sequenceid,
                        csr_slotid: s.csa_slotid,
                        csr_highest_slotid: s.csa_highest_slotid,
                        csr_target_highest_slotid: s.csa_highest_slotid,
                    })))
                }
                // Reported like a delegation recall: the layout's stateid.
                nfs_cb_argop4::OP_CB_LAYOUTRECALL(CB_LAYOUTRECALL4args {
                    clora_recall: layoutrecall4::LAYOUTRECALL4_FILE(f),
                    ..
                }) => {
                    let _ =
                        recalls.send(Recall { stateid: f.lor_stateid, fh: f.lor_fh, at: std::time::Instant::now() });
                    res.push(nfs_cb_resop4::OP_CB_LAYOUTRECALL(CB_LAYOUTRECALL4res { clorr_status: nfsstat4::NFS4_OK }))
                }
                nfs_cb_argop4::OP_CB_RECALL(r) => {
                    let refused =
                        refuse.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
                    let status = if refused { nfsstat4::NFS4ERR_BADHANDLE } else { nfsstat4::NFS4_OK };
                    let _ = recalls.send(Recall { stateid: r.stateid, fh: r.fh, at: std::time::Instant::now() });
                    res.push(nfs_cb_resop4::OP_CB_RECALL(CB_RECALL4res { status }))
                }
                nfs_cb_argop4::OP_CB_GETATTR(_) => match cb_getattr {
                    CbGetattr::Silent => return,
                    CbGetattr::NotSupp => {
                        res.push(nfs_cb_resop4::OP_CB_GETATTR(CB_GETATTR4res::default(nfsstat4::NFS4ERR_NOTSUPP)))
                    }
                    CbGetattr::Attrs { size, change } => {
                        // fattr4 lists values in attribute-number order:
                        // change (3) before size (4).
                        let mut vals = Encoder::new();
                        vals.u64(change);
                        vals.u64(size);
                        let mut attrmask = Vec::new();
                        proto::bitmap4::add(&mut attrmask, FATTR4_CHANGE);
                        proto::bitmap4::add(&mut attrmask, FATTR4_SIZE);
                        let obj_attributes = fattr4 { attrmask, attr_vals: vals.into_bytes() };
                        res.push(nfs_cb_resop4::OP_CB_GETATTR(CB_GETATTR4res::NFS4_OK(CB_GETATTR4resok {
                            obj_attributes,
                        })))
                    }
                },
                _ => break,
            }
        }
        CB_COMPOUND4res { status: nfsstat4::NFS4_OK, tag: args.tag, resarray: res }.encode(&mut e);
    }
    write_record(w, &e.into_bytes());
}

/// Takes incoming records apart: replies are for callers, calls are the
/// server's callbacks, answered here.
#[derive(Clone)]
struct Inbox {
    writer: Arc<Mutex<TcpStream>>,
    recalls: mpsc::Sender<Recall>,
    refuse: Arc<AtomicU32>,
    cb_getattr: Arc<Mutex<CbGetattr>>,
}

impl Inbox {
    /// A reply's xid and record; a callback is answered and gives `None`.
    fn take(&self, rec: Vec<u8>) -> Option<(u32, Bytes)> {
        let rec = Bytes::from(rec);
        let mut d = Decoder::new(rec.clone());
        let msg = rpc_msg::decode(&mut d).ok()?;
        match msg.body {
            rpc_msg_body::REPLY(_) => Some((msg.xid, rec)),
            rpc_msg_body::CALL(_) => {
                let cb_getattr = *self.cb_getattr.lock().unwrap();
                answer_callback(msg, &mut d, &self.writer, &self.recalls, &self.refuse, cb_getattr);
                None
            }
        }
    }
}

/// Whether `s` has bytes to read (or its end) now.
fn readable_now(s: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no timeout.
    unsafe { libc::poll(&mut pfd, 1, 0) != 0 }
}

/// Polls `s` for up to `budget` for bytes to read; past it the caller
/// sleeps in its `read` as usual.
fn poll_readable(s: &TcpStream, budget: Duration) {
    let until = std::time::Instant::now() + budget;
    while !readable_now(s) && std::time::Instant::now() < until {}
}

impl Conn {
    pub fn connect(port: u16) -> Arc<Conn> {
        Self::connect_addr(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// A connection whose replies a reader thread of its own reads.
    pub fn connect_addr(addr: std::net::SocketAddr) -> Arc<Conn> {
        Self::open(addr, false)
    }

    /// A connection whose callers read the replies themselves: the one
    /// holding the read side reads for all, polling for `REPLY_POLL`
    /// before it sleeps, and passes the read side on when it has its
    /// reply. A thread looks for callbacks every `IDLE_CALLBACK_POLL` while
    /// no call is in flight. For benchmarks: a lone caller pays one
    /// system call per reply and no wake-up of another thread.
    pub fn connect_caller_driven(addr: std::net::SocketAddr) -> Arc<Conn> {
        Self::open(addr, true)
    }

    fn open(addr: std::net::SocketAddr, callers_read: bool) -> Arc<Conn> {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).unwrap();
        let mut reader = s.try_clone().unwrap();
        let writer = Arc::new(Mutex::new(s));
        let pending: Pending = Arc::default();
        let (tx, rx) = mpsc::channel();
        let (rtx, rrx) = mpsc::channel::<Recall>();
        let inbox = Inbox { writer: writer.clone(), recalls: rtx, refuse: Arc::default(), cb_getattr: Arc::default() };
        let conn = Arc::new(Conn {
            writer,
            pending: pending.clone(),
            reader: callers_read.then(|| {
                reader.set_read_timeout(Some(REPLY_LIMIT)).unwrap();
                Mutex::new(reader.try_clone().unwrap())
            }),
            inbox: inbox.clone(),
            xid: AtomicU32::new(1),
            recalls: Mutex::new(rx),
            auto_return: Mutex::new(None),
            refuse_recalls: inbox.refuse.clone(),
            cb_getattr: inbox.cb_getattr.clone(),
        });
        let weak = Arc::downgrade(&conn);
        // Recalls are handled off the thread that read them: returning one
        // needs a reply that thread must be free to deliver.
        std::thread::spawn(move || {
            for recall in rrx {
                let Some(conn) = weak.upgrade() else { return };
                if conn.auto_return.lock().unwrap().is_some() {
                    return_delegation(&conn, recall);
                } else {
                    let _ = tx.send(recall);
                }
            }
        });
        if callers_read {
            let weak = Arc::downgrade(&conn);
            std::thread::spawn(move || loop {
                std::thread::sleep(IDLE_CALLBACK_POLL);
                let Some(conn) = weak.upgrade() else { return };
                conn.read_while_idle();
            });
            return conn;
        }
        std::thread::spawn(move || {
            while let Some(rec) = read_record(&mut reader) {
                if let Some((xid, rec)) = inbox.take(rec) {
                    if let Some(tx) = pending.lock().unwrap().remove(&xid) {
                        let _ = tx.send(Some(rec));
                    }
                }
            }
        });
        conn
    }

    /// With no call in flight nobody reads a caller-driven connection:
    /// answer the callbacks that came meanwhile.
    fn read_while_idle(&self) {
        let Some(reader) = &self.reader else { return };
        if !self.pending.lock().unwrap().is_empty() {
            return;
        }
        let Ok(mut r) = reader.try_lock() else { return };
        while readable_now(&r) {
            let Some(rec) = read_record(&mut r) else { break };
            if let Some((xid, rec)) = self.inbox.take(rec) {
                self.deliver(xid, rec);
            }
        }
        drop(r);
        self.pass_reading_on();
    }

    /// Hands a reply read for another caller to it.
    fn deliver(&self, xid: u32, rec: Bytes) {
        if let Some(tx) = self.pending.lock().unwrap().remove(&xid) {
            let _ = tx.send(Some(rec));
        }
    }

    /// After the read side is released: a caller still waiting is told to
    /// read for everyone (it may be waiting for a reply nobody reads now).
    fn pass_reading_on(&self) {
        if let Some(tx) = self.pending.lock().unwrap().values().next() {
            let _ = tx.send(None);
        }
    }

    /// Waits for call `xid`'s reply on a caller-driven connection: reads
    /// for everyone while it holds the read side, else waits for its
    /// reply or its turn to read.
    fn await_reply(&self, reader: &Mutex<TcpStream>, xid: u32, rx: &mpsc::Receiver<Option<Bytes>>) -> Bytes {
        let deadline = std::time::Instant::now() + REPLY_LIMIT;
        loop {
            if let Ok(mut r) = reader.try_lock() {
                let mine = loop {
                    // Delivered by the reader before this one? (Behind any
                    // number of "read for everyone" notes.)
                    if let Some(rec) = rx.try_iter().flatten().next() {
                        break rec;
                    }
                    poll_readable(&r, REPLY_POLL);
                    let rec = read_record(&mut r).expect("no reply within 30 s");
                    match self.inbox.take(rec) {
                        Some((x, rec)) if x == xid => {
                            self.pending.lock().unwrap().remove(&xid);
                            break rec;
                        }
                        Some((x, rec)) => self.deliver(x, rec),
                        None => {}
                    }
                };
                drop(r);
                self.pass_reading_on();
                return mine;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left).expect("no reply within 30 s") {
                Some(rec) => return rec,
                None => continue,
            }
        }
    }

    pub fn next_xid(&self) -> u32 {
        self.xid.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `args` as NFSv4 procedure `proc_` with `xid` and returns the
    /// reply record whole.
    pub fn call_raw(&self, xid: u32, proc_: u32, args: &[u8]) -> Bytes {
        let mut e = Encoder::new();
        rpc_msg {
            xid,
            body: rpc_msg_body::CALL(call_body {
                rpcvers: 2,
                prog: NFS4,
                vers: 4,
                proc: proc_,
                cred: cred(),
                verf: none(),
            }),
        }
        .encode(&mut e);
        let mut rec = e.into_bytes().to_vec();
        rec.extend_from_slice(args);
        let (tx, rx) = mpsc::channel();
        self.pending.lock().unwrap().insert(xid, tx);
        write_record(&self.writer, &rec);
        match &self.reader {
            Some(reader) => self.await_reply(reader, xid, &rx),
            None => loop {
                if let Some(rec) = rx.recv_timeout(REPLY_LIMIT).expect("no reply within 30 s") {
                    break rec;
                }
            },
        }
    }

    /// The reply body after the accepted-reply header.
    pub fn body_of(reply: Bytes) -> Bytes {
        let mut d = Decoder::new(reply);
        let msg = rpc_msg::decode(&mut d).expect("reply header");
        match msg.body {
            rpc_msg_body::REPLY(reply_body::MSG_ACCEPTED(accepted_reply {
                reply_data: reply_data::SUCCESS, ..
            })) => d.rest(),
            other => panic!("call not accepted: {other:?}"),
        }
    }
}

/// Every call goes as AUTH_SYS root (`cred`), the principal the servers
/// under test export to.
impl Transport for Conn {
    fn compound(&self, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let args = COMPOUND4args { tag: Bytes::new(), minorversion: minor, argarray: ops };
        let body = Self::body_of(self.call_raw(self.next_xid(), 1, &xdr::to_bytes(&args)));
        COMPOUND4res::decode(&mut Decoder::new(body)).expect("COMPOUND4res")
    }
}

/// A 4.1 client: EXCHANGE_ID, CREATE_SESSION with a back channel on the
/// same connection, and SEQUENCE on slot 0 in front of every compound.
pub struct Client41 {
    pub conn: Arc<Conn>,
    pub clientid: clientid4,
    pub sessionid: sessionid4,
    /// Locked only while a SEQUENCE is made, so that callers on other
    /// slots send at the same time; the last slot granted is not in it
    /// but kept for returning delegations (`AutoReturn`).
    session: Mutex<Session>,
}

/// What these clients ask for in a channel: at most 16 operations a
/// compound.
fn channel16(slots: u32) -> channel_attrs4 {
    channel_attrs4 { ca_maxoperations: 16, ..channel(slots) }
}

impl Client41 {
    /// A client that returns recalled delegations by itself.
    pub fn connect(port: u16, owner: &str) -> Client41 {
        Self::connect_with_slots(port, owner, 8)
    }

    /// A client that only reports recalls (through `conn.recalls`).
    pub fn connect_manual(port: u16, owner: &str) -> Client41 {
        let c = Self::connect_with_slots(port, owner, 8);
        *c.conn.auto_return.lock().unwrap() = None;
        c
    }

    /// EXCHANGE_ID, CREATE_SESSION with `slots` slots and a back channel,
    /// then RECLAIM_COMPLETE: a client with nothing to reclaim.
    pub fn connect_with_slots(port: u16, owner: &str, slots: u32) -> Client41 {
        let c = Self::connect_reclaiming(port, owner, slots);
        c.reclaim_complete();
        c
    }

    /// A session without RECLAIM_COMPLETE: a client back from before a
    /// server restart, which may reclaim until it sends it.
    pub fn connect_reclaiming(port: u16, owner: &str, slots: u32) -> Client41 {
        Self::reclaiming_at(std::net::SocketAddr::from(([127, 0, 0, 1], port)), owner, slots)
    }

    /// `connect_reclaiming` to a server at `addr` (another host).
    pub fn reclaiming_at(addr: std::net::SocketAddr, owner: &str, slots: u32) -> Client41 {
        Self::incarnation(addr, owner, slots, [7; 8])
    }

    /// Ends client `owner`'s state and its record on the server at `addr`,
    /// as a client rebooting and then unmounting does: a new incarnation
    /// (another verifier) replaces the old one and its state, and is
    /// destroyed.
    pub fn forget(addr: std::net::SocketAddr, owner: &str) {
        let c = Self::incarnation(addr, owner, 2, [9; 8]);
        let r = c
            .conn
            .compound(1, vec![nfs_argop4::OP_DESTROY_SESSION(DESTROY_SESSION4args { dsa_sessionid: c.sessionid })]);
        ok_res(&r);
        let r = c
            .conn
            .compound(1, vec![nfs_argop4::OP_DESTROY_CLIENTID(DESTROY_CLIENTID4args { dca_clientid: c.clientid })]);
        ok_res(&r);
    }

    /// `connect_with_slots` on a connection whose callers read the
    /// replies themselves (`Conn::connect_caller_driven`): the benchmarks'.
    pub fn connect_caller_driven(port: u16, owner: &str, slots: u32) -> Client41 {
        let conn = Conn::connect_caller_driven(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        let c = Self::incarnation_on(conn, owner, slots, [7; 8]);
        c.reclaim_complete();
        c
    }

    fn incarnation(addr: std::net::SocketAddr, owner: &str, slots: u32, verifier: [u8; 8]) -> Client41 {
        Self::incarnation_on(Conn::connect_addr(addr), owner, slots, verifier)
    }

    fn incarnation_on(conn: Arc<Conn>, owner: &str, slots: u32, verifier: [u8; 8]) -> Client41 {
        let eid = exchange_id_args(owner, verifier, EXCHGID4_FLAG_USE_NON_PNFS);
        let mut session = Session::establish(&*conn, 1, eid, |id, seq| CREATE_SESSION4args {
            csa_fore_chan_attrs: channel16(slots),
            csa_back_chan_attrs: channel16(2),
            csa_cb_program: CB_PROGRAM,
            ..create_session_args(id, seq, CREATE_SESSION4_FLAG_CONN_BACK_CHAN, slots)
        });
        let granted = session.slots().max(2);
        // The last slot is kept for returning delegations.
        let reserved =
            Session { clientid: session.clientid, sessionid: session.sessionid, seq: vec![0; granted], minor: 1 };
        *conn.auto_return.lock().unwrap() = Some(AutoReturn { session: reserved, slot: granted as u32 - 1 });
        session.seq = vec![0; granted - 1];
        Client41 { conn, clientid: session.clientid, sessionid: session.sessionid, session: Mutex::new(session) }
    }

    pub fn slots(&self) -> usize {
        self.session.lock().unwrap().slots()
    }

    /// The next SEQUENCE on slot 0.
    pub fn sequence(&self) -> nfs_argop4 {
        self.sequence_on(0)
    }

    /// The next SEQUENCE on `slot`, naming the reserved slot as the
    /// highest in use.
    pub fn sequence_on(&self, slot: usize) -> nfs_argop4 {
        let mut s = self.session.lock().unwrap();
        let highest = s.slots() as u32;
        s.sequence_hi(slot as u32, highest)
    }

    /// `ops` after a SEQUENCE; the SEQUENCE result is removed so indexes
    /// match `ops`.
    pub fn run(&self, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        self.run_on(0, ops)
    }

    /// `run`, retrying NFS4ERR_DELAY (a delegation being recalled) from
    /// 1 ms with doubling waits, as clients do.
    pub fn run_retry(&self, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let mut wait = Duration::from_millis(1);
        for _ in 0..20 {
            let r = self.run(ops.clone());
            if r.status != nfsstat4::NFS4ERR_DELAY {
                return r;
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(500));
        }
        panic!("still NFS4ERR_DELAY after 20 tries");
    }

    /// `ops` after a SEQUENCE on `slot` (one caller per slot at a time).
    /// A failed SEQUENCE fails the test: these tests never expect one.
    pub fn run_on(&self, slot: usize, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let mut all = vec![self.sequence_on(slot)];
        all.extend(ops);
        let r = self.conn.compound(1, all);
        match r.resarray.first() {
            None => panic!("SEQUENCE missing from the reply: {r:?}"),
            Some(nfs_resop4::OP_SEQUENCE(SEQUENCE4res::default(s))) => panic!("SEQUENCE failed: {s:?}"),
            Some(_) => without_sequence(r),
        }
    }

    pub fn reclaim_complete(&self) {
        ok_res(&self.run(vec![nfs_argop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4args { rca_one_fs: false })]));
    }
}

pub fn open_owner(client: &Client41, name: &str) -> open_owner4 {
    open_owner4 { clientid: client.clientid, owner: Bytes::copy_from_slice(name.as_bytes()) }
}

/// OPEN (creating with UNCHECKED4 when `create`) of `name` in the
/// current directory, with `access` (OPEN4_SHARE_ACCESS_*).
pub fn open_op(client: &Client41, owner: &str, name: &str, access: u32, create: bool) -> nfs_argop4 {
    nfs_argop4::OP_OPEN(open_args(0, client.clientid, owner, name, access, OPEN4_SHARE_DENY_NONE, create))
}

/// OPEN with CLAIM_PREVIOUS (read and write) of the current file by
/// `owner`: reclaiming an open after the server restarted.
pub fn reclaim_open_op(client: &Client41, owner: &str) -> nfs_argop4 {
    nfs_argop4::OP_OPEN(OPEN4args {
        seqid: 0,
        share_access: OPEN4_SHARE_ACCESS_BOTH,
        share_deny: OPEN4_SHARE_DENY_NONE,
        owner: open_owner(client, owner),
        openhow: openflag4::default(opentype4::OPEN4_NOCREATE),
        claim: open_claim4::CLAIM_PREVIOUS(open_delegation_type4::OPEN_DELEGATE_NONE),
    })
}

/// A LOCK of `offset, length` for write by the new lock-owner `owner`,
/// from the open `open`.
pub fn lock_op(c: &Client41, open: &stateid4, owner: &str, offset: u64, length: u64) -> nfs_argop4 {
    lock_new(0, open, c.clientid, owner, nfs_lock_type4::WRITE_LT, offset, length)
}

/// Opens `name` in the export (creating it) and returns (stateid, fh).
pub fn open_file(
    srv: &crate::support::TestServer,
    c: &Client41,
    owner: &str,
    name: &str,
    access: u32,
) -> (stateid4, nfs_fh4) {
    let mut ops = walk(&srv.export);
    ops.extend([open_op(c, owner, name, access, true), nfs_argop4::OP_GETFH]);
    let n = ops.len();
    let r = c.run_retry(ops);
    ok_res(&r);
    (opened(&r, n - 2).stateid.clone(), fh_res(&r, n - 1))
}

//! The fake server's state and one COMPOUND's execution: SEQUENCE checked
//! against the slot's sequence id (RFC 8881 section 2.10.6.1), the
//! script's faults and holds, then each operation in turn.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;

use super::files::error_res;
use super::script::{matches, Fault, Match, Seen};
use super::wire::success_record;

/// What the connection does with a call once the state has handled it.
pub(super) enum Reply {
    Send(Bytes),
    Garbage,
    /// Close the connection without answering.
    Close,
    /// Kept in `State::held` until the test releases it.
    Held,
}

pub(super) struct Held {
    pub conn: u64,
    pub xid: u32,
    pub reply: COMPOUND4res,
    pub session: sessionid4,
    pub slot: u32,
}

pub(super) struct ConnRec {
    pub out: mpsc::UnboundedSender<Vec<Bytes>>,
    pub kill: Arc<Notify>,
}

pub(super) struct SlotRec {
    pub seqid: u32,
    pub cached: Option<COMPOUND4res>,
    /// Its last request's reply is held: the client may not reuse it yet.
    pub busy: bool,
}

pub(super) struct SessionRec {
    pub clientid: clientid4,
    pub slots: Vec<SlotRec>,
    pub back_conn: Option<u64>,
    pub cb_program: u32,
    pub cb_seqid: u32,
}

pub(super) struct ClientRec {
    pub clientid: clientid4,
    pub verifier: verifier4,
    /// The csa_sequence the next CREATE_SESSION must carry.
    pub create_seq: u32,
    pub confirmed: bool,
    pub reclaim_complete: bool,
}

pub(super) struct StateRec {
    pub fh: Bytes,
    pub clientid: clientid4,
    pub deleg: bool,
    pub seqid: u32,
    /// The request whose reply granted it: { session, slot, sequence id }.
    pub granted_by: Option<(sessionid4, u32, u32)>,
}

pub(super) struct FileRec {
    pub data: Vec<u8>,
    pub change: u64,
    pub fileid: u64,
}

/// The fake's knobs (set by tests), its protocol state and what it saw.
pub struct State {
    /// Most fore-channel slots CREATE_SESSION grants.
    pub slots: u32,
    /// sr_target_highest_slotid; None: every granted slot.
    pub target_highest_slotid: Option<u32>,
    /// The lease_time attribute, in seconds.
    pub lease_time: u32,
    /// maxread and maxwrite.
    pub maxrw: u64,
    /// OPENs for writing get a write delegation.
    pub delegate_writes: bool,
    /// GET_DIR_DELEGATION grants one (else NFS4ERR_NOTSUPP).
    pub dir_delegations: bool,
    /// Added to every SEQUENCE reply's status flags.
    pub status_flags: u32,
    /// Until then non-reclaim state operations and I/O get NFS4ERR_GRACE.
    pub grace_until: Option<Instant>,
    /// Every compound in order of arrival.
    pub log: Vec<Seen>,
    /// Breaches of the session rules by the client.
    pub violations: Vec<String>,
    pub(super) faults: Vec<(Match, Fault)>,
    pub(super) hold: Option<Match>,
    pub(super) held: Vec<Held>,
    pub(super) boot: u32,
    pub(super) next_id: u64,
    pub(super) clients: HashMap<Bytes, ClientRec>,
    pub(super) sessions: HashMap<sessionid4, SessionRec>,
    pub(super) files: BTreeMap<Bytes, FileRec>,
    pub(super) stateids: HashMap<[u8; 12], StateRec>,
    pub(super) conns: HashMap<u64, ConnRec>,
    pub(super) cb_waiting: HashMap<u32, oneshot::Sender<CB_COMPOUND4res>>,
    pub(super) next_xid: u32,
}

impl Default for State {
    fn default() -> Self {
        State {
            slots: 16,
            target_highest_slotid: None,
            // Long, so renewals stay out of the way of tests not about them.
            lease_time: 3600,
            maxrw: 1 << 16,
            delegate_writes: false,
            dir_delegations: false,
            status_flags: 0,
            grace_until: None,
            log: Vec::new(),
            violations: Vec::new(),
            faults: Vec::new(),
            hold: None,
            held: Vec::new(),
            boot: 1,
            next_id: 1,
            clients: HashMap::new(),
            sessions: HashMap::new(),
            files: BTreeMap::new(),
            stateids: HashMap::new(),
            conns: HashMap::new(),
            cb_waiting: HashMap::new(),
            next_xid: 0x5eed_0000,
        }
    }
}

/// Per compound: the client it is for, the request's { session, slot,
/// sequence id } and the current filehandle.
pub(super) struct Ctx {
    pub conn: u64,
    pub clientid: Option<clientid4>,
    pub call: Option<(sessionid4, u32, u32)>,
    pub cfh: Option<Bytes>,
}

/// A fault taken for one compound, with the match that chose it.
type Scripted = Option<(Match, Fault)>;

enum SlotCheck {
    New,
    Replay(COMPOUND4res),
    Bad(nfsstat4),
}

fn sequence_failed(status: nfsstat4) -> COMPOUND4res {
    COMPOUND4res { status, tag: Bytes::new(), resarray: vec![nfs_resop4::OP_SEQUENCE(SEQUENCE4res::default(status))] }
}

impl State {
    pub fn in_grace(&self) -> bool {
        self.grace_until.is_some_and(|t| Instant::now() < t)
    }

    pub fn held(&self) -> usize {
        self.held.len()
    }

    pub fn held_slots(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.held.iter().map(|h| h.slot).collect();
        v.sort_unstable();
        v
    }

    pub fn faults_left(&self) -> usize {
        self.faults.len()
    }

    /// Sends every held reply. A reply is made when it goes out, so its
    /// SEQUENCE carries the target slot id of that moment.
    pub(super) fn release(&mut self) {
        for mut h in std::mem::take(&mut self.held) {
            let target = self.target_highest_slotid;
            if let Some(nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(ok))) = h.reply.resarray.first_mut() {
                ok.sr_target_highest_slotid = target.unwrap_or(ok.sr_highest_slotid).min(ok.sr_highest_slotid);
            }
            if let Some(slot) = self.sessions.get_mut(&h.session).and_then(|x| x.slots.get_mut(h.slot as usize)) {
                slot.busy = false;
                slot.cached = Some(h.reply.clone());
            }
            if let Some(c) = self.conns.get(&h.conn) {
                let _ = c.out.send(success_record(h.xid, xdr::to_bytes(&h.reply)));
            }
        }
    }

    pub(super) fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Handles one COMPOUND call with `xid` that came on `conn`.
    pub(super) fn compound(&mut self, conn: u64, xid: u32, args: COMPOUND4args) -> Reply {
        let mut ops = args.argarray;
        let seq = match ops.first() {
            Some(nfs_argop4::OP_SEQUENCE(s)) => Some(s.clone()),
            _ => None,
        };
        if seq.is_some() {
            ops.remove(0);
        }
        let mut fault = None;
        let mut replay = false;
        let reply = match &seq {
            None => {
                fault = self.take_fault(false, &ops);
                self.plain(conn, &ops, &fault)
            }
            Some(s) => match self.check_slot(s) {
                SlotCheck::Bad(status) => sequence_failed(status),
                SlotCheck::Replay(r) => {
                    replay = true;
                    r
                }
                SlotCheck::New => {
                    fault = self.take_fault(true, &ops);
                    match fault.as_ref().map(|f| &f.1) {
                        Some(Fault::Sequence(status)) => {
                            self.lose(*status, &s.sa_sessionid);
                            sequence_failed(*status)
                        }
                        Some(Fault::GarbageUnexecuted) => sequence_failed(nfsstat4::NFS4ERR_DELAY),
                        _ => {
                            let r = self.sequenced(conn, s, &ops, &fault);
                            if let Some(slot) = self.slot_mut(s) {
                                slot.seqid = s.sa_sequenceid;
                                slot.cached = Some(r.clone());
                            }
                            r
                        }
                    }
                }
            },
        };
        let hold = !replay && fault.is_none() && self.hold.as_ref().is_some_and(|m| matches(m, seq.is_some(), &ops));
        let fault = fault.map(|f| f.1);
        let out = match (&fault, &seq) {
            (Some(Fault::Garbage | Fault::GarbageUnexecuted), _) => Reply::Garbage,
            (Some(Fault::DropReply), _) => Reply::Close,
            (Some(Fault::Rewrite(rewrite)), _) => {
                let mut sent = reply.clone();
                rewrite(&mut sent);
                Reply::Send(xdr::to_bytes(&sent))
            }
            (_, Some(s)) if hold => {
                if let Some(slot) = self.slot_mut(s) {
                    slot.busy = true;
                }
                let h = Held { conn, xid, reply: reply.clone(), session: s.sa_sessionid, slot: s.sa_slotid };
                self.held.push(h);
                Reply::Held
            }
            _ => Reply::Send(xdr::to_bytes(&reply)),
        };
        let seen = Seen { at: Instant::now(), conn, seq, ops, reply, replay, fault, held: matches!(out, Reply::Held) };
        self.log.push(seen);
        out
    }

    fn take_fault(&mut self, sequenced: bool, ops: &[nfs_argop4]) -> Scripted {
        let i = self.faults.iter().position(|(m, _)| matches(m, sequenced, ops))?;
        Some(self.faults.remove(i))
    }

    fn slot_mut(&mut self, s: &SEQUENCE4args) -> Option<&mut SlotRec> {
        self.sessions.get_mut(&s.sa_sessionid)?.slots.get_mut(s.sa_slotid as usize)
    }

    fn check_slot(&mut self, s: &SEQUENCE4args) -> SlotCheck {
        let Some(sess) = self.sessions.get(&s.sa_sessionid) else {
            return SlotCheck::Bad(nfsstat4::NFS4ERR_BADSESSION);
        };
        let Some(slot) = sess.slots.get(s.sa_slotid as usize) else {
            self.violations.push(format!("slot {} beyond the {} granted", s.sa_slotid, sess.slots.len()));
            return SlotCheck::Bad(nfsstat4::NFS4ERR_BADSLOT);
        };
        if slot.busy {
            self.violations.push(format!("slot {} reused while its request is outstanding", s.sa_slotid));
        }
        if s.sa_sequenceid == slot.seqid.wrapping_add(1) {
            SlotCheck::New
        } else if s.sa_sequenceid == slot.seqid && slot.cached.is_some() {
            SlotCheck::Replay(slot.cached.clone().expect("checked"))
        } else {
            SlotCheck::Bad(nfsstat4::NFS4ERR_SEQ_MISORDERED)
        }
    }

    /// What the server forgets when it answers `status` to SEQUENCE.
    fn lose(&mut self, status: nfsstat4, sessionid: &sessionid4) {
        match status {
            nfsstat4::NFS4ERR_BADSESSION | nfsstat4::NFS4ERR_DEADSESSION => {
                self.sessions.remove(sessionid);
            }
            nfsstat4::NFS4ERR_STALE_CLIENTID | nfsstat4::NFS4ERR_EXPIRED => {
                if let Some(c) = self.sessions.get(sessionid).map(|s| s.clientid) {
                    self.forget_client(c);
                }
            }
            _ => {}
        }
    }

    /// The client's lease is gone: its record, sessions and state.
    pub(super) fn forget_client(&mut self, clientid: clientid4) {
        self.clients.retain(|_, c| c.clientid != clientid);
        self.sessions.retain(|_, s| s.clientid != clientid);
        self.stateids.retain(|_, s| s.clientid != clientid);
    }

    /// A compound without SEQUENCE: only the operations that make or end
    /// a session may come so, each alone (RFC 8881 section 2.10.6.2).
    fn plain(&mut self, conn: u64, ops: &[nfs_argop4], fault: &Scripted) -> COMPOUND4res {
        let mut ctx = Ctx { conn, clientid: None, call: None, cfh: None };
        let mut resarray = Vec::new();
        let session_op = ops.len() == 1
            && matches!(
                ops[0],
                nfs_argop4::OP_EXCHANGE_ID(_)
                    | nfs_argop4::OP_CREATE_SESSION(_)
                    | nfs_argop4::OP_DESTROY_SESSION(_)
                    | nfs_argop4::OP_DESTROY_CLIENTID(_)
                    | nfs_argop4::OP_BIND_CONN_TO_SESSION(_)
            );
        if !session_op {
            self.violations.push(format!("compound without SEQUENCE: {:?}", ops.first().map(|o| o.discriminant())));
            let s = nfsstat4::NFS4ERR_OP_NOT_IN_SESSION;
            if let Some(op) = ops.first() {
                resarray.push(error_res(op.discriminant(), s));
            }
            return COMPOUND4res { status: s, tag: Bytes::new(), resarray };
        }
        let status = self.run(&mut ctx, ops, fault, &mut resarray);
        COMPOUND4res { status, tag: Bytes::new(), resarray }
    }

    fn sequenced(&mut self, conn: u64, s: &SEQUENCE4args, ops: &[nfs_argop4], fault: &Scripted) -> COMPOUND4res {
        let (clientid, granted, back_up) = {
            let sess = &self.sessions[&s.sa_sessionid];
            (sess.clientid, sess.slots.len() as u32, sess.back_conn.is_some_and(|c| self.conns.contains_key(&c)))
        };
        let highest = granted - 1;
        let ok = SEQUENCE4resok {
            sr_sessionid: s.sa_sessionid,
            sr_sequenceid: s.sa_sequenceid,
            sr_slotid: s.sa_slotid,
            sr_highest_slotid: highest,
            sr_target_highest_slotid: self.target_highest_slotid.unwrap_or(highest).min(highest),
            // The back channel's connection is gone (RFC 8881 section 18.46.3).
            sr_status_flags: self.status_flags | if back_up { 0 } else { SEQ4_STATUS_CB_PATH_DOWN_SESSION },
        };
        let mut resarray = vec![nfs_resop4::OP_SEQUENCE(SEQUENCE4res::NFS4_OK(ok))];
        let call = Some((s.sa_sessionid, s.sa_slotid, s.sa_sequenceid));
        let mut ctx = Ctx { conn, clientid: Some(clientid), call, cfh: None };
        let status = self.run(&mut ctx, ops, fault, &mut resarray);
        COMPOUND4res { status, tag: Bytes::new(), resarray }
    }

    fn run(&mut self, ctx: &mut Ctx, ops: &[nfs_argop4], fault: &Scripted, out: &mut Vec<nfs_resop4>) -> nfsstat4 {
        // An Op fault fails the operation its match names (or the first).
        let mut failing = match fault {
            Some((m, Fault::Op(s))) => Some((if let Match::Op(n) = m { Some(*n) } else { None }, *s)),
            _ => None,
        };
        for op in ops {
            let num = op.discriminant();
            let r = match failing {
                Some((which, s)) if which.is_none_or(|n| n == num) => {
                    failing = None;
                    Err(s)
                }
                _ => self.op(ctx, op),
            };
            match r {
                Ok(res) => out.push(res),
                Err(s) => {
                    out.push(error_res(num, s));
                    return s;
                }
            }
        }
        nfsstat4::NFS4_OK
    }

    fn op(&mut self, ctx: &mut Ctx, op: &nfs_argop4) -> Result<nfs_resop4, nfsstat4> {
        use nfs_argop4 as A;
        match op {
            A::OP_EXCHANGE_ID(a) => self.exchange_id(a),
            A::OP_CREATE_SESSION(a) => self.create_session(ctx, a),
            A::OP_BIND_CONN_TO_SESSION(a) => self.bind_conn(ctx, a),
            A::OP_DESTROY_SESSION(a) => self.destroy_session(a),
            A::OP_DESTROY_CLIENTID(a) => self.destroy_clientid(a),
            A::OP_RECLAIM_COMPLETE(_) => self.reclaim_complete(ctx),
            A::OP_SEQUENCE(_) => {
                self.violations.push("SEQUENCE not first".into());
                Err(nfsstat4::NFS4ERR_SEQUENCE_POS)
            }
            other => self.file_op(ctx, other),
        }
    }
}

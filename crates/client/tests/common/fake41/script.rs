//! What a test scripts (which compounds, and what happens to them) and
//! what the fake records of each compound it gets.

use proto::nfs4::*;
use tokio::time::Instant;

/// Which compounds a fault or a hold applies to.
#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// Every compound behind a SEQUENCE.
    Sequenced,
    /// A SEQUENCE alone: a lease renewal.
    Renewal,
    /// Compounds carrying this operation (with or without a SEQUENCE).
    Op(nfs_opnum4),
}

/// What the script does to one compound instead of answering it plainly.
// Faults are compared only to tell the script's entries apart; two
// Rewrites of one function comparing unequal would be harmless.
#[allow(unpredictable_function_pointer_comparisons)]
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// SEQUENCE fails with this status and nothing runs. A server says
    /// BADSESSION when it lost the session, STALE_CLIENTID or EXPIRED when
    /// it lost the client: the fake forgets them too, so a client that
    /// simply retried would keep failing.
    Sequence(nfsstat4),
    /// The matched operation (`Match::Op`) fails with this status.
    Op(nfsstat4),
    /// Executed, but the reply is bytes no COMPOUND4res decodes from.
    Garbage,
    /// Not executed, and the reply is garbage: the client cannot tell
    /// whether its request ran.
    GarbageUnexecuted,
    /// Executed, but the connection closes instead of the reply going
    /// out (a lost reply): the client sends the request again.
    DropReply,
    /// Executed, and the reply goes out as the function rewrites it (the
    /// slot's reply cache keeps the real one): a server or proxy whose
    /// reply does not answer what was sent.
    Rewrite(fn(&mut COMPOUND4res)),
}

/// One compound the fake received, and what it answered.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Virtual time of arrival.
    pub at: Instant,
    pub conn: u64,
    pub seq: Option<SEQUENCE4args>,
    /// The operations after SEQUENCE.
    pub ops: Vec<nfs_argop4>,
    /// The reply computed (for a fault, what the client did not get).
    pub reply: COMPOUND4res,
    /// Answered from the slot's reply cache.
    pub replay: bool,
    pub fault: Option<Fault>,
    /// The reply was held back by `Fake::hold`.
    pub held: bool,
}

impl Seen {
    pub fn status(&self) -> nfsstat4 {
        self.reply.status
    }

    pub fn has(&self, op: nfs_opnum4) -> bool {
        self.ops.iter().any(|o| o.discriminant() == op)
    }

    /// A SEQUENCE alone: what the client sends to renew its lease.
    pub fn renewal(&self) -> bool {
        self.seq.is_some() && self.ops.is_empty()
    }

    pub fn slot(&self) -> Option<u32> {
        self.seq.as_ref().map(|s| s.sa_slotid)
    }

    pub fn sessionid(&self) -> Option<sessionid4> {
        self.seq.as_ref().map(|s| s.sa_sessionid)
    }

    /// The WRITE this compound carries.
    pub fn write(&self) -> Option<&WRITE4args> {
        self.ops.iter().find_map(|o| match o {
            nfs_argop4::OP_WRITE(w) => Some(w),
            _ => None,
        })
    }

    pub fn open(&self) -> Option<&OPEN4args> {
        self.ops.iter().find_map(|o| match o {
            nfs_argop4::OP_OPEN(a) => Some(a),
            _ => None,
        })
    }
}

pub(super) fn matches(m: &Match, sequenced: bool, ops: &[nfs_argop4]) -> bool {
    match m {
        Match::Sequenced => sequenced,
        Match::Renewal => sequenced && ops.is_empty(),
        Match::Op(op) => ops.iter().any(|o| o.discriminant() == *op),
    }
}

//! Duplicate request cache for NFSv3 and NFSv4.0.
//!
//! A client that gets no reply (lost datagram, dropped connection, slow
//! server) sends the call again with the same xid. For a non-idempotent
//! call a second execution gives the wrong answer even though the first
//! one worked: a repeated REMOVE says NOENT, a repeated MKDIR says EXIST.
//! So the replies to such calls are kept for a while, and a retransmission
//! gets the stored reply instead of running again.
//!
//! NFSv4.1 and later are left out: the session slots' reply cache already
//! gives them exactly-once semantics, keyed far more precisely than an xid.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash, Hasher};
use std::net::IpAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use proto::nfs3;
use xdr::Decoder;

use crate::rpc::{Auth, Call};

/// Argument bytes hashed into the key. Bounded because a WRITE carries up
/// to 1 MiB and hashing all of it on every call would cost more than the
/// cache saves; with the xid, procedure and record length already equal,
/// the first bytes (file handle, offset, name) tell a retransmission from
/// a new call.
const HASHED_ARG_BYTES: usize = 512;

/// NFSv3 procedures that must not run twice. WRITE is here because a
/// replayed write can overwrite data written since; a guarded SETATTR
/// fails the second time. COMMIT is absent: flushing twice is harmless.
const NFS3_NON_IDEMPOTENT: [u32; 10] = [
    nfs3::NFS3_SETATTR,
    nfs3::NFS3_WRITE,
    nfs3::NFS3_CREATE,
    nfs3::NFS3_MKDIR,
    nfs3::NFS3_SYMLINK,
    nfs3::NFS3_MKNOD,
    nfs3::NFS3_REMOVE,
    nfs3::NFS3_RMDIR,
    nfs3::NFS3_RENAME,
    nfs3::NFS3_LINK,
];

/// What identifies one call across retransmissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    /// The address without the port: a client that reconnects resends on
    /// a new connection, usually from a new port, with the same xid.
    ip: IpAddr,
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    record_len: usize,
    /// The credential and the first `HASHED_ARG_BYTES` of the arguments:
    /// a client that reuses an xid for a different call must not get the
    /// old reply.
    hash: u64,
}

enum State {
    InProgress,
    /// The reply record, copied into one buffer.
    Done(Bytes),
}

struct Entry {
    /// Position in `Table::order`; also tells a ticket whether the entry
    /// it created is still the one under its key.
    seq: u64,
    /// When the call arrived, by the core's clock.
    at: Duration,
    state: State,
}

#[derive(Default)]
struct Table {
    entries: HashMap<Key, Entry>,
    /// Keys by arrival, oldest first, for expiry and eviction.
    order: BTreeMap<u64, Key>,
    next_seq: u64,
}

impl Table {
    fn remove_oldest(&mut self) {
        if let Some((_, key)) = self.order.pop_first() {
            self.entries.remove(&key);
        }
    }
}

/// What to do with an incoming call.
pub(crate) enum Lookup<'a> {
    /// Not a call the cache keeps (or the cache is off): run it.
    NotCached,
    /// First sight of this call: run it and hand the reply to the ticket.
    Miss(Ticket<'a>),
    /// The original is still running; the duplicate is dropped and the
    /// client will retransmit once more if it still has no reply.
    InProgress,
    /// The original finished: send this reply again.
    Replay(Bytes),
}

pub(crate) struct Drc {
    capacity: usize,
    max_reply: usize,
    ttl: Duration,
    /// Keyed per process so nobody can precompute colliding requests.
    hasher: RandomState,
    table: Mutex<Table>,
}

impl Drc {
    /// `capacity` 0 turns the cache off.
    pub(crate) fn new(capacity: usize, max_reply: usize, ttl: Duration) -> Drc {
        Drc { capacity, max_reply, ttl, hasher: RandomState::new(), table: Mutex::new(Table::default()) }
    }

    /// Looks `call` up (`args` is positioned at its arguments, `record_len`
    /// is the whole record's length), entering it as in progress when it
    /// is new. `now` is only read for calls the cache keeps.
    pub(crate) fn begin(
        &self,
        call: &Call,
        record_len: usize,
        args: &Decoder,
        now: impl FnOnce() -> Duration,
    ) -> Lookup<'_> {
        if self.capacity == 0 || !cacheable(call.prog, call.vers, call.proc_, args) {
            return Lookup::NotCached;
        }
        let key = Key {
            ip: call.peer.addr.ip().to_canonical(),
            xid: call.xid,
            prog: call.prog,
            vers: call.vers,
            proc_: call.proc_,
            record_len,
            hash: self.hash(&call.auth, args),
        };
        let now = now();
        let mut guard = self.table.lock();
        let t = &mut *guard;
        // Expire from the old end; entries arrive in clock order, so the
        // first young one ends the sweep.
        while let Some((_, key)) = t.order.first_key_value() {
            if now.saturating_sub(t.entries[key].at) < self.ttl {
                break;
            }
            t.remove_oldest();
        }
        if let Some(e) = t.entries.get(&key) {
            return match &e.state {
                State::InProgress => Lookup::InProgress,
                State::Done(reply) => Lookup::Replay(reply.clone()),
            };
        }
        while t.entries.len() >= self.capacity {
            t.remove_oldest();
        }
        let seq = t.next_seq;
        t.next_seq += 1;
        t.entries.insert(key, Entry { seq, at: now, state: State::InProgress });
        t.order.insert(seq, key);
        Lookup::Miss(Ticket { drc: self, key, seq, finished: false })
    }

    /// The credential without its `stamp` (some clients put the time in it
    /// and re-encode it when they retransmit), then the bounded argument
    /// prefix.
    fn hash(&self, auth: &Auth, args: &Decoder) -> u64 {
        let mut h = self.hasher.build_hasher();
        match auth {
            Auth::None => 0u8.hash(&mut h),
            Auth::Sys { uid, gid, gids, machinename } => {
                1u8.hash(&mut h);
                (uid, gid, gids, &machinename[..]).hash(&mut h);
            }
            // Not the sequence number: a retransmission carries a new one.
            Auth::Gss(c) => {
                2u8.hash(&mut h);
                c.principal.hash(&mut h);
            }
        }
        let args = args.clone().rest();
        args[..args.len().min(HASHED_ARG_BYTES)].hash(&mut h);
        h.finish()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.lock().entries.len()
    }
}

/// Whether the reply to this call is worth keeping: a non-idempotent
/// NFSv3 procedure, or an NFSv4.0 COMPOUND (which may hold any operation).
fn cacheable(prog: u32, vers: u32, proc_: u32, args: &Decoder) -> bool {
    if prog != crate::ops::v3::PROGRAM {
        return false;
    }
    match vers {
        crate::ops::v3::VERSION => NFS3_NON_IDEMPOTENT.contains(&proc_),
        crate::ops::v4::VERSION => proc_ == proto::nfs4::NFSPROC4_COMPOUND && compound_minorversion(args) == Some(0),
        _ => false,
    }
}

/// The minor version of a COMPOUND, read past its tag without decoding
/// the operations.
fn compound_minorversion(args: &Decoder) -> Option<u32> {
    let mut d = args.clone();
    d.opaque_var(u32::MAX).ok()?;
    d.u32().ok()
}

/// A call entered as in progress. `finish` stores its reply; dropping the
/// ticket without it (the handler panicked) removes the entry, so the
/// client's next retransmission runs the call instead of being dropped
/// until the entry expires.
pub(crate) struct Ticket<'a> {
    drc: &'a Drc,
    key: Key,
    seq: u64,
    finished: bool,
}

/// A ticket of a call that waits (parked): its entry stays in progress,
/// and the call's reply is stored through [`Drc::reattach`] when it comes.
#[derive(Debug)]
pub(crate) struct Held {
    key: Key,
    seq: u64,
}

impl Drc {
    pub(crate) fn reattach(&self, held: Held) -> Ticket<'_> {
        Ticket { drc: self, key: held.key, seq: held.seq, finished: false }
    }
}

impl Ticket<'_> {
    /// Keeps the entry in progress without the ticket (which would end it
    /// when dropped), for a call that goes on later.
    pub(crate) fn hold(mut self) -> Held {
        self.finished = true;
        Held { key: self.key, seq: self.seq }
    }

    /// Keeps `reply` for retransmissions; a missing or oversized reply
    /// removes the entry instead.
    pub(crate) fn finish(mut self, reply: Option<&[Bytes]>) {
        self.finished = true;
        let size: usize = reply.map_or(0, |segs| segs.iter().map(Bytes::len).sum());
        // Copied into one buffer: a segment may be a slice of a much larger
        // one (file data), which a stored clone would keep alive.
        let joined = reply.filter(|_| size <= self.drc.max_reply).map(|segs| {
            let mut b = BytesMut::with_capacity(size);
            for s in segs {
                b.extend_from_slice(s);
            }
            b.freeze()
        });
        let mut guard = self.drc.table.lock();
        let t = &mut *guard;
        let Some(e) = t.entries.get_mut(&self.key).filter(|e| e.seq == self.seq) else {
            // Evicted or expired (and perhaps re-entered) while running.
            return;
        };
        match joined {
            Some(b) => e.state = State::Done(b),
            None => {
                t.entries.remove(&self.key);
                t.order.remove(&self.seq);
            }
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut t = self.drc.table.lock();
        if t.entries.get(&self.key).is_some_and(|e| e.seq == self.seq) {
            t.entries.remove(&self.key);
            t.order.remove(&self.seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PeerInfo;

    fn peer(addr: &str) -> PeerInfo {
        PeerInfo {
            addr: addr.parse().unwrap(),
            local: "127.0.0.1:2049".parse().unwrap(),
            hostname: None,
            conn: 0,
            tls: Default::default(),
        }
    }

    fn call(peer: &PeerInfo, xid: u32, proc_: u32) -> Call<'_> {
        Call { xid, prog: 100003, vers: 3, proc_, auth: Auth::None, peer, nowait: false }
    }

    fn args(b: &'static [u8]) -> Decoder {
        Decoder::new(Bytes::from_static(b))
    }

    fn at(secs: u64) -> impl FnOnce() -> Duration {
        move || Duration::from_secs(secs)
    }

    #[test]
    fn duplicate_while_running_is_in_progress_then_replayed() {
        let drc = Drc::new(8, 1024, Duration::from_secs(120));
        let p = peer("10.0.0.1:800");
        let Lookup::Miss(ticket) = drc.begin(&call(&p, 1, 12), 100, &args(b"abc"), at(0)) else { panic!("miss") };
        assert!(matches!(drc.begin(&call(&p, 1, 12), 100, &args(b"abc"), at(1)), Lookup::InProgress));
        ticket.finish(Some(&[Bytes::from_static(b"re"), Bytes::from_static(b"ply")]));
        match drc.begin(&call(&p, 1, 12), 100, &args(b"abc"), at(2)) {
            Lookup::Replay(b) => assert_eq!(&b[..], b"reply"),
            _ => panic!("replay expected"),
        };
    }

    #[test]
    fn dropped_ticket_and_oversized_reply_leave_nothing() {
        let drc = Drc::new(8, 4, Duration::from_secs(120));
        let p = peer("10.0.0.1:800");
        let Lookup::Miss(t) = drc.begin(&call(&p, 1, 12), 100, &args(b""), at(0)) else { panic!("miss") };
        drop(t);
        assert_eq!(drc.len(), 0);
        let Lookup::Miss(t) = drc.begin(&call(&p, 1, 12), 100, &args(b""), at(0)) else { panic!("miss") };
        t.finish(Some(&[Bytes::from_static(b"12345")]));
        assert_eq!(drc.len(), 0);
        assert!(matches!(drc.begin(&call(&p, 1, 12), 100, &args(b""), at(0)), Lookup::Miss(_)));
    }

    #[test]
    fn expired_in_progress_entry_is_replaced_and_its_ticket_stores_nothing() {
        let drc = Drc::new(8, 1024, Duration::from_secs(10));
        let p = peer("10.0.0.1:800");
        let Lookup::Miss(old) = drc.begin(&call(&p, 1, 12), 100, &args(b""), at(0)) else { panic!("miss") };
        let Lookup::Miss(new) = drc.begin(&call(&p, 1, 12), 100, &args(b""), at(10)) else { panic!("miss") };
        old.finish(Some(&[Bytes::from_static(b"old")]));
        assert!(matches!(drc.begin(&call(&p, 1, 12), 100, &args(b""), at(11)), Lookup::InProgress));
        new.finish(Some(&[Bytes::from_static(b"new")]));
        match drc.begin(&call(&p, 1, 12), 100, &args(b""), at(12)) {
            Lookup::Replay(b) => assert_eq!(&b[..], b"new"),
            _ => panic!("replay expected"),
        };
    }

    #[test]
    fn bounded_by_capacity_oldest_first() {
        let drc = Drc::new(3, 1024, Duration::from_secs(120));
        let p = peer("10.0.0.1:800");
        for xid in 0..10 {
            let Lookup::Miss(t) = drc.begin(&call(&p, xid, 12), 100, &args(b""), at(0)) else { panic!("miss") };
            t.finish(Some(&[Bytes::from_static(b"r")]));
            assert!(drc.len() <= 3);
        }
        assert!(matches!(drc.begin(&call(&p, 9, 12), 100, &args(b""), at(0)), Lookup::Replay(_)));
        assert!(matches!(drc.begin(&call(&p, 6, 12), 100, &args(b""), at(0)), Lookup::Miss(_)));
    }

    #[test]
    fn port_does_not_matter_credential_and_arguments_do() {
        let drc = Drc::new(8, 1024, Duration::from_secs(120));
        let (p1, p2) = (peer("10.0.0.1:800"), peer("10.0.0.1:801"));
        let Lookup::Miss(t) = drc.begin(&call(&p1, 1, 12), 100, &args(b"abc"), at(0)) else { panic!("miss") };
        t.finish(Some(&[Bytes::from_static(b"r")]));
        assert!(matches!(drc.begin(&call(&p2, 1, 12), 100, &args(b"abc"), at(0)), Lookup::Replay(_)));
        assert!(matches!(drc.begin(&call(&p2, 1, 12), 100, &args(b"abd"), at(0)), Lookup::Miss(_)));
        let mut c = call(&p2, 1, 12);
        c.auth = Auth::Sys { uid: 1, gid: 1, gids: vec![], machinename: Bytes::new() };
        assert!(matches!(drc.begin(&c, 100, &args(b"abc"), at(0)), Lookup::Miss(_)));
    }

    #[test]
    fn which_calls_are_cached() {
        let v40 = args(b"\0\0\0\x01t\0\0\0\0\0\0\0");
        let v41 = args(b"\0\0\0\x01t\0\0\0\0\0\0\x01");
        assert!(cacheable(100003, 3, 12, &args(b"")));
        assert!(!cacheable(100003, 3, 1, &args(b"")));
        assert!(!cacheable(100003, 3, 21, &args(b"")));
        assert!(cacheable(100003, 4, 1, &v40));
        assert!(!cacheable(100003, 4, 1, &v41));
        assert!(!cacheable(100003, 4, 0, &v40));
        assert!(!cacheable(100003, 4, 1, &args(b"\0\0\0\x09t")));
        assert!(!cacheable(100005, 3, 2, &args(b"")));
    }
}

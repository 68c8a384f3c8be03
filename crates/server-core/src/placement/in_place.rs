//! Whether an NFSv4 compound that may block may run in place: on its
//! connection's own thread, for a client with one request at a time
//! (`lone_requests_in_place_after`), instead of paying two context
//! switches for a hand-off to a worker.
//!
//! Such a compound must not wait for the reply to a callback: an NFSv4.1
//! client sends it back over this very connection (its back channel), and
//! no one reads the connection while the compound runs. The one wait is a
//! GETATTR of a file another client holds a write delegation on, which
//! asks that client with CB_GETATTR (RFC 8881 section 10.4.3). So every
//! GETATTR of the compound must be of an object no other client can hold
//! a write delegation on:
//! - one a PUTFH named, when the server knows of no write delegation on it;
//! - one this compound's OPEN just opened or CREATE made: an OPEN that
//!   meets another client's delegation recalls it and fails with DELAY,
//!   and while this client holds the file open no other client is given
//!   a write delegation on it;
//! - a directory (PUTROOTFH, LOOKUPP): delegations are of files;
//! - anything, while the server holds no write delegation at all.
//!
//! NFSv4.0 clients take callbacks on a connection of their own, so their
//! compounds may always run in place. An operation whose arguments the
//! walk cannot step over ends it: the compound goes to a worker.

use proto::nfs4::nfs_opnum4 as op;

use super::{Peek, STATEID_LEN};
use crate::Core;

/// The most operations walked; a longer compound goes to a worker.
const MAX_OPS: u32 = 16;

/// What the walk knows of the current filehandle.
#[derive(Clone, Copy)]
enum Current {
    /// No other client can hold a write delegation on it.
    Safe,
    /// The object a PUTFH named (export, file).
    Named(u32, u64),
    /// Not known here (after a LOOKUP, say).
    Unknown,
}

/// How the walk treats an NFSv4.0 compound.
#[derive(Clone, Copy)]
enum Minor0 {
    /// It may wait for a callback: its reply comes over another connection.
    MayWait,
    /// Walked like any other: the caller needs to know it waits for none.
    Walk,
}

/// `createtype4` values with arguments.
const NF4BLK: u32 = 3;
const NF4CHR: u32 = 4;
const NF4LNK: u32 = 5;
/// `opentype4` OPEN4_CREATE and the `createmode4` values.
const OPEN4_CREATE: u32 = 1;
const UNCHECKED4: u32 = 0;
const GUARDED4: u32 = 1;
const EXCLUSIVE4: u32 = 2;
const EXCLUSIVE4_1: u32 = 3;
/// `open_claim_type4` values.
const CLAIM_NULL: u32 = 0;
const CLAIM_PREVIOUS: u32 = 1;
const CLAIM_DELEGATE_CUR: u32 = 2;
const CLAIM_DELEGATE_PREV: u32 = 3;
const CLAIM_FH: u32 = 4;
const CLAIM_DELEG_CUR_FH: u32 = 5;
const CLAIM_DELEG_PREV_FH: u32 = 6;

impl Peek<'_> {
    /// A bitmap4: a counted array of words.
    pub(super) fn bitmap(&mut self) -> Option<()> {
        let words = self.u32()? as usize;
        self.skip(words.checked_mul(4)?)
    }

    /// An fattr4: a bitmap and the attribute values as one opaque.
    fn fattr(&mut self) -> Option<()> {
        self.bitmap()?;
        self.opaque().map(|_| ())
    }

    /// Steps over the arguments of `op` if it is one of the operations on
    /// state alone (CLOSE, LOCKU, OPEN_DOWNGRADE, DELEGRETURN,
    /// FREE_STATEID, TEST_STATEID, RECLAIM_COMPLETE, RELEASE_LOCKOWNER):
    /// `Some(false)` for any other operation, `None` for a cut record.
    pub(super) fn state_op(&mut self, op: u32) -> Option<bool> {
        match op {
            x if x == op::OP_CLOSE as u32 => self.skip(4 + STATEID_LEN)?,
            x if x == op::OP_LOCKU as u32 => self.skip(4 + 4 + STATEID_LEN + 8 + 8)?,
            x if x == op::OP_OPEN_DOWNGRADE as u32 => self.skip(STATEID_LEN + 4 + 4 + 4)?,
            x if x == op::OP_DELEGRETURN as u32 || x == op::OP_FREE_STATEID as u32 => self.skip(STATEID_LEN)?,
            x if x == op::OP_TEST_STATEID as u32 => {
                let n = self.u32()? as usize;
                self.skip(n.checked_mul(STATEID_LEN)?)?
            }
            x if x == op::OP_RECLAIM_COMPLETE as u32 => self.skip(4)?,
            x if x == op::OP_RELEASE_LOCKOWNER as u32 => {
                self.skip(8)?; // clientid
                self.opaque()?;
            }
            _ => return Some(false),
        }
        Some(true)
    }

    /// OPEN4args after the operation number.
    fn open_args(&mut self) -> Option<()> {
        self.skip(4 + 4 + 4 + 8)?; // seqid, share_access, share_deny, owner's clientid
        self.opaque()?; // owner
        if self.u32()? == OPEN4_CREATE {
            match self.u32()? {
                UNCHECKED4 | GUARDED4 => self.fattr()?,
                EXCLUSIVE4 => self.skip(8)?,
                EXCLUSIVE4_1 => {
                    self.skip(8)?;
                    self.fattr()?
                }
                _ => return None,
            }
        }
        match self.u32()? {
            CLAIM_NULL | CLAIM_DELEGATE_PREV => self.opaque().map(|_| ()),
            CLAIM_PREVIOUS => self.skip(4),
            CLAIM_DELEGATE_CUR => {
                self.skip(STATEID_LEN)?;
                self.opaque().map(|_| ())
            }
            CLAIM_FH | CLAIM_DELEG_PREV_FH => Some(()),
            CLAIM_DELEG_CUR_FH => self.skip(STATEID_LEN),
            _ => None,
        }
    }

    /// CREATE4args after the operation number.
    fn create_args(&mut self) -> Option<()> {
        match self.u32()? {
            NF4LNK => {
                self.opaque()?;
            }
            NF4BLK | NF4CHR => self.skip(8)?,
            _ => {}
        }
        self.opaque()?; // objname
        self.fattr()
    }
}

impl Core {
    /// Whether the compound at `p` (after the RPC header) can be seen to
    /// wait for no callback reply (see the module documentation).
    pub(super) fn compound_never_waits(&self, p: &mut Peek) -> bool {
        self.walk_compound(p, Minor0::MayWait).unwrap_or(false)
    }

    /// Whether the compound at `p` can be seen to wait for no callback
    /// reply whatever its minor version: an NFSv4.0 client's reply comes
    /// over a connection of its own, read by a task of the runtime, so a
    /// compound that may wait for it must not hold the runtime's thread.
    pub(super) fn compound_waits_for_no_callback(&self, p: &mut Peek) -> bool {
        self.walk_compound(p, Minor0::Walk).unwrap_or(false)
    }

    fn walk_compound(&self, p: &mut Peek, minor0: Minor0) -> Option<bool> {
        p.opaque()?; // tag
        if p.u32()? == 0 && matches!(minor0, Minor0::MayWait) {
            return Some(true);
        }
        let n = p.u32()?;
        if n > MAX_OPS {
            return Some(false);
        }
        let none_delegated = !self.v4.any_write_delegated();
        let (mut current, mut saved) = (Current::Unknown, Current::Unknown);
        for _ in 0..n {
            match p.u32()? {
                x if x == op::OP_GETATTR as u32 => {
                    let waits = match current {
                        Current::Safe => false,
                        Current::Named(export, file) => self.v4.write_delegated(export, file),
                        Current::Unknown => !none_delegated,
                    };
                    if waits {
                        return Some(false);
                    }
                    p.bitmap()?;
                }
                x if x == op::OP_SEQUENCE as u32 => p.skip(16 + 4 * 4)?,
                x if x == op::OP_PUTFH as u32 => {
                    current = crate::fh::peek(p.opaque()?).map_or(Current::Unknown, |(e, f)| Current::Named(e, f));
                }
                x if x == op::OP_PUTROOTFH as u32 || x == op::OP_PUTPUBFH as u32 || x == op::OP_LOOKUPP as u32 => {
                    current = Current::Safe;
                }
                x if x == op::OP_LOOKUP as u32 => {
                    p.opaque()?;
                    current = Current::Unknown;
                }
                x if x == op::OP_SAVEFH as u32 => saved = current,
                x if x == op::OP_RESTOREFH as u32 => current = saved,
                x if x == op::OP_OPEN as u32 => {
                    p.open_args()?;
                    current = Current::Safe;
                }
                x if x == op::OP_CREATE as u32 => {
                    p.create_args()?;
                    current = Current::Safe;
                }
                x if x == op::OP_GETFH as u32 || x == op::OP_READLINK as u32 => {}
                x if x == op::OP_ACCESS as u32 || x == op::OP_SECINFO_NO_NAME as u32 => p.skip(4)?,
                x if p.state_op(x)? => {}
                x if x == op::OP_READ as u32 => p.skip(STATEID_LEN + 8 + 4)?,
                x if x == op::OP_WRITE as u32 => {
                    p.skip(STATEID_LEN + 8 + 4)?;
                    p.opaque()?;
                }
                x if x == op::OP_COMMIT as u32 => p.skip(8 + 4)?,
                x if x == op::OP_SETATTR as u32 => {
                    p.skip(STATEID_LEN)?;
                    p.fattr()?;
                }
                x if x == op::OP_REMOVE as u32 || x == op::OP_LINK as u32 => {
                    p.opaque()?;
                }
                x if x == op::OP_RENAME as u32 => {
                    p.opaque()?;
                    p.opaque()?;
                }
                x if x == op::OP_READDIR as u32 => {
                    p.skip(8 + 8 + 4 + 4)?;
                    p.bitmap()?;
                }
                _ => return Some(false),
            }
        }
        Some(true)
    }
}

#[cfg(test)]
mod tests {
    use proto::nfs4::*;

    use super::super::tests::{call, core};
    use crate::fh::HandleData;
    use crate::Core;

    fn compound(minor: u32, ops: Vec<nfs_argop4>) -> Vec<u8> {
        let args = COMPOUND4args { tag: Default::default(), minorversion: minor, argarray: ops };
        call(100003, 4, 1, &xdr::to_bytes(&args))
    }

    fn putfh(c: &Core, fileid: u64) -> nfs_argop4 {
        let fh = c.fh.encode(&HandleData { export_id: 1, fileid, generation: 0 });
        nfs_argop4::OP_PUTFH(PUTFH4args { object: bytes::Bytes::copy_from_slice(&fh) })
    }

    fn getattr() -> nfs_argop4 {
        nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: vec![1 << FATTR4_SIZE, 0] })
    }

    fn open_create() -> nfs_argop4 {
        let attrs = fattr4 { attrmask: vec![0, 1 << (FATTR4_MODE - 32)], attr_vals: vec![0, 0, 1, 0xa4].into() };
        nfs_argop4::OP_OPEN(OPEN4args {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_BOTH,
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: state_owner4 { clientid: 9, owner: b"owner".to_vec().into() },
            openhow: openflag4::OPEN4_CREATE(createhow4::GUARDED4(attrs)),
            claim: open_claim4::CLAIM_NULL(b"new".to_vec().into()),
        })
    }

    fn sequence() -> nfs_argop4 {
        nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
            sa_sessionid: [0; 16],
            sa_sequenceid: 1,
            sa_slotid: 0,
            sa_highest_slotid: 0,
            sa_cachethis: false,
        })
    }

    /// A compound runs in place unless a GETATTR in it may be of a file
    /// another client holds a write delegation on: its CB_GETATTR reply
    /// would come back over the connection the compound holds.
    #[test]
    fn compounds_that_cannot_wait_for_a_callback_run_in_place() {
        let c = core();
        let create = compound(1, vec![sequence(), putfh(&c, 1), open_create(), nfs_argop4::OP_GETFH, getattr()]);
        let stat_file = compound(1, vec![sequence(), putfh(&c, 5), getattr()]);
        let lookup = nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: b"f".to_vec().into() });
        let stat_looked_up = compound(1, vec![sequence(), putfh(&c, 1), lookup, getattr()]);
        let write = nfs_argop4::OP_WRITE(WRITE4args {
            stateid: Default::default(),
            offset: 0,
            stable: stable_how4::FILE_SYNC4,
            data: vec![7; 100].into(),
        });
        let write_file = compound(1, vec![sequence(), putfh(&c, 5), write, getattr()]);
        for (what, record) in [
            ("OPEN-create", &create),
            ("GETATTR", &stat_file),
            ("LOOKUP + GETATTR", &stat_looked_up),
            ("WRITE + GETATTR", &write_file),
        ] {
            assert!(c.in_place_of(record), "{what}, no write delegation anywhere");
        }

        // File 5 is write-delegated (to some client).
        c.v4.write_delegated.add((1, 5, 0));
        assert!(c.in_place_of(&create), "the file an OPEN just opened is never another's");
        assert!(!c.in_place_of(&stat_file), "GETATTR of the delegated file");
        assert!(!c.in_place_of(&write_file));
        assert!(!c.in_place_of(&stat_looked_up), "a looked-up object may be the delegated one");
        let other = compound(1, vec![sequence(), putfh(&c, 6), getattr()]);
        assert!(c.in_place_of(&other), "another file");
        let root = compound(1, vec![sequence(), nfs_argop4::OP_PUTROOTFH, getattr()]);
        assert!(c.in_place_of(&root), "a directory");
        // NFSv4.0 callbacks come over a connection of their own.
        assert!(c.in_place_of(&compound(0, vec![putfh(&c, 5), getattr()])));

        // An operation the walk cannot step over, or a cut record.
        let verify = nfs_argop4::OP_VERIFY(VERIFY4args {
            obj_attributes: fattr4 { attrmask: vec![], attr_vals: Default::default() },
        });
        assert!(!c.in_place_of(&compound(1, vec![sequence(), putfh(&c, 6), verify, getattr()])));
        let mut cut = create.clone();
        cut.truncate(cut.len() - 6);
        assert!(!c.in_place_of(&cut), "truncated");
    }

    /// NFSv3, and NFSv4 compounds of either minor version that cannot
    /// wait for a callback's reply, wait for nothing but the file system;
    /// a compound that may wait for a CB_GETATTR, NLM or a cut record
    /// does not run without a hand-off.
    #[test]
    fn what_waits_for_the_file_system_only() {
        let c = core();
        let call = super::super::tests::call;
        assert!(c.fs_only_of(&call(100003, 3, 8, &[])), "NFSv3 CREATE");
        let stat40 = compound(0, vec![putfh(&c, 5), getattr()]);
        let stat41 = compound(1, vec![sequence(), putfh(&c, 5), getattr()]);
        assert!(c.fs_only_of(&stat40), "NFSv4.0 GETATTR, no delegation");
        assert!(c.fs_only_of(&stat41), "NFSv4.1 GETATTR, no delegation");
        c.v4.write_delegated.add((1, 5, 0));
        assert!(!c.fs_only_of(&stat40), "NFSv4.0 GETATTR of a write-delegated file");
        assert!(c.in_place_of(&stat40), "which still runs in place, handing the thread's tasks on");
        assert!(!c.fs_only_of(&stat41), "NFSv4.1 GETATTR of a write-delegated file");
        assert!(!c.fs_only_of(&call(100021, 4, 2, &[])), "NLM LOCK");
        assert!(!c.fs_only_of(&call(100003, 3, 8, &[])[..10]), "cut");
        assert!(!c.fs_only_of(&stat41[..stat41.len() - 6]), "cut compound");
    }

    /// Over a file system shared with other servers nothing runs in place:
    /// a backend call may wait for a delegation this connection returns.
    #[test]
    fn nothing_runs_in_place_over_a_shared_file_system() {
        let mut c = core();
        let stat_file = compound(1, vec![sequence(), putfh(&c, 5), getattr()]);
        let v3_null = super::super::tests::call(100003, 3, 0, &[]);
        assert!(c.in_place_of(&stat_file) && c.in_place_of(&v3_null));
        c.shared_locks = true;
        assert!(!c.in_place_of(&stat_file), "NFSv4");
        assert!(!c.in_place_of(&v3_null), "NFSv3");
    }
}

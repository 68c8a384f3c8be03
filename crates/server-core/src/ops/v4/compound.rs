//! The state one COMPOUND carries from operation to operation: current
//! and saved file handles, current and saved stateids (RFC 8881
//! 16.2.3.1.2), and the session slot SEQUENCE claimed.

use bytes::Bytes;
use proto::nfs4::*;
use vfs::VfsError;

use super::pseudo::Child;
use super::status::stat4;
use crate::fh::HandleData;
use crate::rpc::Call;
use crate::state::State4;
use crate::{Core, WarnKind};

/// The NFSv4 error for a refused client: WRONGSEC when only the
/// transport's protection is wrong (the client may come back over TLS, as
/// knfsd answers for `xprtsec=`), ACCESS otherwise.
fn denied4(d: crate::Denied) -> nfsstat4 {
    match d {
        crate::Denied::TransportSecurity => nfsstat4::NFS4ERR_WRONGSEC,
        crate::Denied::NoRule | crate::Denied::InsecurePort => nfsstat4::NFS4ERR_ACCESS,
    }
}

/// `HandleData::export_id` of pseudo-file-system handles; real export ids
/// never take it (the transport numbers exports from 1).
pub(crate) const PSEUDO_EXPORT_ID: u32 = u32::MAX;

pub(crate) use crate::fh::Fh;

/// The session slot this compound runs in (set by SEQUENCE).
#[derive(Debug, Clone)]
pub(crate) struct SeqCtx {
    pub sessionid: sessionid4,
    pub slotid: u32,
    pub clientid: clientid4,
    /// The client asked for the reply to be cached (`sa_cachethis`).
    pub cachethis: bool,
    /// The session's `ca_maxresponsesize` and `ca_maxresponsesize_cached`.
    pub max_response: u32,
    pub max_cached: u32,
}

pub(crate) struct Compound<'a> {
    pub core: &'a Core,
    pub call: &'a Call<'a>,
    pub minor: u32,
    pub cfh: Option<Fh>,
    pub sfh: Option<Fh>,
    pub current_stateid: Option<stateid4>,
    pub saved_stateid: Option<stateid4>,
    pub seq: Option<SeqCtx>,
    /// Index of the operation being run (0-based).
    pub op_index: usize,
    /// Operations in the compound.
    pub op_count: usize,
    /// The data its READ asks for, read from the page cache before the
    /// compound ran (on the connection's thread, `Call::nowait`).
    pub read_ahead: Option<super::read::ReadAhead>,
    /// A handle of this compound whose MAC was verified already (by the
    /// read ahead), so PUTFH of it does not verify it again.
    pub verified_fh: Option<(nfs_fh4, crate::fh::HandleData)>,
    /// Set by an operation that must wait for an event before it can
    /// answer: the compound is parked and the operation run again later.
    pub park: Option<crate::park::WaitId>,
    /// What a resumed compound's waiting operation waited for.
    pub holder_answer: Option<crate::park::HolderAnswer>,
    /// The current handle has not yet been checked against the call's
    /// security flavor (`wrongsec`).
    pub sec_pending: bool,
}

pub(crate) use crate::ops::Obj;

impl Obj<'_> {
    pub fn fh(&self) -> Fh {
        Fh::Obj { export_id: self.export.id, id: self.id, generation: self.attrs.generation }
    }
}

impl<'a> Compound<'a> {
    pub fn new(core: &'a Core, call: &'a Call<'a>, minor: u32) -> Self {
        Compound {
            core,
            call,
            minor,
            cfh: None,
            sfh: None,
            current_stateid: None,
            saved_stateid: None,
            seq: None,
            op_index: 0,
            op_count: 0,
            read_ahead: None,
            verified_fh: None,
            park: None,
            holder_answer: None,
            sec_pending: false,
        }
    }

    pub fn state(&self) -> &'a State4 {
        &self.core.v4
    }

    /// The connection the call arrived on (for back channels).
    pub fn conn(&self) -> u64 {
        self.call.peer.conn
    }

    /// The current file handle, or NFS4ERR_NOFILEHANDLE.
    pub fn cfh(&self) -> Result<Fh, nfsstat4> {
        self.cfh.ok_or(nfsstat4::NFS4ERR_NOFILEHANDLE)
    }

    /// The current file handle as an object of an export. Pseudo-fs
    /// directories are refused with `pseudo_err` (what the operation
    /// should say about them, e.g. ROFS for changes, ISDIR for READ).
    pub fn cobj(&self, pseudo_err: nfsstat4) -> Result<Obj<'a>, nfsstat4> {
        match self.cfh()? {
            Fh::Pseudo(_) => Err(pseudo_err),
            fh => self.resolve(fh),
        }
    }

    /// Resolves an export object, checking the export rules for the peer
    /// and that the object is still the one the handle named.
    pub fn resolve(&self, fh: Fh) -> Result<Obj<'a>, nfsstat4> {
        let Fh::Obj { export_id, id, generation } = fh else {
            return Err(nfsstat4::NFS4ERR_INVAL);
        };
        let core = self.core;
        let Some(export) = core.export_by_id(export_id) else {
            return Err(nfsstat4::NFS4ERR_STALE);
        };
        let rule = core.rule_for(export, self.call.peer, "NFSv4 request").map_err(denied4)?;
        let creds = crate::ops::creds_for(&self.call.auth, rule);
        let attrs = match export.fs.getattr(id) {
            Ok(a) => a,
            Err(VfsError::NotFound | VfsError::Stale) => return Err(nfsstat4::NFS4ERR_STALE),
            Err(e) => return Err(stat4(e)),
        };
        if attrs.generation != generation {
            return Err(nfsstat4::NFS4ERR_STALE);
        }
        Ok(Obj { export, rule, creds, id, attrs })
    }

    /// Where LOOKUP of `name` in pseudo directory `node` leads.
    pub fn pseudo_lookup(&self, node: u32, name: &[u8]) -> Result<Fh, nfsstat4> {
        match self.core.pseudo.child(node, name) {
            Some(Child::Node(n)) => Ok(Fh::Pseudo(n)),
            Some(Child::Export(id)) => {
                let export = self.core.export_by_id(id).ok_or(nfsstat4::NFS4ERR_NOENT)?;
                self.core.rule_for(export, self.call.peer, "NFSv4 lookup").map_err(denied4)?;
                let root = export.fs.root();
                let attrs = export.fs.getattr(root).map_err(stat4)?;
                Ok(Fh::Obj { export_id: id, id: root, generation: attrs.generation })
            }
            None => Err(nfsstat4::NFS4ERR_NOENT),
        }
    }

    /// The parent of a handle across the pseudo-fs/export boundary:
    /// `Ok(None)` for the root.
    pub fn parent_of_export_root(&self, export_id: u32) -> Option<Fh> {
        self.core.pseudo.mount_point(export_id).map(|(node, _)| Fh::Pseudo(node))
    }

    /// The root handle (PUTROOTFH): the pseudo root, or the export
    /// mounted at `/`.
    pub fn root_fh(&self) -> Result<Fh, nfsstat4> {
        match self.core.pseudo.root_export {
            None => Ok(Fh::Pseudo(0)),
            Some(id) => {
                let export = self.core.export_by_id(id).ok_or(nfsstat4::NFS4ERR_STALE)?;
                let root = export.fs.root();
                let attrs = export.fs.getattr(root).map_err(stat4)?;
                Ok(Fh::Obj { export_id: id, id: root, generation: attrs.generation })
            }
        }
    }

    pub fn encode_fh(&self, fh: Fh) -> nfs_fh4 {
        Bytes::copy_from_slice(&self.fh_wire(fh))
    }

    /// [`Compound::encode_fh`] without the allocation, for a handle
    /// written into a message in place (each READDIR entry's).
    pub fn fh_wire(&self, fh: Fh) -> [u8; crate::fh::FH_LEN] {
        let h = match fh {
            Fh::Pseudo(n) => HandleData { export_id: PSEUDO_EXPORT_ID, fileid: n.into(), generation: 0 },
            Fh::Obj { export_id, id, generation } => HandleData { export_id, fileid: id, generation },
        };
        self.core.fh.encode(&h)
    }

    /// BADHANDLE for malformed or forged handles, STALE for pseudo nodes
    /// that no longer exist; export objects are checked when used.
    pub fn decode_fh(&self, fh: &nfs_fh4) -> Result<Fh, nfsstat4> {
        let known = self.verified_fh.as_ref().filter(|(wire, _)| wire == fh).map(|(_, h)| Ok(*h));
        let Ok(h) = known.unwrap_or_else(|| self.core.fh.decode(fh)) else {
            let peer = self.call.peer;
            self.core.warn(
                WarnKind::Handle,
                || tracing::warn!(peer = %peer.addr, len = fh.len(), "malformed or forged NFSv4 file handle"),
            );
            return Err(nfsstat4::NFS4ERR_BADHANDLE);
        };
        if h.export_id == PSEUDO_EXPORT_ID {
            let n = u32::try_from(h.fileid).map_err(|_| nfsstat4::NFS4ERR_BADHANDLE)?;
            if !self.core.pseudo.exists(n) {
                return Err(nfsstat4::NFS4ERR_STALE);
            }
            return Ok(Fh::Pseudo(n));
        }
        Ok(Fh::Obj { export_id: h.export_id, id: h.fileid, generation: h.generation })
    }

    /// The client this compound acts for: the session's owner in 4.1.
    pub fn session_client(&self) -> Option<clientid4> {
        self.seq.as_ref().map(|s| s.clientid)
    }

    /// Replaces the "current stateid" special value (RFC 8881 16.2.3.1.2:
    /// seqid 1, other all zero) with the compound's current stateid.
    pub fn resolve_stateid(&self, s: &stateid4) -> Result<stateid4, nfsstat4> {
        if self.minor >= 1 && s.seqid == 1 && s.other == [0u8; 12] {
            return self.current_stateid.clone().ok_or(nfsstat4::NFS4ERR_BAD_STATEID);
        }
        Ok(s.clone())
    }
}

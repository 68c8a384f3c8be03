//! Client ids and sessions as RFC 8881 sections 18.35-18.37 and 18.51
//! have a server keep them, and the back channel's CB_COMPOUND.

use bytes::Bytes;
use proto::nfs4::*;
use tokio::sync::oneshot;

use super::state::{ClientRec, Ctx, SessionRec, SlotRec, State};

impl State {
    pub(super) fn exchange_id(&mut self, a: &EXCHANGE_ID4args) -> Result<nfs_resop4, nfsstat4> {
        let owner = a.eia_clientowner.co_ownerid.clone();
        let verifier = a.eia_clientowner.co_verifier;
        let known = self.clients.get(&owner).filter(|c| c.verifier == verifier).map(|c| c.clientid);
        let clientid = match known {
            Some(id) => id,
            None => {
                // A new client, or the same one run again (another
                // verifier): whatever the old one held goes.
                if let Some(old) = self.clients.get(&owner).map(|c| c.clientid) {
                    self.forget_client(old);
                }
                let id = (u64::from(self.boot) << 32) | self.id();
                let rec =
                    ClientRec { clientid: id, verifier, create_seq: 1, confirmed: false, reclaim_complete: false };
                self.clients.insert(owner.clone(), rec);
                id
            }
        };
        let c = &self.clients[&owner];
        let flags = EXCHGID4_FLAG_USE_NON_PNFS | if c.confirmed { EXCHGID4_FLAG_CONFIRMED_R } else { 0 };
        Ok(nfs_resop4::OP_EXCHANGE_ID(EXCHANGE_ID4res::NFS4_OK(EXCHANGE_ID4resok {
            eir_clientid: clientid,
            eir_sequenceid: c.create_seq,
            eir_flags: flags,
            eir_state_protect: state_protect4_r::SP4_NONE,
            eir_server_owner: server_owner4 { so_minor_id: 0, so_major_id: Bytes::from_static(b"fake41") },
            eir_server_scope: Bytes::from_static(b"fake41"),
            eir_server_impl_id: vec![],
        })))
    }

    pub(super) fn create_session(&mut self, ctx: &Ctx, a: &CREATE_SESSION4args) -> Result<nfs_resop4, nfsstat4> {
        let c =
            self.clients.values_mut().find(|c| c.clientid == a.csa_clientid).ok_or(nfsstat4::NFS4ERR_STALE_CLIENTID)?;
        if a.csa_sequence != c.create_seq {
            return Err(nfsstat4::NFS4ERR_SEQ_MISORDERED);
        }
        c.create_seq = c.create_seq.wrapping_add(1);
        c.confirmed = true;
        let granted = a.csa_fore_chan_attrs.ca_maxrequests.clamp(1, self.slots);
        let mut sessionid = [0u8; 16];
        sessionid[..4].copy_from_slice(&self.boot.to_be_bytes());
        sessionid[4..12].copy_from_slice(&self.id().to_be_bytes());
        let back = a.csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0;
        let slots = (0..granted).map(|_| SlotRec { seqid: 0, cached: None, busy: false }).collect();
        let rec = SessionRec {
            clientid: a.csa_clientid,
            slots,
            back_conn: back.then_some(ctx.conn),
            cb_program: a.csa_cb_program,
            cb_seqid: 0,
        };
        self.sessions.insert(sessionid, rec);
        let fore = channel_attrs4 { ca_maxrequests: granted, ..a.csa_fore_chan_attrs.clone() };
        Ok(nfs_resop4::OP_CREATE_SESSION(CREATE_SESSION4res::NFS4_OK(CREATE_SESSION4resok {
            csr_sessionid: sessionid,
            csr_sequence: a.csa_sequence,
            csr_flags: a.csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            csr_fore_chan_attrs: fore,
            csr_back_chan_attrs: a.csa_back_chan_attrs.clone(),
        })))
    }

    pub(super) fn bind_conn(&mut self, ctx: &Ctx, a: &BIND_CONN_TO_SESSION4args) -> Result<nfs_resop4, nfsstat4> {
        let s = self.sessions.get_mut(&a.bctsa_sessid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
        s.back_conn = Some(ctx.conn);
        Ok(nfs_resop4::OP_BIND_CONN_TO_SESSION(BIND_CONN_TO_SESSION4res::NFS4_OK(BIND_CONN_TO_SESSION4resok {
            bctsr_sessid: a.bctsa_sessid,
            bctsr_dir: channel_dir_from_server4::CDFS4_BOTH,
            bctsr_use_conn_in_rdma_mode: false,
        })))
    }

    pub(super) fn destroy_session(&mut self, a: &DESTROY_SESSION4args) -> Result<nfs_resop4, nfsstat4> {
        self.sessions.remove(&a.dsa_sessionid).ok_or(nfsstat4::NFS4ERR_BADSESSION)?;
        Ok(nfs_resop4::OP_DESTROY_SESSION(DESTROY_SESSION4res { dsr_status: nfsstat4::NFS4_OK }))
    }

    pub(super) fn destroy_clientid(&mut self, a: &DESTROY_CLIENTID4args) -> Result<nfs_resop4, nfsstat4> {
        if !self.clients.values().any(|c| c.clientid == a.dca_clientid) {
            return Err(nfsstat4::NFS4ERR_STALE_CLIENTID);
        }
        self.forget_client(a.dca_clientid);
        Ok(nfs_resop4::OP_DESTROY_CLIENTID(DESTROY_CLIENTID4res { dcr_status: nfsstat4::NFS4_OK }))
    }

    pub(super) fn reclaim_complete(&mut self, ctx: &Ctx) -> Result<nfs_resop4, nfsstat4> {
        let id = ctx.clientid.ok_or(nfsstat4::NFS4ERR_OP_NOT_IN_SESSION)?;
        let c = self.clients.values_mut().find(|c| c.clientid == id).ok_or(nfsstat4::NFS4ERR_STALE_CLIENTID)?;
        if std::mem::replace(&mut c.reclaim_complete, true) {
            return Err(nfsstat4::NFS4ERR_COMPLETE_ALREADY);
        }
        Ok(nfs_resop4::OP_RECLAIM_COMPLETE(RECLAIM_COMPLETE4res { rcr_status: nfsstat4::NFS4_OK }))
    }

    /// CB_SEQUENCE + CB_RECALL of the delegation held on `fh`: the
    /// connection to send it on, the framed call and where its reply goes.
    #[allow(clippy::type_complexity)]
    pub(super) fn cb_recall(
        &mut self,
        fh: &Bytes,
    ) -> Result<(u64, Vec<Bytes>, oneshot::Receiver<CB_COMPOUND4res>), String> {
        self.cb_about(fh, |stateid, fh| nfs_cb_argop4::OP_CB_RECALL(CB_RECALL4args { stateid, truncate: false, fh }))
    }

    /// CB_SEQUENCE + CB_NOTIFY of `changes` under the delegation held on
    /// the directory `fh`.
    #[allow(clippy::type_complexity)]
    pub(super) fn cb_notify(
        &mut self,
        fh: &Bytes,
        cna_changes: Vec<notify4>,
    ) -> Result<(u64, Vec<Bytes>, oneshot::Receiver<CB_COMPOUND4res>), String> {
        self.cb_about(fh, |cna_stateid, cna_fh| {
            nfs_cb_argop4::OP_CB_NOTIFY(CB_NOTIFY4args { cna_stateid, cna_fh, cna_changes })
        })
    }

    /// A callback about the delegation held on `fh`, `op` made from its
    /// stateid and `fh`.
    #[allow(clippy::type_complexity)]
    pub(super) fn cb_about(
        &mut self,
        fh: &Bytes,
        op: impl FnOnce(stateid4, Bytes) -> nfs_cb_argop4,
    ) -> Result<(u64, Vec<Bytes>, oneshot::Receiver<CB_COMPOUND4res>), String> {
        let (other, d) = self
            .stateids
            .iter()
            .find(|(_, s)| s.deleg && s.fh == fh)
            .ok_or_else(|| format!("no delegation on {fh:?}"))?;
        let stateid = stateid4 { seqid: d.seqid, other: *other };
        let clientid = d.clientid;
        // Until the client sends the next request on the granting OPEN's
        // slot, the server cannot know it saw the grant: the recall names
        // that request (RFC 8881 section 2.10.6.3).
        let referring = d.granted_by.filter(|(sid, slot, seq)| {
            self.sessions.get(sid).and_then(|s| s.slots.get(*slot as usize)).is_some_and(|s| s.seqid == *seq)
        });
        let csa_referring_call_lists = referring
            .map(|(rcl_sessionid, rc_slotid, rc_sequenceid)| {
                let rcl_referring_calls = vec![referring_call4 { rc_sequenceid, rc_slotid }];
                referring_call_list4 { rcl_sessionid, rcl_referring_calls }
            })
            .into_iter()
            .collect();
        let (sessionid, s) = self
            .sessions
            .iter_mut()
            .find(|(_, s)| s.clientid == clientid)
            .ok_or("the delegation's client has no session")?;
        let conn = s.back_conn.ok_or("no back channel")?;
        s.cb_seqid += 1;
        let args = CB_COMPOUND4args {
            tag: Bytes::new(),
            minorversion: 1,
            callback_ident: 0,
            argarray: vec![
                nfs_cb_argop4::OP_CB_SEQUENCE(CB_SEQUENCE4args {
                    csa_sessionid: *sessionid,
                    csa_sequenceid: s.cb_seqid,
                    csa_slotid: 0,
                    csa_highest_slotid: 0,
                    csa_cachethis: false,
                    csa_referring_call_lists,
                }),
                op(stateid, fh.clone()),
            ],
        };
        let prog = s.cb_program;
        self.next_xid += 1;
        let xid = self.next_xid;
        let (tx, rx) = oneshot::channel();
        self.cb_waiting.insert(xid, tx);
        Ok((conn, super::wire::call_record(xid, prog, 1, xdr::to_bytes(&args)), rx))
    }
}

//! The back channel (RFC 8881 section 20): the server's calls on the
//! session's connection. CB_NULL answers nothing; CB_COMPOUND's
//! CB_SEQUENCE is echoed, CB_RECALL starts returning the delegation at
//! once (write back, then DELEGRETURN: one round trip after the flush),
//! CB_RECALL_ANY returns them all, CB_NOTIFY updates a delegated
//! directory's cache, CB_OFFLOAD ends a background COPY's wait; anything
//! else is NFS4ERR_NOTSUPP. A call under RPCSEC_GSS is
//! checked, and answered, under the context this client lent the server
//! for it (`cbsec`).

use std::sync::{Arc, Weak};
use std::time::Duration;

use proto::nfs4::*;
use tokio::sync::mpsc;
use xdr::{Decode, Decoder};

use super::session::{CbRefresh, CB_PROGRAM};
use super::Nfs41;
use crate::transport::Incoming;

const CB_NULL: u32 = 0;
const CB_COMPOUND: u32 = 1;

/// How long a recall of a delegation this client does not know yet is
/// held back: the OPEN reply that grants it may still be on its way to
/// its caller (it came in first on the connection, but another task takes
/// it). In steps of `RECALL_RACE_STEP`.
const RECALL_RACE_STEPS: u32 = 25;
const RECALL_RACE_STEP: Duration = Duration::from_millis(2);

/// Answers the server's calls, and offers each new connection (after a
/// reconnect) as the back channel: a connection is bound to the session's
/// fore channel by its first SEQUENCE, to the back channel only when the
/// client asks (RFC 8881 section 2.10.3.1), and a server with no back
/// channel cannot recall a delegation, so another client's OPEN would
/// wait for this client's lease to run out.
///
/// Under Kerberos it also lends the server each new context the
/// connection sets up (after the server refused the one before), which
/// callbacks then come under.
pub(crate) async fn serve(nfs: Weak<Nfs41>, mut calls: mpsc::UnboundedReceiver<Incoming>) {
    let Some((mut reconnects, mut contexts)) = nfs.upgrade().map(|n| (n.conn.reconnects(), n.conn.context_changes()))
    else {
        return;
    };
    let (mut watching, mut watching_contexts) = (true, true);
    loop {
        let Incoming { call, reply } = tokio::select! {
            c = calls.recv() => match c {
                Some(c) => c,
                None => return,
            },
            r = reconnects.changed(), if watching => {
                match (r, nfs.upgrade()) {
                    (Ok(()), Some(nfs)) => {
                        tokio::spawn(async move { nfs.bind_back_channel().await });
                    }
                    (Ok(()), None) => return,
                    (Err(_), _) => watching = false,
                }
                continue;
            }
            r = contexts.changed(), if watching_contexts => {
                match (r, nfs.upgrade()) {
                    (Ok(()), Some(nfs)) => {
                        tokio::spawn(async move { nfs.refresh_back_channel(CbRefresh::NewContext).await });
                    }
                    (Ok(()), None) => return,
                    (Err(_), _) => watching_contexts = false,
                }
                continue;
            }
        };
        let Some(me) = nfs.upgrade() else { return };
        // The credential first, as a server judges a call before its
        // program.
        let Some((args, reply)) = me.cb_sec.admit(&call, reply) else { continue };
        drop(me);
        if call.prog != CB_PROGRAM {
            // Not ours: answering nothing lets the server time out.
            tracing::debug!(prog = call.prog, "call for an unknown program on the back channel");
            continue;
        }
        match call.proc_ {
            CB_NULL => reply.send(vec![]),
            CB_COMPOUND => {
                let Some(nfs) = nfs.upgrade() else { return };
                let args = match CB_COMPOUND4args::decode(&mut Decoder::new(args)) {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("undecodable CB_COMPOUND from the server: {e}");
                        continue;
                    }
                };
                // Recalls wait for the grant they race with: answer off
                // this loop so other callbacks are not held up.
                tokio::spawn(async move {
                    let res = compound(&nfs, args).await;
                    reply.send(vec![xdr::to_bytes(&res)]);
                });
            }
            other => tracing::debug!(proc = other, "unknown back-channel procedure"),
        }
    }
}

async fn compound(nfs: &Arc<Nfs41>, args: CB_COMPOUND4args) -> CB_COMPOUND4res {
    let mut resarray = Vec::new();
    let mut status = nfsstat4::NFS4_OK;
    // Whether the server named requests of ours it does not know we saw
    // the replies of: the callback may have overtaken one (a grant).
    let mut racing = false;
    for op in args.argarray {
        let (res, s) = match op {
            nfs_cb_argop4::OP_CB_SEQUENCE(s) => {
                racing = !s.csa_referring_call_lists.is_empty();
                let ok = CB_SEQUENCE4resok {
                    csr_sessionid: s.csa_sessionid,
                    csr_sequenceid: s.csa_sequenceid,
                    csr_slotid: s.csa_slotid,
                    csr_highest_slotid: s.csa_highest_slotid,
                    csr_target_highest_slotid: s.csa_highest_slotid,
                };
                (nfs_cb_resop4::OP_CB_SEQUENCE(CB_SEQUENCE4res::NFS4_OK(ok)), nfsstat4::NFS4_OK)
            }
            nfs_cb_argop4::OP_CB_RECALL(r) => {
                let s = recall(nfs, &r.stateid, racing).await;
                (nfs_cb_resop4::OP_CB_RECALL(CB_RECALL4res { status: s }), s)
            }
            nfs_cb_argop4::OP_CB_RECALL_ANY(a) => {
                let me = nfs.clone();
                let dirs = proto::bitmap4::has(&a.craa_type_mask, RCA4_TYPE_MASK_DIR_DLG);
                tokio::spawn(async move {
                    if dirs {
                        me.return_all_dir_delegations().await;
                    }
                    me.return_all_delegations().await
                });
                (
                    nfs_cb_resop4::OP_CB_RECALL_ANY(CB_RECALL_ANY4res { crar_status: nfsstat4::NFS4_OK }),
                    nfsstat4::NFS4_OK,
                )
            }
            // The layout serves no new I/O; with nothing left to commit
            // through it, it is simply forgotten (RFC 8881 section 20.3.3
            // lets a client that holds none say NOMATCHING_LAYOUT).
            nfs_cb_argop4::OP_CB_LAYOUTRECALL(r) => {
                let held = match &r.clora_recall {
                    layoutrecall4::LAYOUTRECALL4_FILE(f) => nfs.layout_recalled(&f.lor_fh),
                    _ => nfs.all_layouts_recalled(),
                };
                let s = if held { nfsstat4::NFS4_OK } else { nfsstat4::NFS4ERR_NOMATCHING_LAYOUT };
                (nfs_cb_resop4::OP_CB_LAYOUTRECALL(CB_LAYOUTRECALL4res { clorr_status: s }), s)
            }
            nfs_cb_argop4::OP_CB_NOTIFY(n) => {
                let s = notify(nfs, &n, racing).await;
                (nfs_cb_resop4::OP_CB_NOTIFY(CB_NOTIFY4res { cnr_status: s }), s)
            }
            nfs_cb_argop4::OP_CB_OFFLOAD(o) => {
                nfs.offloads.lock().deliver(o);
                let s = nfsstat4::NFS4_OK;
                (nfs_cb_resop4::OP_CB_OFFLOAD(CB_OFFLOAD4res { cor_status: s }), s)
            }
            _ => {
                let s = nfsstat4::NFS4ERR_NOTSUPP;
                (nfs_cb_resop4::OP_CB_ILLEGAL(CB_ILLEGAL4res { status: s }), s)
            }
        };
        resarray.push(res);
        if s != nfsstat4::NFS4_OK {
            status = s;
            break;
        }
    }
    CB_COMPOUND4res { status, tag: args.tag, resarray }
}

/// CB_NOTIFY (see `Nfs41::cb_notify`). A notification for a directory
/// whose GET_DIR_DELEGATION reply has not reached its caller yet (the
/// server notified a change right after the grant) waits for it, as a
/// recall does; still unknown, it is NFS4ERR_DELAY when the server said
/// it may race a reply, else NFS4ERR_BAD_STATEID.
async fn notify(nfs: &Arc<Nfs41>, args: &CB_NOTIFY4args, racing: bool) -> nfsstat4 {
    let mut s = nfs.cb_notify(args);
    for _ in 0..RECALL_RACE_STEPS {
        if s != nfsstat4::NFS4ERR_BAD_STATEID || !(racing || nfs.dir_delegation_pending(&args.cna_fh)) {
            break;
        }
        tokio::time::sleep(RECALL_RACE_STEP).await;
        s = nfs.cb_notify(args);
    }
    if s == nfsstat4::NFS4ERR_BAD_STATEID && racing {
        return nfsstat4::NFS4ERR_DELAY;
    }
    s
}

/// CB_RECALL: OK and the return under way, or NFS4ERR_BADHANDLE for a
/// delegation this client does not hold (RFC 8881 section 20.2.3).
/// When the server said the recall may have overtaken a reply (`racing`)
/// and the grant has not come within the wait, NFS4ERR_DELAY: the server
/// asks again later (section 2.10.6.3). BADHANDLE would tell it this
/// client holds nothing while the grant is still on its way here, and
/// nothing would then return the delegation until the server revoked it.
async fn recall(nfs: &Arc<Nfs41>, stateid: &stateid4, racing: bool) -> nfsstat4 {
    for _ in 0..RECALL_RACE_STEPS {
        // A directory's, whose GET_DIR_DELEGATION reply is on its way.
        if let Some(s) = nfs.recall_dir(stateid) {
            return s;
        }
        let found = nfs.delegations.lock().recall(stateid);
        if let Some(fh) = found {
            nfs.counters.lock().recalls += 1;
            let me = nfs.clone();
            tokio::spawn(async move { me.return_delegation(&fh).await });
            return nfsstat4::NFS4_OK;
        }
        tokio::time::sleep(RECALL_RACE_STEP).await;
    }
    if racing {
        nfsstat4::NFS4ERR_DELAY
    } else {
        nfsstat4::NFS4ERR_BADHANDLE
    }
}

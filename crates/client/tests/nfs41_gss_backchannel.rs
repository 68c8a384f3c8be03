//! The NFSv4.1 back channel under RPCSEC_GSS (RFC 8881 section 2.10.8.2),
//! against the scripted fake behind a gate that speaks RPCSEC_GSS with a
//! stand-in mechanism (`common/gss_gate`): the client lends its context
//! in CREATE_SESSION with AUTH_NONE after it, answers a recall under it,
//! refuses callbacks under a handle it did not give, a forged checksum
//! or a replay, lends a new context with BACKCHANNEL_CTL when the server
//! says the old one ends and when it set one up after the server lost
//! the old, and mounts under AUTH_NONE callbacks when the server does not
//! take the context (NFS4ERR_NOENT). Real time, bounded: each wait is 10 s
//! at most, each step takes milliseconds.

#[path = "common/fake41/mod.rs"]
mod fake41;
#[path = "common/gss_gate.rs"]
mod gss_gate;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client::nfs41::{Nfs41, OpenAccess};
use client::ClientSettings;
use fake41::Fake;
use gss_gate::Gate;
use proto::nfs4::*;
use proto::rpc::{auth_stat, rejected_reply, reply_body, reply_data};
use rpcsec::testing::FakeContext;
use rpcsec::Service;

const CB_NULL: u32 = 0;
const WAIT: Duration = Duration::from_secs(10);

async fn mount(gate: &Gate, service: Service) -> Arc<Nfs41> {
    let mut s = ClientSettings::default();
    s.machine_name = Some("gss-test".into());
    let params = gate.params(service, &s, Duration::from_secs(3600), Duration::from_secs(300));
    let connect = Nfs41::connect(params, &s, "/export", &[1]);
    tokio::time::timeout(WAIT, connect).await.expect("mount within 10 s").expect("mount")
}

fn gss_offer(parms: &[callback_sec_parms4]) -> Option<&gss_cb_handles4> {
    match parms {
        [callback_sec_parms4::RPCSEC_GSS(h), callback_sec_parms4::AUTH_NONE] => Some(h),
        _ => None,
    }
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f).await.expect("the test finished within 60 s")
}

/// A CB_NULL under the context lent last is answered under it.
async fn cb_null_answered(gate: &Gate, xid: u32) {
    let (call, seq) = gate.lent_call(xid, CB_NULL, b"", None);
    let answer = gate.call(xid, call, WAIT).await.expect("an answer to CB_NULL");
    let (reply_body::MSG_ACCEPTED(a), body) = answer else { panic!("{answer:?}") };
    assert_eq!(a.reply_data, reply_data::SUCCESS);
    assert_eq!(gate.check_lent_reply(seq, &a.verf, body).expect("answered under the lent context").len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_go_under_the_lent_context_and_a_new_one_is_lent_when_it_ends() {
    within(async {
        let fake = Fake::start(|s| s.delegate_writes = true).await;
        let gate = Gate::start(fake.addr, Service::Integrity).await;
        let n = mount(&gate, Service::Integrity).await;

        // CREATE_SESSION lends the context the call went under, AUTH_NONE
        // after it.
        let (first_ctx, offered) = gate.with(|s| (s.contexts.clone(), s.create_sessions.clone()));
        assert_eq!(first_ctx.len(), 1);
        let [parms] = &offered[..] else { panic!("{offered:?}") };
        let h = gss_offer(parms).unwrap_or_else(|| panic!("{parms:?}"));
        assert_eq!((h.gcbp_service, &h.gcbp_handle_from_server), (rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY, &first_ctx[0]));
        assert_eq!(gate.lent_handle().as_ref(), Some(&h.gcbp_handle_from_client));

        // A recall comes under it, and its answer too.
        let create = Some(createhow4::UNCHECKED4(Default::default()));
        let (fh, _, _) = n.open_name(&n.root(), "f", OpenAccess::Both, create).await.expect("open");
        assert_eq!(n.delegations_held(), 1);
        let res = tokio::time::timeout(WAIT, fake.recall(&fh)).await.expect("the recall answered");
        assert_eq!(res.status, nfsstat4::NFS4_OK, "{res:?}");
        gate.until("verified callback answer", |s| s.callbacks_verified == 1).await;
        cb_null_answered(&gate, 0x7000_0001).await;

        // A handle this client did not give: CREDPROBLEM.
        let mut stranger = rpcsec::GssClient::new(Bytes::from_static(b"no-such"), Box::new(FakeContext::pair(1).0), 8);
        let call = stranger.call(0x7000_0002, 0x4000_0000, 1, CB_NULL, Service::Integrity, 1, b"", false).unwrap();
        let answer = gate.call(0x7000_0002, call.concat(), WAIT).await;
        let credproblem = reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(auth_stat::RPCSEC_GSS_CREDPROBLEM));
        assert_eq!(answer.map(|a| a.0), Some(credproblem.clone()));
        // The right handle with a checksum of another key: the same.
        let lent = gate.lent_handle().expect("lent");
        let mut forger = rpcsec::GssClient::new(lent, Box::new(FakeContext::pair(999).0), 8);
        let call = forger.call(0x7000_0003, 0x4000_0000, 1, CB_NULL, Service::Integrity, 50, b"", false).unwrap();
        let answer = gate.call(0x7000_0003, call.concat(), WAIT).await;
        assert_eq!(answer.map(|a| a.0), Some(credproblem));
        // A replay (a sequence number already seen): no answer at all.
        let (call, _) = gate.lent_call(0x7000_0004, CB_NULL, b"", Some(1));
        assert!(gate.call(0x7000_0004, call, Duration::from_millis(300)).await.is_none());

        // The server says the context lent ends: a new one is set up and
        // lent, AUTH_NONE after it again.
        gate.set_seq_flags(SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING);
        n.getattr(&n.root()).await.expect("getattr");
        gate.until("BACKCHANNEL_CTL", |s| !s.backchannel_ctls.is_empty()).await;
        let (ctxs, ctls) = gate.with(|s| (s.contexts.clone(), s.backchannel_ctls.clone()));
        assert_eq!(ctxs.len(), 2, "{ctxs:?}");
        let h2 = gss_offer(&ctls[0]).unwrap_or_else(|| panic!("{ctls:?}")).clone();
        assert_eq!(h2.gcbp_handle_from_server, ctxs[1]);
        assert_ne!(h2.gcbp_handle_from_client, h.gcbp_handle_from_client);
        assert_eq!(gate.lent_handle(), Some(h2.gcbp_handle_from_client.clone()));
        // The flags go on for a while: one lending is all they get.
        n.getattr(&n.root()).await.expect("getattr");
        gate.set_seq_flags(0);
        cb_null_answered(&gate, 0x7000_0005).await;
        assert_eq!(gate.with(|s| (s.backchannel_ctls.len(), s.contexts.len())), (1, 2));

        // The server loses its contexts: the client sets up another, its
        // call goes through, and the new context is lent as well.
        gate.forget_contexts();
        n.getattr(&n.root()).await.expect("getattr under a new context");
        gate.until("a second BACKCHANNEL_CTL", |s| s.backchannel_ctls.len() == 2).await;
        let (ctxs, ctls) = gate.with(|s| (s.contexts.clone(), s.backchannel_ctls.clone()));
        assert_eq!(ctxs.len(), 3, "{ctxs:?}");
        let h3 = gss_offer(&ctls[1]).unwrap_or_else(|| panic!("{ctls:?}")).clone();
        assert_eq!(h3.gcbp_handle_from_server, ctxs[2]);
        cb_null_answered(&gate, 0x7000_0006).await;

        // Delegations still come back under it.
        let create = Some(createhow4::UNCHECKED4(Default::default()));
        let (fh, _, _) = n.open_name(&n.root(), "g", OpenAccess::Both, create).await.expect("open");
        let res = tokio::time::timeout(WAIT, fake.recall(&fh)).await.expect("the recall answered");
        assert_eq!(res.status, nfsstat4::NFS4_OK, "{res:?}");
        gate.until("second verified recall", |s| s.callbacks_verified == 2).await;
        assert_eq!(gate.with(|s| (s.backchannel_ctls.len(), s.callback_failures.clone())), (2, vec![]));
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_take_the_context_gets_auth_none_callbacks() {
    within(async {
        let fake = Fake::start(|s| s.delegate_writes = true).await;
        let gate = Gate::start(fake.addr, Service::Privacy).await;
        gate.refuse_gss_callbacks();
        let n = mount(&gate, Service::Privacy).await;
        let offered = gate.with(|s| s.create_sessions.clone());
        assert_eq!(offered.len(), 2, "{offered:?}");
        assert!(gss_offer(&offered[0]).is_some(), "{offered:?}");
        assert_eq!(offered[1], vec![callback_sec_parms4::AUTH_NONE]);
        assert!(gate.lent_handle().is_none());

        // Callbacks come under AUTH_NONE, as the gate forwards them.
        let create = Some(createhow4::UNCHECKED4(Default::default()));
        let (fh, _, _) = n.open_name(&n.root(), "f", OpenAccess::Both, create).await.expect("open");
        let res = tokio::time::timeout(WAIT, fake.recall(&fh)).await.expect("the recall answered");
        assert_eq!(res.status, nfsstat4::NFS4_OK, "{res:?}");

        // Nothing is lent later either.
        gate.set_seq_flags(SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED);
        n.getattr(&n.root()).await.expect("getattr");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(gate.with(|s| (s.backchannel_ctls.len(), s.contexts.len())), (0, 1));
    })
    .await
}

//! RPCSEC_GSS contexts renewed before they end (`[gss] renew_before_secs`),
//! against the scripted NFSv4.1 fake behind the gate that speaks
//! RPCSEC_GSS with a stand-in mechanism (`common/gss_gate`) and refuses a
//! context once its lifetime is over: calls made without pause across
//! several renewals all succeed and none is refused, calls out under the
//! old context when the new one is set up are answered under the old, and
//! each new context is lent to the back channel with BACKCHANNEL_CTL.
//! Real time, bounded: about 4 s of calls, each wait 10 s at most.

#[path = "common/fake41/mod.rs"]
mod fake41;
#[path = "common/gss_gate.rs"]
mod gss_gate;

use std::time::{Duration, Instant};

use client::nfs41::Nfs41;
use client::ClientSettings;
use fake41::Fake;
use gss_gate::Gate;
use proto::nfs4::callback_sec_parms4;
use proto::rpc::{reply_body, reply_data};
use rpcsec::Service;

const WAIT: Duration = Duration::from_secs(10);
/// Contexts last 3 s and are renewed 2 s before their end, which is
/// more than half their lifetime: each is renewed 1.5 s after it was set
/// up, with 1.5 s to spare.
const LIFETIME: Duration = Duration::from_secs(3);
const RENEW_BEFORE: Duration = Duration::from_secs(2);
const CALLING: Duration = Duration::from_millis(4000);
const CALLERS: usize = 8;

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f).await.expect("the test finished within 60 s")
}

/// The server's handle of the context a BACKCHANNEL_CTL lent.
fn lent(parms: &[callback_sec_parms4]) -> Option<bytes::Bytes> {
    match parms {
        [callback_sec_parms4::RPCSEC_GSS(h), callback_sec_parms4::AUTH_NONE] => Some(h.gcbp_handle_from_server.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_are_renewed_before_they_end_and_no_call_is_refused() {
    within(async {
        let fake = Fake::start(|_| {}).await;
        let gate = Gate::start(fake.addr, Service::Integrity).await;
        gate.set_lifetime(LIFETIME);
        let mut s = ClientSettings::default();
        s.machine_name = Some("gss-test".into());
        let params = gate.params(Service::Integrity, &s, LIFETIME, RENEW_BEFORE);
        let connect = Nfs41::connect(params, &s, "/export", &[1]);
        let n = tokio::time::timeout(WAIT, connect).await.expect("mount within 10 s").expect("mount");

        // Callers that never pause, so that calls are out whenever a new
        // context is set up.
        let until = Instant::now() + CALLING;
        let mut callers = tokio::task::JoinSet::new();
        for _ in 0..CALLERS {
            let n = n.clone();
            callers.spawn(async move {
                let mut made = 0u32;
                while Instant::now() < until {
                    n.getattr(&n.root()).await.expect("no call fails across a renewal");
                    made += 1;
                }
                made
            });
        }
        let mut made = 0;
        while let Some(r) = callers.join_next().await {
            made += r.expect("a caller finished");
        }

        let (contexts, set_up_at, expired, older) =
            gate.with(|s| (s.contexts.clone(), s.set_up_at.clone(), s.expired, s.replies_under_older));
        assert_eq!(expired, 0, "no call came under a context past its lifetime ({made} calls)");
        // Set up at about 0, 1.5 and 3 s: each before the one before ended.
        assert!(contexts.len() >= 3, "{contexts:?} in {CALLING:?}");
        for (i, pair) in set_up_at.windows(2).enumerate() {
            let after = pair[1].duration_since(pair[0]);
            assert!(after < LIFETIME, "context {} set up {after:?} after the one before", i + 2);
            assert!(after >= LIFETIME / 2 - Duration::from_millis(100), "renewed early, after {after:?}");
        }
        assert!(older > 0, "no call was out under the old context when a new one came ({made} calls)");

        // Each new context is lent for callbacks, the newest last.
        let newest = contexts.last().cloned();
        gate.until("the newest context lent", |s| s.backchannel_ctls.last().and_then(|p| lent(p)) == newest).await;
        let ctls = gate.with(|s| s.backchannel_ctls.clone());
        for parms in &ctls {
            let handle = lent(parms).unwrap_or_else(|| panic!("{parms:?}"));
            assert!(contexts[1..].contains(&handle), "{handle:?} lent, set up {contexts:?}");
        }
        // And a callback under it is answered under it.
        let (call, seq) = gate.lent_call(0x7000_0001, 0, b"", None);
        let answer = gate.call(0x7000_0001, call, WAIT).await.expect("an answer to CB_NULL");
        let (reply_body::MSG_ACCEPTED(a), body) = answer else { panic!("{answer:?}") };
        assert_eq!(a.reply_data, reply_data::SUCCESS);
        gate.check_lent_reply(seq, &a.verf, body).expect("answered under the newest context");
        assert_eq!(gate.with(|s| s.callback_failures.clone()), Vec::<String>::new());
        assert_eq!(fake.violations(), Vec::<String>::new());
    })
    .await
}

//! RPCSEC_GSS (RFC 2203) through the whole server dispatch, and the
//! client's checks of replies: any credential, verifier, creation token or
//! sealed body gets a reply, a refusal or nothing, never a panic; the
//! client's reply opener never panics on what a server sends.
//!
//! The mechanism is the stand-in of `rpcsec::testing` (deterministic, no
//! KDC), so that the fuzzer can reach past the header checksum: half the
//! inputs are mutations of valid calls under an established context
//! (creation, data with each service, destruction).
#![no_main]
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use proto::rpc::opaque_auth;
use rpcsec::testing::{FakeContext, FakeInitiator, FakeMech};
use rpcsec::{GssClient, Identity, PrincipalMap, Service};
use server_core::exports::{ClientMatcher, ClientRule, ExportOptions};
use server_core::{Core, CoreSettings, Export, ServicePorts};
use xdr::Decoder;
#[path = "core_common.rs"]
mod core_common;
use core_common::{peer, record};

struct Everyone;

impl PrincipalMap for Everyone {
    fn identity(&self, _: &str) -> Option<Identity> {
        Some(Identity { uid: 1000, gid: 1000, gids: vec![] })
    }
}

const KEY: u64 = 77;

struct State {
    core: Core,
    templates: Vec<Vec<u8>>,
    client: Mutex<GssClient>,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        let options = ExportOptions {
            read_only: false,
            secure: false,
            sec: vec![rpcsec::Flavor::Krb5i, rpcsec::Flavor::Krb5],
            ..ExportOptions::default()
        };
        let export = Export {
            id: 1,
            path: "/fuzz".into(),
            fs: Arc::new(vfs::MemFs::new()),
            rules: vec![ClientRule::new(ClientMatcher::Everyone, options)],
        };
        let core = Core::new(CoreSettings::default(), vec![export], [7; 32], [1; 8], ServicePorts { tcp: 2049, udp: None })
            .with_gss(Arc::new(FakeMech { lifetime: Duration::from_secs(3600) }), Arc::new(Everyone));
        let token = FakeInitiator::token("fuzz@TEST", KEY);
        let init = rpcsec::call::init_call(1, 100003, 3, &Bytes::new(), &token).concat();
        let reply = core.handle(Bytes::from(init.clone()), &peer()).reply.expect("init reply").concat();
        // The handle: after the reply header (24 bytes with an RPCSEC_GSS
        // verifier of 8), the init result starts with it.
        let mut d = Decoder::new(Bytes::from(reply));
        let _ = <proto::rpc::rpc_msg as xdr::Decode>::decode(&mut d).expect("reply header");
        let res: proto::rpcsec_gss::rpc_gss_init_res = xdr::Decode::decode(&mut d).expect("init result");
        let mut client = GssClient::new(res.handle, Box::new(FakeContext::pair(KEY).0), res.seq_window);
        let mut templates = vec![init];
        let args = [&[][..], &[0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8][..]];
        for (i, service) in [Service::None, Service::Integrity, Service::Privacy].into_iter().enumerate() {
            for (proc_, a) in [(0u32, args[0]), (1, args[1]), (4, args[1])] {
                let seq = client.next_seq().expect("seq");
                let rec = client.call(2 + i as u32, 100003, 3, proc_, service, seq, a, false).expect("seal");
                templates.push(rec.concat());
            }
        }
        let seq = client.next_seq().expect("seq");
        templates.push(client.call(40, 100003, 3, 0, Service::None, seq, &[], true).expect("destroy").concat());
        State { core, templates, client: Mutex::new(client) }
    })
}

fuzz_target!(|data: &[u8]| {
    let st = state();
    if let Some(rec) = record(&st.templates, data) {
        let record = st.core.parse(Bytes::from(rec));
        let _ = st.core.placement(&record, false);
        let _ = st.core.may_run_in_place(&record);
        let _ = st.core.handle_record(&record, &peer());
    }
    // The client side: a reply's verifier and body as a server sent them.
    if data.len() > 8 {
        let (head, body) = data.split_at(8);
        let seq = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) % 64;
        let service = match head[4] % 3 {
            0 => Service::None,
            1 => Service::Integrity,
            _ => Service::Privacy,
        };
        let verf = opaque_auth { flavor: proto::rpc::auth_flavor::RPCSEC_GSS, body: Bytes::copy_from_slice(&head[4..]) };
        if let Ok(mut c) = st.client.lock() {
            let _ = c.reply(service, seq, &verf, Bytes::copy_from_slice(body));
        }
        let mut ctx = FakeContext::pair(KEY).1;
        let _ = rpcsec::open_body(&mut ctx, service, seq, Bytes::copy_from_slice(body));
    }
});

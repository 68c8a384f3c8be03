//! NFSv4 COMPOUNDs (minor versions 0 and 1) and NLM calls on an in-memory
//! export: any record gets a reply or none, never a panic, and state
//! stays bounded.
//!
//! Half the inputs mutate valid calls made at start-up: compounds inside
//! a real session (so SEQUENCE passes and the operations behind it run),
//! 4.0 compounds, and NLM locks on a real handle.
#![no_main]
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use proto::nfs4::*;
use proto::rpc::rpc_msg;
use server_core::exports::{ClientMatcher, ClientRule, ExportOptions};
use server_core::{Core, CoreSettings, Export, ServicePorts};
use xdr::{Decode, Decoder};
#[path = "core_common.rs"]
mod core_common;
use core_common::{call, peer, record};

struct State {
    core: Core,
    templates: Vec<Vec<u8>>,
}

fn compound(minor: u32, ops: Vec<nfs_argop4>) -> Vec<u8> {
    call(100003, 4, 1, &COMPOUND4args { tag: Bytes::from_static(b"fz"), minorversion: minor, argarray: ops })
}

fn run(core: &Core, minor: u32, ops: Vec<nfs_argop4>) -> Option<COMPOUND4res> {
    let reply = core.handle(Bytes::from(compound(minor, ops)), &peer()).reply?;
    let mut d = Decoder::new(reply.concat().into());
    rpc_msg::decode(&mut d).ok()?;
    COMPOUND4res::decode(&mut d).ok()
}

fn channel() -> channel_attrs4 {
    channel_attrs4 {
        ca_headerpadsize: 0,
        ca_maxrequestsize: 1 << 20,
        ca_maxresponsesize: 1 << 20,
        ca_maxresponsesize_cached: 1 << 16,
        ca_maxoperations: 16,
        ca_maxrequests: 8,
        ca_rdma_ird: vec![],
    }
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        let options = ExportOptions { read_only: false, root_squash: false, secure: false, ..ExportOptions::default() };
        let export = Export {
            id: 1,
            path: "/fuzz".into(),
            fs: Arc::new(vfs::MemFs::new()),
            rules: vec![ClientRule::new(ClientMatcher::Everyone, options)],
        };
        let core =
            Core::new(CoreSettings::default(), vec![export], [7; 32], [1; 8], ServicePorts { tcp: 2049, udp: None });
        let owner = client_owner4 { co_verifier: [1; 8], co_ownerid: Bytes::from_static(b"fuzz-client") };
        let eid = EXCHANGE_ID4args {
            eia_clientowner: owner,
            eia_flags: EXCHGID4_FLAG_USE_NON_PNFS,
            eia_state_protect: state_protect4_a::SP4_NONE,
            eia_client_impl_id: vec![],
        };
        let mut clientid = 0;
        let mut sessionid = [0u8; 16];
        if let Some(r) = run(&core, 1, vec![nfs_argop4::OP_EXCHANGE_ID(eid.clone())]) {
            if let Some(nfs_resop4::OP_EXCHANGE_ID(EXCHANGE_ID4res::NFS4_OK(ok))) = r.resarray.first() {
                clientid = ok.eir_clientid;
                let cs = CREATE_SESSION4args {
                    csa_clientid: ok.eir_clientid,
                    csa_sequence: ok.eir_sequenceid,
                    csa_flags: 0,
                    csa_fore_chan_attrs: channel(),
                    csa_back_chan_attrs: channel(),
                    csa_cb_program: 1,
                    csa_sec_parms: vec![callback_sec_parms4::AUTH_NONE],
                };
                if let Some(r) = run(&core, 1, vec![nfs_argop4::OP_CREATE_SESSION(cs)]) {
                    if let Some(nfs_resop4::OP_CREATE_SESSION(CREATE_SESSION4res::NFS4_OK(ok))) = r.resarray.first() {
                        sessionid = ok.csr_sessionid;
                    }
                }
            }
        }
        let seq = |n: u32| {
            nfs_argop4::OP_SEQUENCE(SEQUENCE4args {
                sa_sessionid: sessionid,
                sa_sequenceid: n,
                sa_slotid: n % 8,
                sa_highest_slotid: 7,
                sa_cachethis: true,
            })
        };
        let lookup = |n: &'static [u8]| nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: Bytes::from_static(n) });
        let stateid = stateid4 { seqid: 0, other: [0; 12] };
        let owner = open_owner4 { clientid, owner: Bytes::from_static(b"o") };
        let open = |name: &'static [u8]| {
            nfs_argop4::OP_OPEN(OPEN4args {
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_BOTH,
                share_deny: OPEN4_SHARE_DENY_NONE,
                owner: owner.clone(),
                openhow: openflag4::OPEN4_CREATE(createhow4::UNCHECKED4(fattr4 {
                    attrmask: vec![0, 2],
                    attr_vals: Bytes::from_static(&[0, 0, 1, 0xa4]),
                })),
                claim: open_claim4::CLAIM_NULL(Bytes::from_static(name)),
            })
        };
        let base = || vec![nfs_argop4::OP_PUTROOTFH, lookup(b"fuzz")];
        let with = |mut a: Vec<nfs_argop4>, b: Vec<nfs_argop4>| {
            a.extend(b);
            a
        };
        let getattr = nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: vec![0xffff_ffff, 0xffff_ffff, 0xff] });
        let templates = vec![
            compound(1, vec![nfs_argop4::OP_EXCHANGE_ID(eid)]),
            compound(1, with(vec![seq(1)], with(base(), vec![getattr.clone(), nfs_argop4::OP_GETFH]))),
            compound(1, with(vec![seq(2)], with(base(), vec![open(b"f"), nfs_argop4::OP_GETFH]))),
            compound(
                1,
                with(
                    vec![seq(3)],
                    with(
                        base(),
                        vec![
                            open(b"g"),
                            nfs_argop4::OP_WRITE(WRITE4args {
                                stateid: stateid4 { seqid: 1, other: [0; 12] },
                                offset: 0,
                                stable: stable_how4::FILE_SYNC4,
                                data: Bytes::from_static(b"data"),
                            }),
                            nfs_argop4::OP_LOCK(LOCK4args {
                                locktype: nfs_lock_type4::WRITE_LT,
                                reclaim: false,
                                offset: 0,
                                length: u64::MAX,
                                locker: locker4::TRUE(open_to_lock_owner4 {
                                    open_seqid: 0,
                                    open_stateid: stateid4 { seqid: 1, other: [0; 12] },
                                    lock_seqid: 0,
                                    lock_owner: lock_owner4 { clientid, owner: Bytes::from_static(b"l") },
                                }),
                            }),
                            nfs_argop4::OP_CLOSE(CLOSE4args { seqid: 0, open_stateid: stateid.clone() }),
                        ],
                    ),
                ),
            ),
            compound(
                1,
                with(
                    vec![seq(4)],
                    with(
                        base(),
                        vec![nfs_argop4::OP_READDIR(READDIR4args {
                            cookie: 0,
                            cookieverf: [0; 8],
                            dircount: 1024,
                            maxcount: 8192,
                            attr_request: vec![0x0010_011a, 0x00b0_a23a],
                        })],
                    ),
                ),
            ),
            compound(0, with(base(), vec![getattr, nfs_argop4::OP_READLINK])),
            compound(
                1,
                with(
                    vec![seq(5)],
                    vec![
                        nfs_argop4::OP_TEST_STATEID(TEST_STATEID4args { ts_stateids: vec![stateid.clone()] }),
                        nfs_argop4::OP_FREE_STATEID(FREE_STATEID4args { fsa_stateid: stateid }),
                        nfs_argop4::OP_DESTROY_SESSION(DESTROY_SESSION4args { dsa_sessionid: sessionid }),
                    ],
                ),
            ),
        ];
        State { core, templates }
    })
}

fuzz_target!(|data: &[u8]| {
    let st = state();
    let Some(record) = record(&st.templates, data) else { return };
    // Where the transport would run it: peeks that must never panic either.
    let record = st.core.parse(Bytes::from(record));
    let placed = st.core.placement(&record, data.first().is_some_and(|b| b & 1 == 1));
    let _ = st.core.may_run_in_place(&record);
    let _ = st.core.waits_for_the_file_system_only(&record);
    // A READ placed to be tried on the connection's thread runs as the
    // transport runs it: there, and on a worker only if it gave up.
    let tried = if placed == server_core::Placement::TryInline { st.core.try_handle_inline(&record, &peer()) } else { None };
    let mut out = tried.unwrap_or_else(|| st.core.handle_record(&record, &peer()));
    // A compound parked for a callback's answer runs on as the transport
    // would run it once its time is up (no answer comes here).
    while let Some(parked) = out.parked.take() {
        out = st.core.resume(parked, &peer());
    }
});

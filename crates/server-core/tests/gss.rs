//! RPCSEC_GSS (RFC 2203) through `Core::handle`, with the stand-in
//! mechanism of `rpcsec::testing` and the caller's side of `rpcsec::call`
//! as the client: context creation and destruction, the three services,
//! the sequence window, every refusal, and exports' `sec=` (MOUNT's
//! flavor list, AUTH_TOOWEAK for NFSv3, SECINFO and NFS4ERR_WRONGSEC for
//! NFSv4).

mod common;

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::v4::*;
use common::*;
use proto::nfs3::*;
use proto::nfs4::{
    nfs_argop4, nfs_resop4, nfsstat4, secinfo4, COMPOUND4args, COMPOUND4res, GETATTR4args, LOOKUP4args, SECINFO4args,
    SECINFO4res,
};
use proto::rpc::*;
use proto::rpcsec_gss::rpc_gss_init_res;
use rpcsec::call::{check_init_verifier, init_call};
use rpcsec::testing::{FakeContext, FakeInitiator, FakeMech};
use rpcsec::{major, GssClient, Identity, PrincipalMap, Service};
use server_core::{ManualClock, MemStore, NoBackchannel};
use xdr::{Decode, Decoder};

/// alice is the test user (uid 1000); anyone else has no account.
struct Accounts;

impl PrincipalMap for Accounts {
    fn identity(&self, principal: &str) -> Option<Identity> {
        (principal == "alice@TEST").then(|| Identity { uid: 1000, gid: 1000, gids: vec![1000, 50] })
    }
}

const LIFETIME: Duration = Duration::from_secs(600);

fn gss_env(exports: &str) -> (Env, Arc<ManualClock>) {
    let mut env = env(exports);
    let clock = Arc::new(ManualClock::default());
    env.core = env
        .core
        .with_nfs4_env(clock.clone(), Arc::new(NoBackchannel), Arc::new(MemStore::default()))
        .with_gss(Arc::new(FakeMech { lifetime: LIFETIME }), Arc::new(Accounts));
    (env, clock)
}

fn accepted_verf(r: &Reply) -> opaque_auth {
    match &r.body {
        reply_body::MSG_ACCEPTED(a) => a.verf.clone(),
        other => panic!("expected MSG_ACCEPTED, got {other:?}"),
    }
}

fn denied(r: &Reply) -> rejected_reply {
    match &r.body {
        reply_body::MSG_DENIED(x) => x.clone(),
        other => panic!("expected MSG_DENIED, got {other:?}"),
    }
}

fn send(env: &Env, record: Vec<Bytes>) -> server_core::Outcome {
    env.raw(join(&record))
}

/// Context creation for `principal` with key `key`: the creation reply.
fn init(env: &Env, principal: &str, key: u64) -> (Reply, rpc_gss_init_res) {
    let token = FakeInitiator::token(principal, key);
    let r = parse_reply(send(env, init_call(env.next_xid(), NFS, 3, &Bytes::new(), &token)));
    let res: rpc_gss_init_res = r.result();
    (r, res)
}

/// An established context for alice.
fn login(env: &Env, key: u64) -> GssClient {
    let (r, res) = init(env, "alice@TEST", key);
    assert_eq!(res.gss_major, major::GSS_S_COMPLETE);
    assert_eq!(res.seq_window, 128);
    let (mut ctx, _) = FakeContext::pair(key);
    check_init_verifier(&mut ctx, &res, &accepted_verf(&r)).expect("the window's checksum verifies");
    GssClient::new(res.handle, Box::new(ctx), res.seq_window)
}

/// One call under `c`, its reply checked and opened: the results.
fn call(env: &Env, c: &mut GssClient, prog: u32, vers: u32, proc_: u32, service: Service, args: &[u8]) -> Bytes {
    let seq = c.next_seq().unwrap();
    let r = parse_reply(send(env, c.call(env.next_xid(), prog, vers, proc_, service, seq, args, false).unwrap()));
    assert_eq!(r.accept_stat(), Some(accept_stat::SUCCESS), "{:?}", r.body);
    c.reply(service, seq, &accepted_verf(&r), r.rest.clone()).expect("the reply verifies and opens")
}

fn decode<T: Decode>(b: Bytes) -> T {
    let mut d = Decoder::new(b);
    let v = T::decode(&mut d).expect("results decode");
    assert_eq!(d.remaining(), 0);
    v
}

/// NFSv4 compounds under a context.
struct Gss<'a> {
    env: &'a Env,
    client: RefCell<GssClient>,
    service: Service,
}

impl Transport for Gss<'_> {
    fn compound(&self, minor: u32, ops: Vec<nfs_argop4>) -> COMPOUND4res {
        let args = xdr::to_bytes(&COMPOUND4args { tag: Bytes::from_static(b"t"), minorversion: minor, argarray: ops });
        decode(call(self.env, &mut self.client.borrow_mut(), NFS4, 4, 1, self.service, &args))
    }
}

#[test]
fn calls_run_under_each_service_as_the_principal_s_local_user() {
    let (env, _) = gss_env("/export *(rw,insecure,sec=krb5:krb5i:krb5p)\n");
    let root = env.mount("/export");
    let mut c = login(&env, 7);
    for (i, service) in [Service::None, Service::Integrity, Service::Privacy].into_iter().enumerate() {
        let res: GETATTR3res = decode(call(&env, &mut c, NFS, 3, 1, service, &xdr::to_bytes(&root)));
        assert!(matches!(res, GETATTR3res::NFS3_OK(_)), "{service:?}");
        let args = CREATE3args {
            r#where: diropargs3 { dir: root.clone(), name: name_of(&format!("f{i}")) },
            how: createhow3::UNCHECKED(sattr3::default()),
        };
        let res: CREATE3res = decode(call(&env, &mut c, NFS, 3, 8, service, &xdr::to_bytes(&args)));
        let CREATE3res::NFS3_OK(ok) = res else { panic!("CREATE under {service:?}: {res:?}") };
        let attrs = ok.obj_attributes.expect("attributes of the new file");
        assert_eq!((attrs.uid, attrs.gid), (1000, 1000), "the file belongs to alice's local user");
    }
    assert_eq!(env.core.gss_contexts(), 1);
}

#[test]
fn a_principal_without_an_account_acts_as_the_anonymous_user() {
    let (env, _) = gss_env("/export *(rw,insecure,sec=krb5)\n");
    let root = env.mount("/export");
    let (r, res) = init(&env, "mallory@ELSEWHERE", 9);
    let (mut ctx, _) = FakeContext::pair(9);
    check_init_verifier(&mut ctx, &res, &accepted_verf(&r)).unwrap();
    let mut c = GssClient::new(res.handle, Box::new(ctx), res.seq_window);
    let args = CREATE3args {
        r#where: diropargs3 { dir: root, name: name_of("m") },
        how: createhow3::UNCHECKED(sattr3::default()),
    };
    let res: CREATE3res = decode(call(&env, &mut c, NFS, 3, 8, Service::None, &xdr::to_bytes(&args)));
    // The export root belongs to uid 1000, mode 0755: nobody may not
    // create in it.
    assert!(matches!(res, CREATE3res::default(nfsstat3::NFS3ERR_ACCES, _)), "{res:?}");
}

#[test]
fn replayed_and_stale_sequence_numbers_are_dropped_without_a_reply() {
    let (env, _) = gss_env("/export *(rw,insecure,sec=krb5)\n");
    let mut c = login(&env, 3);
    let record = c.call(env.next_xid(), NFS, 3, 0, Service::None, 5, &[], false).unwrap();
    assert!(send(&env, record.clone()).reply.is_some());
    let again = send(&env, record);
    assert!(again.reply.is_none(), "a replay gets no reply");
    assert_eq!(again.label, "rpcsec_gss.dropped");
    // Far ahead moves the window; 5 - 128 and below are now stale.
    assert!(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, 400, &[], false).unwrap()).reply.is_some());
    assert!(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, 272, &[], false).unwrap()).reply.is_none());
    assert!(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, 273, &[], false).unwrap()).reply.is_some());
    // At MAXSEQ the context is used up: that call is refused, and the
    // context is left for its client to replace.
    let r = parse_reply(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, 0x8000_0000, &[], false).unwrap()));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::RPCSEC_GSS_CTXPROBLEM));
    assert!(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, 274, &[], false).unwrap()).reply.is_some());
}

#[test]
fn forged_unknown_destroyed_and_expired_contexts_are_refused_with_the_rfc_s_errors() {
    let (env, clock) = gss_env("/export *(rw,insecure,sec=krb5)\n");
    let mut c = login(&env, 11);
    // A header checksummed with another key.
    let mut forger = GssClient::new(c.handle().clone(), Box::new(FakeContext::pair(12).0), 128);
    let r = parse_reply(send(&env, forger.call(env.next_xid(), NFS, 3, 0, Service::None, 1, &[], false).unwrap()));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::RPCSEC_GSS_CREDPROBLEM));
    // A handle never issued.
    let mut stranger = GssClient::new(Bytes::from_static(b"not-a-handle"), Box::new(FakeContext::pair(11).0), 128);
    let r = parse_reply(send(&env, stranger.call(env.next_xid(), NFS, 3, 0, Service::None, 1, &[], false).unwrap()));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::RPCSEC_GSS_CREDPROBLEM));
    assert_eq!(r.outcome.label, "rpcsec_gss.credproblem");
    // The forgery did not spend sequence number 1.
    call(&env, &mut c, NFS, 3, 0, Service::None, &[]);
    // Destroyed: gone.
    let seq = c.next_seq().unwrap();
    let r = parse_reply(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, seq, &[], true).unwrap()));
    c.reply(Service::None, seq, &accepted_verf(&r), r.rest.clone()).unwrap();
    assert_eq!(env.core.gss_contexts(), 0);
    let seq = c.next_seq().unwrap();
    let r = parse_reply(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, seq, &[], false).unwrap()));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::RPCSEC_GSS_CREDPROBLEM));
    // Expired: the ticket's lifetime passed.
    let mut c = login(&env, 13);
    clock.advance(LIFETIME);
    let r = parse_reply(send(&env, c.call(env.next_xid(), NFS, 3, 0, Service::None, 1, &[], false).unwrap()));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::RPCSEC_GSS_CTXPROBLEM));
    // An unknown service or control procedure is a bad credential.
    let mut c = login(&env, 14);
    let mut rec = join(&c.call(env.next_xid(), NFS, 3, 0, Service::None, 1, &[], false).unwrap()).to_vec();
    rec[47] = 9; // the service word of the credential
    let r = parse_reply(env.raw(Bytes::from(rec)));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_BADCRED));
}

#[test]
fn garbage_tokens_and_bodies_get_errors_not_contexts() {
    let (env, _) = gss_env("/export *(rw,insecure,sec=krb5i)\n");
    let r = parse_reply(send(&env, init_call(env.next_xid(), NFS, 3, &Bytes::new(), b"\xff\x00garbage")));
    let res: rpc_gss_init_res = r.result();
    assert_eq!(res.gss_major, major::GSS_S_DEFECTIVE_TOKEN);
    assert!(res.handle.is_empty() && res.gss_token.is_empty());
    assert_eq!(accepted_verf(&r).flavor, auth_flavor::AUTH_NONE);
    assert_eq!(env.core.gss_contexts(), 0);
    // CONTINUE_INIT of a creation that never began.
    let r = parse_reply(send(&env, init_call(env.next_xid(), NFS, 3, &Bytes::from_static(b"h"), b"x")));
    assert_eq!(r.result::<rpc_gss_init_res>().gss_major, major::GSS_S_NO_CONTEXT);
    // Arguments whose checksum fails: GARBAGE_ARGS, with the verifier.
    let mut c = login(&env, 21);
    let root = env.mount("/export");
    let mut rec =
        join(&c.call(env.next_xid(), NFS, 3, 1, Service::Integrity, 1, &xdr::to_bytes(&root), false).unwrap()).to_vec();
    let n = rec.len();
    rec[n - 20] ^= 0x40;
    let r = parse_reply(env.raw(Bytes::from(rec)));
    assert_eq!(r.accept_stat(), Some(accept_stat::GARBAGE_ARGS));
    c.check_verifier(1, &accepted_verf(&r)).expect("GARBAGE_ARGS carries the verifier");
    // Truncated credential bodies and records.
    for cut in [30, 44, 52, 60] {
        let rec = join(&c.call(env.next_xid(), NFS, 3, 0, Service::None, 2, &[], false).unwrap());
        let _ = env.raw(rec.slice(..cut));
    }
}

#[test]
fn exports_sec_lists_flavors_and_refuses_weaker_callers() {
    let (env, _) = gss_env("/export *(rw,insecure,sec=krb5p)\n");
    let mnt = env.mnt("/export");
    let proto::mount3::mountres3::MNT3_OK(ok) = mnt else { panic!("MNT") };
    assert_eq!(ok.auth_flavors, vec![390005], "MNT answers with the export's flavors");
    let root = nfs_fh3 { data: ok.fhandle };
    // AUTH_SYS, and krb5i, are too weak.
    let r = env.call_as(NFS, 3, 1, &user(), &xdr::to_bytes(&root));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_TOOWEAK));
    let mut c = login(&env, 31);
    let seq = c.next_seq().unwrap();
    let r = parse_reply(send(
        &env,
        c.call(env.next_xid(), NFS, 3, 1, Service::Integrity, seq, &xdr::to_bytes(&root), false).unwrap(),
    ));
    assert_eq!(denied(&r), rejected_reply::AUTH_ERROR(auth_stat::AUTH_TOOWEAK));
    let res: GETATTR3res = decode(call(&env, &mut c, NFS, 3, 1, Service::Privacy, &xdr::to_bytes(&root)));
    assert!(matches!(res, GETATTR3res::NFS3_OK(_)));
    // NULL needs no flavor in particular.
    assert_eq!(env.call_as(NFS, 3, 0, &user(), &[]).accept_stat(), Some(accept_stat::SUCCESS));
}

fn secinfo_flavors(r: &COMPOUND4res, i: usize) -> Vec<secinfo4> {
    match &r.resarray[i] {
        nfs_resop4::OP_SECINFO(SECINFO4res::NFS4_OK(l)) | nfs_resop4::OP_SECINFO_NO_NAME(SECINFO4res::NFS4_OK(l)) => {
            l.clone()
        }
        other => panic!("not a SECINFO result: {other:?}"),
    }
}

#[test]
fn nfsv4_secinfo_names_the_flavors_and_wrongsec_falls_where_the_rfc_says() {
    let (env, _) = gss_env("/open *(rw,insecure)\n/secret *(rw,insecure,sec=krb5p:krb5i)\n");
    let sys = As(&env, &user());
    // SECINFO of the Kerberos export from the pseudo root, as AUTH_SYS.
    let r =
        sys.compound(0, vec![nfs_argop4::OP_PUTROOTFH, nfs_argop4::OP_SECINFO(SECINFO4args { name: name("secret") })]);
    assert_eq!(r.status, nfsstat4::NFS4_OK);
    let f = secinfo_flavors(&r, 1);
    assert_eq!(f.len(), 2);
    assert!(matches!(&f[0], secinfo4::RPCSEC_GSS(g) if g.oid[..] == rpcsec::KRB5_OID_DER[..] && g.service as u32 == 3));
    assert!(matches!(&f[1], secinfo4::RPCSEC_GSS(g) if g.service as u32 == 2));
    let r =
        sys.compound(0, vec![nfs_argop4::OP_PUTROOTFH, nfs_argop4::OP_SECINFO(SECINFO4args { name: name("open") })]);
    assert!(matches!(secinfo_flavors(&r, 1)[..], [secinfo4::default(1), secinfo4::default(0)]));
    // LOOKUP into it answers WRONGSEC (PUTROOTFH before a LOOKUP may not).
    let r = sys.compound(
        0,
        vec![
            nfs_argop4::OP_PUTROOTFH,
            nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: name("secret") }),
            nfs_argop4::OP_GETFH,
        ],
    );
    assert_eq!(r.status, nfsstat4::NFS4ERR_WRONGSEC);
    assert_eq!(r.resarray.len(), 2, "the LOOKUP answers for it");
    // With krb5p the handle comes back; PUTFH of it then GETATTR as
    // AUTH_SYS fails at the PUTFH, PUTFH then SECINFO_NO_NAME does not.
    let krb = Gss { env: &env, client: RefCell::new(login(&env, 41)), service: Service::Privacy };
    let r = krb.compound(
        0,
        vec![
            nfs_argop4::OP_PUTROOTFH,
            nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: name("secret") }),
            nfs_argop4::OP_GETFH,
        ],
    );
    assert_eq!(r.status, nfsstat4::NFS4_OK);
    let fh = fh_res(&r, 2);
    let r = sys.compound(0, vec![putfh(&fh), nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: mask(&[1]) })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_WRONGSEC);
    assert_eq!(r.resarray.len(), 1, "the PUTFH answers for it");
    let r = sys.compound(
        1,
        vec![putfh(&fh), nfs_argop4::OP_SECINFO_NO_NAME(proto::nfs4::secinfo_style4::SECINFO_STYLE4_CURRENT_FH)],
    );
    // (4.1 without a session: only the first operation's status matters)
    assert_ne!(r.status, nfsstat4::NFS4ERR_WRONGSEC);
    // krb5i is admitted too; krb5 is not.
    let r = Gss { env: &env, client: RefCell::new(login(&env, 42)), service: Service::Integrity }
        .compound(0, vec![putfh(&fh), nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: mask(&[1]) })]);
    assert_eq!(r.status, nfsstat4::NFS4_OK);
    let r = Gss { env: &env, client: RefCell::new(login(&env, 43)), service: Service::None }
        .compound(0, vec![putfh(&fh), nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: mask(&[1]) })]);
    assert_eq!(r.status, nfsstat4::NFS4ERR_WRONGSEC);
    // NFSv4.0 SECINFO keeps the current handle: what follows it still
    // answers for the handle.
    let r = sys.compound(
        0,
        vec![
            putfh(&fh),
            nfs_argop4::OP_SAVEFH,
            nfs_argop4::OP_PUTROOTFH,
            nfs_argop4::OP_RESTOREFH,
            nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: mask(&[1]) }),
        ],
    );
    assert_eq!(r.status, nfsstat4::NFS4ERR_WRONGSEC);
    assert_eq!(r.resarray.len(), 4, "the last put-filehandle operation (RESTOREFH) answers for it");
}

/// A Kerberos caller gets owner names whatever `owner_format` says
/// (numeric strings are for AUTH_SYS); an AUTH_SYS caller gets numbers.
#[test]
fn kerberos_callers_get_owner_names() {
    let mut env = env_on("/export *(rw,insecure,sec=krb5:sys)\n", vec![std::sync::Arc::new(vfs::MemFs::new())]);
    let clock = Arc::new(ManualClock::default());
    env.core = env
        .core
        .with_nfs4_env(clock, Arc::new(NoBackchannel), Arc::new(MemStore::default()))
        .with_gss(Arc::new(FakeMech { lifetime: LIFETIME }), Arc::new(Accounts));
    const FATTR4_OWNER: u32 = 36;
    let ops = || {
        vec![
            nfs_argop4::OP_PUTROOTFH,
            nfs_argop4::OP_LOOKUP(LOOKUP4args { objname: name("export") }),
            nfs_argop4::OP_GETATTR(GETATTR4args { attr_request: mask(&[FATTR4_OWNER]) }),
        ]
    };
    let owner = |r: COMPOUND4res| {
        assert_eq!(r.status, nfsstat4::NFS4_OK);
        let nfs_resop4::OP_GETATTR(proto::nfs4::GETATTR4res::NFS4_OK(ok)) = &r.resarray[2] else { panic!() };
        let s = Decoder::new(ok.obj_attributes.attr_vals.clone()).opaque_var(1024).unwrap();
        String::from_utf8(s.to_vec()).unwrap()
    };
    // The MemFs root belongs to root (uid 0), which every host names.
    assert_eq!(owner(As(&env, &user()).compound(0, ops())), "0");
    let krb = Gss { env: &env, client: RefCell::new(login(&env, 51)), service: Service::None };
    assert_eq!(owner(krb.compound(0, ops())), "root@localdomain");
}

// ---- The NFSv4.1 back channel under a lent context (RFC 8881 2.10.8.2) ----

use common::v4::RecordingBackchannel;
use proto::nfs4::{
    callback_sec_parms4, gss_cb_handles4, rpc_gss_svc_t, BACKCHANNEL_CTL4args, CREATE_SESSION4res,
    CREATE_SESSION4_FLAG_CONN_BACK_CHAN, EXCHGID4_FLAG_USE_NON_PNFS, SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED,
    SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING, SEQ4_STATUS_CB_PATH_DOWN,
};
use rpcsec::callee::{credential, Callee};
use test_support::nfs4::{create_session_args, exchange_id_args, seq_res, Session};

fn gss_env_cb() -> (Env, Arc<ManualClock>, Arc<RecordingBackchannel>) {
    let mut env = env("/export *(rw,insecure,sec=krb5:krb5i:krb5p)\n");
    let clock = Arc::new(ManualClock::default());
    let cb = Arc::new(RecordingBackchannel::default());
    env.core = env
        .core
        .with_nfs4_env(clock.clone(), cb.clone(), Arc::new(MemStore::default()))
        .with_gss(Arc::new(FakeMech { lifetime: LIFETIME }), Arc::new(Accounts));
    env.peer.conn = 7;
    (env, clock, cb)
}

fn lend(from_server: &Bytes, service: rpc_gss_svc_t) -> callback_sec_parms4 {
    callback_sec_parms4::RPCSEC_GSS(gss_cb_handles4 {
        gcbp_service: service,
        gcbp_handle_from_server: from_server.clone(),
        gcbp_handle_from_client: Bytes::from_static(b"back"),
    })
}

fn create_with(t: &Gss, name: &str, sec: Vec<callback_sec_parms4>) -> Result<Session, proto::nfs4::nfsstat4> {
    let eid = test_support::nfs4::exchange_id(t, 1, exchange_id_args(name, [1; 8], EXCHGID4_FLAG_USE_NON_PNFS));
    let proto::nfs4::EXCHANGE_ID4res::NFS4_OK(eid) = eid else { panic!("{eid:?}") };
    let mut args = create_session_args(eid.eir_clientid, eid.eir_sequenceid, CREATE_SESSION4_FLAG_CONN_BACK_CHAN, 8);
    args.csa_sec_parms = sec;
    match test_support::nfs4::create_session(t, 1, args) {
        CREATE_SESSION4res::NFS4_OK(cs) => {
            let slots = cs.csr_fore_chan_attrs.ca_maxrequests as usize;
            Ok(Session { clientid: eid.eir_clientid, sessionid: cs.csr_sessionid, seq: vec![0; slots], minor: 1 })
        }
        CREATE_SESSION4res::default(s) => Err(s),
    }
}

/// Splits a callback record: xid, the header through the credential, the
/// credential, the verifier, the body.
fn split_call(rec: &Bytes) -> (u32, Bytes, Option<proto::rpcsec_gss::rpc_gss_cred_vers_1_t>, opaque_auth, Bytes) {
    let mut d = Decoder::new(rec.clone());
    let xid = d.u32().unwrap();
    for _ in 0..5 {
        d.u32().unwrap();
    }
    let cred = opaque_auth::decode(&mut d).unwrap();
    let header = rec.slice(..rec.len() - d.remaining());
    let verf = opaque_auth::decode(&mut d).unwrap();
    let gss = (cred.flavor == auth_flavor::RPCSEC_GSS).then(|| credential(cred.body).unwrap());
    (xid, header, gss, verf, d.rest())
}

/// The client's answer to a callback under `back`: accepted, its
/// verifier, `results` sealed.
fn sealed_reply(back: &mut Callee, xid: u32, seq: u32, results: &[u8]) -> Bytes {
    let mut e = xdr::Encoder::new();
    e.u32(xid);
    e.u32(1);
    e.u32(0);
    xdr::Encode::encode(&back.verifier(seq).unwrap(), &mut e);
    e.u32(0);
    e.append_segments(back.seal_results(seq, results).unwrap());
    e.into_bytes()
}

/// BACKCHANNEL_CTL lending the back channel one context.
fn backchannel_ctl(offer: callback_sec_parms4) -> nfs_argop4 {
    nfs_argop4::OP_BACKCHANNEL_CTL(BACKCHANNEL_CTL4args { bca_cb_program: 0x40000000, bca_sec_parms: vec![offer] })
}

/// SEQUENCE's status flags for session `s`.
fn flags(t: &Gss, s: &mut Session) -> u32 {
    let seq = s.sequence(0);
    seq_res(&t.compound(1, vec![seq])).sr_status_flags
}

#[test]
fn callbacks_go_under_the_context_the_client_lends_and_their_replies_are_checked() {
    let (env, _, cb) = gss_env_cb();
    let c = login(&env, 7);
    let handle = c.handle().clone();
    let t = Gss { env: &env, client: RefCell::new(c), service: Service::Integrity };
    let mut s = create_with(&t, "lender", vec![lend(&handle, rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY)]).unwrap();
    // The probe (CB_NULL) names the client's handle, is checksummed with
    // the context, and its reply must be too.
    let (_, probe) = cb.sent.lock().unwrap()[0].clone();
    let (xid, header, cred, verf, body) = split_call(&probe);
    let cred = cred.expect("the probe goes under RPCSEC_GSS");
    assert_eq!((cred.handle.as_ref(), cred.seq_num), (&b"back"[..], 1));
    let mut back = Callee::new(Bytes::from_static(b"back"), Service::Privacy, Box::new(FakeContext::pair(7).1), 128);
    let got = back.admit(&header, &cred, &verf, body).expect("the probe verifies and opens");
    assert!(got.args.is_empty());
    env.raw(sealed_reply(&mut back, xid, got.seq, &[]));
    assert_eq!(flags(&t, &mut s) & SEQ4_STATUS_CB_PATH_DOWN, 0, "the back channel is up");

    // A reply whose verifier is not the context's: the back channel is
    // down, as for any callback that failed.
    let mut s2 = create_with(&t, "lender2", vec![lend(&handle, rpc_gss_svc_t::RPC_GSS_SVC_INTEGRITY)]).unwrap();
    let (_, probe) = cb.sent.lock().unwrap()[1].clone();
    let (xid, header, cred, verf, body) = split_call(&probe);
    let cred = cred.unwrap();
    let mut liar = Callee::new(Bytes::from_static(b"back"), Service::Integrity, Box::new(FakeContext::pair(99).1), 128);
    assert!(liar.admit(&header, &cred, &verf, body).is_err(), "another key does not verify the call");
    env.raw(sealed_reply(&mut liar, xid, cred.seq_num, &[]));
    assert_ne!(flags(&t, &mut s2) & SEQ4_STATUS_CB_PATH_DOWN, 0);
}

#[test]
fn a_handle_that_names_no_context_of_the_caller_is_noent() {
    let (env, _, _) = gss_env_cb();
    let c = login(&env, 7);
    let t = Gss { env: &env, client: RefCell::new(c), service: Service::None };
    let bogus = Bytes::from_static(b"Handle from server");
    let with_none = vec![callback_sec_parms4::AUTH_NONE, lend(&bogus, rpc_gss_svc_t::RPC_GSS_SVC_PRIVACY)];
    assert_eq!(create_with(&t, "a", with_none).err(), Some(proto::nfs4::nfsstat4::NFS4ERR_NOENT));
    // mallory's context exists, but is not alice's to lend.
    let (r, res) = init(&env, "mallory@ELSEWHERE", 9);
    let (mut ctx, _) = FakeContext::pair(9);
    check_init_verifier(&mut ctx, &res, &accepted_verf(&r)).unwrap();
    let theirs = vec![lend(&res.handle, rpc_gss_svc_t::RPC_GSS_SVC_NONE)];
    assert_eq!(create_with(&t, "b", theirs).err(), Some(proto::nfs4::nfsstat4::NFS4ERR_NOENT));
    // BACKCHANNEL_CTL checks its handles as CREATE_SESSION does.
    let mine = t.client.borrow().handle().clone();
    let mut s = create_with(&t, "c", vec![callback_sec_parms4::AUTH_NONE]).unwrap();
    let r = s.run(&t, vec![backchannel_ctl(lend(&Bytes::from_static(b"nope"), rpc_gss_svc_t::RPC_GSS_SVC_NONE))]);
    assert_eq!(r.status, proto::nfs4::nfsstat4::NFS4ERR_NOENT);
    let r = s.run(&t, vec![backchannel_ctl(lend(&mine, rpc_gss_svc_t::RPC_GSS_SVC_NONE))]);
    assert_eq!(r.status, proto::nfs4::nfsstat4::NFS4_OK, "{r:?}");
}

#[test]
fn sequence_warns_before_the_lent_context_expires_and_backchannel_ctl_lends_a_newer_one() {
    let (env, clock, _) = gss_env_cb();
    let old = login(&env, 7);
    let old_handle = old.handle().clone();
    let t = Gss { env: &env, client: RefCell::new(old), service: Service::None };
    let mut s = create_with(&t, "renewer", vec![lend(&old_handle, rpc_gss_svc_t::RPC_GSS_SVC_NONE)]).unwrap();
    let gss_flags = SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING | SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED;
    assert_eq!(flags(&t, &mut s) & gss_flags, 0);
    // A newer context for the fore channel, half a lifetime later.
    clock.advance(LIFETIME / 2);
    *t.client.borrow_mut() = login(&env, 8);
    // Within a lease (90 s) of the lent context's end: EXPIRING.
    clock.advance(LIFETIME / 2 - Duration::from_secs(60));
    assert_eq!(flags(&t, &mut s) & gss_flags, SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING);
    clock.advance(Duration::from_secs(61));
    assert_eq!(flags(&t, &mut s) & gss_flags, SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED);
    let newer = t.client.borrow().handle().clone();
    let r = s.run(&t, vec![backchannel_ctl(lend(&newer, rpc_gss_svc_t::RPC_GSS_SVC_NONE))]);
    assert_eq!(r.status, proto::nfs4::nfsstat4::NFS4_OK, "{r:?}");
    assert_eq!(flags(&t, &mut s) & gss_flags, 0, "the newer context ends in half a lifetime");
}

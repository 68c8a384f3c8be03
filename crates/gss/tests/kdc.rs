//! Kerberos V5 against a real MIT KDC on loopback (scripts/kdc.sh): contexts
//! set up in-process between the initiator and the acceptor, the integrity
//! and privacy bodies of RPCSEC_GSS both ways, tampering, foreign contexts,
//! garbage tokens, and the principal map under nss_wrapper.
//!
//! The GSS-API reads its configuration from the process environment, so
//! everything that talks Kerberos is one test; the principal map runs in a
//! child process of this binary with nss_wrapper preloaded.

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use gss::libgssapi::context::{ClientCtx, CtxFlags, SecurityContext, ServerCtx};
use gss::libgssapi::credential::{Cred, CredUsage};
use gss::libgssapi::name::Name;
use gss::libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};
use gss::{KrbAcceptor, KrbContext, KrbInitiator, NssMap};
use rpcsec::{
    open_body, seal_body, AcceptStep, Acceptor, BodyError, Established, InitStep, Initiator, PrincipalMap, SecContext,
    Service,
};

/// Set in the child that runs [`nss_map_under_nss_wrapper`].
const INNER: &str = "NFSX_GSS_NSS_INNER";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kdc.sh")
}

/// A realm started by scripts/kdc.sh, stopped again when dropped (also
/// when a test fails).
struct Realm {
    dir: PathBuf,
    vars: Vec<(String, String)>,
    _parent: tempfile::TempDir,
}

impl Realm {
    fn var(&self, name: &str) -> &str {
        self.vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).expect(name)
    }
}

impl Drop for Realm {
    fn drop(&mut self) {
        let out = Command::new(script()).arg("stop").arg(&self.dir).output();
        if !matches!(&out, Ok(o) if o.status.success()) {
            eprintln!("scripts/kdc.sh stop {} failed: {out:?}", self.dir.display());
        }
    }
}

/// The realm, or `None` when this machine has no KDC and cannot install
/// one (then the test is reported skipped, except under CI where that is
/// a failure).
fn start_realm() -> Option<Realm> {
    let parent = tempfile::Builder::new().prefix("nfsx-gss-").tempdir().expect("tempdir");
    let dir = parent.path().join("realm");
    let out = Command::new(script()).arg("start").arg(&dir).output().expect("run scripts/kdc.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut realm = Realm { dir, vars: Vec::new(), _parent: parent };
    match out.status.code() {
        Some(0) => {}
        Some(3) => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
            assert!(!ci, "no KDC under CI: {stderr}");
            println!("skipped: no KDC (scripts/kdc.sh could not install one):\n{stderr}");
            return None;
        }
        _ => panic!("scripts/kdc.sh start failed ({}):\n{stderr}", out.status),
    }
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    realm.vars = stdout
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or_else(|| panic!("not NAME=VALUE: {l:?}"));
            (k.to_string(), v.to_string())
        })
        .collect();
    let vars = &realm.vars;
    let names: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["KRB5_CONFIG", "KRB5_KTNAME", "KRB5_CLIENT_KTNAME"], "{stdout}");
    assert!(vars.iter().all(|(_, v)| Path::new(v).is_absolute() && Path::new(v).exists()), "{stdout}");
    Some(realm)
}

/// Passes tokens between both sides until both are set up.
fn handshake(initiator: &dyn Initiator, acceptor: &dyn Acceptor, target: &str) -> (Box<dyn SecContext>, Established) {
    let mut init = initiator.start(target).expect("start");
    let mut accept = acceptor.start();
    let mut from_server: Option<Vec<u8>> = None;
    for _ in 0..8 {
        match init.step(from_server.as_deref()).expect("init step") {
            InitStep::Continue { next, token } => {
                init = next;
                match accept.step(&token).expect("accept step") {
                    AcceptStep::Continue { next, token } => {
                        accept = next;
                        from_server = Some(token);
                    }
                    AcceptStep::Complete(est) => {
                        // The last token (mutual authentication's AP-REP)
                        // completes the client.
                        let InitStep::Complete { ctx, token, lifetime } = init.step(Some(&est.token)).expect("last")
                        else {
                            panic!("the client wants more after the server completed");
                        };
                        assert!(token.is_empty());
                        assert!(lifetime.as_secs() > 60, "{lifetime:?}");
                        return (ctx, est);
                    }
                }
            }
            InitStep::Complete { .. } => panic!("the client completed before the server"),
        }
    }
    panic!("no context after 8 round trips");
}

fn join(segs: Vec<Bytes>) -> Bytes {
    Bytes::from(segs.concat())
}

/// Integrity and privacy bodies from `a` open on `b`; tampered ones do not.
fn bodies_between(a: &mut dyn SecContext, b: &mut dyn SecContext) {
    let args = b"some procedure arguments, XDR-encoded";
    for (seq, service) in [(1, Service::Integrity), (2, Service::Privacy), (3, Service::None)] {
        let body = join(seal_body(a, service, seq, args).expect("seal"));
        if service == Service::Privacy {
            assert!(!body.windows(args.len()).any(|w| w == args), "privacy leaves the arguments readable");
        }
        assert_eq!(open_body(b, service, seq, body.clone()).expect("open"), Bytes::from_static(args));
        if service == Service::None {
            continue;
        }
        // The last byte of the body's last opaque (past it: XDR padding).
        let len = |at: usize| u32::from_be_bytes(body[at..at + 4].try_into().unwrap()) as usize;
        let pad = |n: usize| n.div_ceil(4) * 4;
        let last = match service {
            Service::Integrity => 4 + pad(len(0)) + 4 + len(4 + pad(len(0))) - 1,
            _ => 4 + len(0) - 1,
        };
        for at in [8, body.len() / 2, last] {
            let mut bad = body.to_vec();
            bad[at] ^= 0x10;
            let r = open_body(b, service, seq, Bytes::from(bad));
            assert!(
                matches!(r, Err(BodyError::Checksum(_) | BodyError::Decrypt(_) | BodyError::Malformed)),
                "{service:?} byte {at}: {r:?}"
            );
        }
    }
}

#[test]
fn kerberos_v5_with_a_real_kdc() {
    if std::env::var_os(INNER).is_some() {
        return;
    }
    let Some(realm) = start_realm() else { return };
    // Before the first GSS-API call: the library reads them once.
    for (k, v) in &realm.vars {
        std::env::set_var(k, v);
    }
    std::env::set_var("KRB5CCNAME", format!("FILE:{}/ccache", realm.dir.display()));
    // The acceptor's replay cache too stays in the realm's directory.
    std::env::set_var("KRB5RCACHEDIR", &realm.dir);
    let keytab = PathBuf::from(realm.var("KRB5_KTNAME"));
    let client_keytab = PathBuf::from(realm.var("KRB5_CLIENT_KTNAME"));

    let acceptor = KrbAcceptor::new(Some(&keytab), Some("nfs@localhost")).expect("acceptor");
    let alice = KrbInitiator::from_keytab(&client_keytab, "alice").expect("alice");
    let bob = KrbInitiator::from_keytab(&client_keytab, "bob@NFSX.TEST").expect("bob");

    let (mut alice_c, mut alice_s) = handshake(&alice, &acceptor, "nfs@localhost");
    assert_eq!(alice_s.principal, "alice@NFSX.TEST");
    // The ticket's 10 hours, and the acceptor's allowance for clock skew.
    assert!(alice_s.lifetime.as_secs() > 60 && alice_s.lifetime.as_secs() <= 10 * 3600 + 600, "{:?}", alice_s.lifetime);
    bodies_between(alice_c.as_mut(), alice_s.ctx.as_mut());
    bodies_between(alice_s.ctx.as_mut(), alice_c.as_mut());

    // MICs and wrap tokens of one context mean nothing to another.
    let (mut bob_c, bob_s) = handshake(&bob, &acceptor, "nfs@localhost");
    assert_eq!(bob_s.principal, "bob@NFSX.TEST");
    let mic = bob_c.get_mic(b"hello").expect("mic");
    assert!(alice_s.ctx.verify_mic(b"hello", &mic).is_err());
    let mut bob_s_ctx = bob_s.ctx;
    bob_s_ctx.verify_mic(b"hello", &mic).expect("bob's own MIC");
    assert!(bob_s_ctx.verify_mic(b"hellp", &mic).is_err());
    let sealed = bob_c.wrap(b"secret").expect("wrap");
    assert!(alice_s.ctx.unwrap(&sealed).is_err());
    assert_eq!(bob_s_ctx.unwrap(&sealed).expect("unwrap").as_ref(), b"secret");

    // Out of order and again: RPCSEC_GSS keeps its own window, the
    // mechanism must not.
    let (m1, m2) = (alice_c.get_mic(b"one").unwrap(), alice_c.get_mic(b"two").unwrap());
    alice_s.ctx.verify_mic(b"two", &m2).expect("later first");
    alice_s.ctx.verify_mic(b"one", &m1).expect("earlier second");
    alice_s.ctx.verify_mic(b"one", &m1).expect("replayed");

    // Garbage is an error, not a crash, on both sides.
    for junk in [&b""[..], b"garbage", &[0x60, 0x82, 0xff, 0xff, 0x06], &[0x60; 300]] {
        assert!(acceptor.start().step(junk).is_err(), "{junk:?}");
    }
    let first = match alice.start("nfs@localhost").unwrap().step(None).unwrap() {
        InitStep::Continue { next, token } => {
            assert!(next.step(Some(b"not an AP-REP")).is_err());
            token
        }
        InitStep::Complete { .. } => panic!("one-step krb5"),
    };
    assert!(acceptor.start().step(&first[..first.len() / 2]).is_err());
    // A service the KDC does not know.
    assert!(alice.start("nfs@nowhere.invalid").unwrap().step(None).is_err());
    // A keytab without the service's key.
    assert!(KrbAcceptor::new(Some(&client_keytab), Some("nfs@localhost")).is_err());
    // A user without a key in the client keytab.
    assert!(KrbInitiator::from_keytab(&client_keytab, "mallory")
        .and_then(|i| i.start("nfs@localhost")?.step(None).map(|_| ()))
        .is_err());

    // The defaults (KRB5_KTNAME, any key in it; KRB5_CLIENT_KTNAME).
    let any = KrbAcceptor::new(None, None).expect("default acceptor");
    let (_, est) = handshake(&KrbInitiator::default_ccache(), &any, "nfs@localhost");
    assert_eq!(est.principal, "alice@NFSX.TEST");
    let cached = KrbInitiator::from_ccache(&format!("FILE:{}/ccache", realm.dir.display())).expect("from the ccache");
    let (_, est) = handshake(&cached, &acceptor, "nfs@localhost");
    assert_eq!(est.principal, "alice@NFSX.TEST");

    unencrypted_wrap_tokens_are_refused();

    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "nss_map_under_nss_wrapper", "--nocapture", "--test-threads=1"])
        .env(INNER, "1")
        .env("LD_PRELOAD", "libnss_wrapper.so")
        .env("NSS_WRAPPER_PASSWD", realm.dir.join("passwd"))
        .env("NSS_WRAPPER_GROUP", realm.dir.join("group"))
        .output()
        .expect("run the principal map's test");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
    assert!(text.contains("nss map checked"), "{text}");
}

/// A context set up with the binding directly, so that the client can make
/// a wrap token without confidentiality: the library itself accepts it,
/// [`KrbContext`] does not.
fn unencrypted_wrap_tokens_are_refused() {
    let cred = Cred::acquire(None, None, CredUsage::Initiate, None).expect("the default client credential");
    let target = Name::new(b"nfs@localhost", Some(GSS_NT_HOSTBASED_SERVICE)).unwrap();
    let flags = CtxFlags::GSS_C_MUTUAL_FLAG | CtxFlags::GSS_C_INTEG_FLAG | CtxFlags::GSS_C_CONF_FLAG;
    let mut client = ClientCtx::new(Some(cred), target, flags, Some(GSS_MECH_KRB5));
    let mut server = ServerCtx::new(None);
    let mut token = client.step(None, None).unwrap();
    while let Some(t) = token.take() {
        if let Some(reply) = server.step(&t, None).unwrap() {
            token = client.step(Some(&reply), None).unwrap();
        }
    }
    assert!(client.is_complete() && server.is_complete());
    let plain = client.wrap(false, b"in the clear").unwrap();
    let secret = client.wrap(true, b"encrypted").unwrap();
    let plain2 = client.wrap(false, b"in the clear").unwrap();
    assert_eq!(&*server.unwrap(&plain).unwrap(), b"in the clear", "the library takes it");
    let mut server = KrbContext::from(server);
    let err = server.unwrap(&plain2).expect_err("an unencrypted token for privacy");
    assert!(err.message.contains("not encrypted"), "{err}");
    assert_eq!(server.unwrap(&secret).unwrap().as_ref(), b"encrypted");
    // Claiming to be sealed does not make it so: the header is checksummed.
    let mut forged = plain2.to_vec();
    forged[2] |= 0x02;
    assert!(server.unwrap(&forged).is_err());
}

/// Runs only as the child of [`kerberos_v5_with_a_real_kdc`], with
/// nss_wrapper's passwd and group of the realm.
#[test]
fn nss_map_under_nss_wrapper() {
    if std::env::var_os(INNER).is_none() {
        return;
    }
    let map = NssMap::new();
    assert_eq!(map.default_realm(), Some("NFSX.TEST"));
    let alice = map.identity("alice@NFSX.TEST").expect("alice");
    assert_eq!((alice.uid, alice.gid), (20001, 20001));
    assert!(alice.gids.contains(&20100), "{alice:?}");
    let bob = map.identity("bob@NFSX.TEST").expect("bob");
    assert_eq!((bob.uid, bob.gid), (20002, 20002));
    assert!(bob.gids.contains(&20100), "{bob:?}");
    let machine = map.identity("nfs/localhost@NFSX.TEST").expect("machine");
    assert_eq!((machine.uid, machine.gid), (65534, 65534));
    assert_eq!(map.identity("mallory@OTHER.REALM"), None);
    assert_eq!(map.identity("carol@NFSX.TEST"), None, "no such account");
    assert_eq!(map.identity("alice@OTHER.REALM"), None);
    let map = map.with_realms(["OTHER.REALM"]).with_machine(1, 2);
    assert_eq!(map.identity("alice@OTHER.REALM").map(|i| i.uid), Some(20001));
    assert_eq!(map.identity("host/x@OTHER.REALM").map(|i| (i.uid, i.gid)), Some((1, 2)));
    println!("nss map checked");
}

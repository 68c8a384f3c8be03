//! The called side of data calls under a context the called peer set up
//! as the initiator: an NFSv4.1 client answering the callbacks a server
//! makes under the client's own context (RFC 8881 section 2.10.8.2). The
//! checks are a server's (RFC 2203 section 5.3.3): the header checksum,
//! the sequence window, the body; the reply carries the checksum of the
//! sequence number and the results sealed by the call's service.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use proto::rpc::{auth_flavor, auth_stat, opaque_auth};
use proto::rpcsec_gss::{rpc_gss_cred_t, rpc_gss_cred_vers_1_t, rpc_gss_proc_t};

use crate::{open_body, seal_body, GssError, SecContext, SeqWindow, Service, Verdict};

/// One mechanism context used from two places: the fore channel's calls
/// and the back channel's, which RFC 8881 section 2.10.8.2 has share one
/// GSS context. The GSS-API keeps per-message state inside a context, so
/// the calls are serialised on it.
#[derive(Clone)]
pub struct SharedContext(Arc<Mutex<Box<dyn SecContext>>>);

impl SharedContext {
    pub fn new(ctx: Box<dyn SecContext>) -> SharedContext {
        SharedContext(Arc::new(Mutex::new(ctx)))
    }

    fn with<T>(&self, f: impl FnOnce(&mut dyn SecContext) -> Result<T, GssError>) -> Result<T, GssError> {
        // A panic inside the mechanism leaves no half-made state the
        // next call could trip on: its calls are whole or not made.
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut **guard)
    }
}

impl SecContext for SharedContext {
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        self.with(|c| c.get_mic(msg))
    }
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.with(|c| c.verify_mic(msg, mic))
    }
    fn wrap(&mut self, msg: &[u8]) -> Result<Bytes, GssError> {
        self.with(|c| c.wrap(msg))
    }
    fn unwrap(&mut self, token: &[u8]) -> Result<Bytes, GssError> {
        self.with(|c| c.unwrap(token))
    }
}

/// Why a call is not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Replayed or below the window: no reply at all (RFC 2203 section
    /// 5.3.3.1).
    Drop,
    /// Refused with this auth_stat (MSG_DENIED, AUTH_ERROR).
    Auth(auth_stat),
    /// The body did not open: GARBAGE_ARGS, under the reply verifier.
    GarbageArgs { seq: u32 },
}

/// A call that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    pub seq: u32,
    pub service: Service,
    /// The procedure's arguments, opened.
    pub args: Bytes,
}

/// The called side of one context.
pub struct Callee {
    handle: Bytes,
    /// The service the caller was told to use; a call under another is
    /// refused rather than answered with less protection than agreed.
    service: Service,
    ctx: Box<dyn SecContext>,
    window: SeqWindow,
}

impl Callee {
    pub fn new(handle: Bytes, service: Service, ctx: Box<dyn SecContext>, window: u32) -> Callee {
        Callee { handle, service, ctx, window: SeqWindow::new(window) }
    }

    /// The handle calls name this context by.
    pub fn handle(&self) -> &Bytes {
        &self.handle
    }

    /// Judges a call whose credential is `cred_body` (the RPCSEC_GSS
    /// credential's opaque body, already known to name this context's
    /// handle), `header` the record from the xid through the credential,
    /// `verf` its verifier and `body` what follows the verifier.
    pub fn admit(
        &mut self,
        header: &[u8],
        cred: &rpc_gss_cred_vers_1_t,
        verf: &opaque_auth,
        body: Bytes,
    ) -> Result<Admitted, Refusal> {
        if cred.gss_proc != rpc_gss_proc_t::RPCSEC_GSS_DATA as u32 || cred.handle != self.handle {
            return Err(Refusal::Auth(auth_stat::AUTH_BADCRED));
        }
        if Service::from_wire(cred.service) != Some(self.service) {
            return Err(Refusal::Auth(auth_stat::AUTH_BADCRED));
        }
        if verf.flavor != auth_flavor::RPCSEC_GSS || self.ctx.verify_mic(header, &verf.body).is_err() {
            return Err(Refusal::Auth(auth_stat::RPCSEC_GSS_CREDPROBLEM));
        }
        match self.window.admit(cred.seq_num) {
            Verdict::Accept => {}
            Verdict::Drop => return Err(Refusal::Drop),
            Verdict::Exhausted => return Err(Refusal::Auth(auth_stat::RPCSEC_GSS_CTXPROBLEM)),
        }
        let args = open_body(&mut *self.ctx, self.service, cred.seq_num, body)
            .map_err(|_| Refusal::GarbageArgs { seq: cred.seq_num })?;
        Ok(Admitted { seq: cred.seq_num, service: self.service, args })
    }

    /// The verifier of the reply to call `seq`: the checksum of its
    /// sequence number.
    pub fn verifier(&mut self, seq: u32) -> Result<opaque_auth, GssError> {
        let mic = self.ctx.get_mic(&seq.to_be_bytes())?;
        Ok(opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from(mic) })
    }

    /// The results of call `seq` sealed by its service.
    pub fn seal_results(&mut self, seq: u32, results: &[u8]) -> Result<Vec<Bytes>, GssError> {
        seal_body(&mut *self.ctx, self.service, seq, results)
    }
}

/// The version 1 credential in an RPCSEC_GSS credential body; `None` when
/// it is not one.
pub fn credential(body: Bytes) -> Option<rpc_gss_cred_vers_1_t> {
    match xdr::from_bytes::<rpc_gss_cred_t>(body) {
        Ok(rpc_gss_cred_t::RPCSEC_GSS_VERS_1(c)) => Some(c),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeContext;
    use crate::GssClient;
    use xdr::Decoder;

    /// Splits a call record made by [`GssClient::call`] the way a
    /// receiver does: the header through the credential, the credential,
    /// the verifier and the body.
    fn split(record: Vec<Bytes>) -> (Bytes, rpc_gss_cred_vers_1_t, opaque_auth, Bytes) {
        let all = Bytes::from(record.concat());
        let mut d = Decoder::new(all.clone());
        for _ in 0..6 {
            d.u32().unwrap();
        }
        let cred: opaque_auth = xdr::Decode::decode(&mut d).unwrap();
        let header_len = all.len() - d.remaining();
        let verf: opaque_auth = xdr::Decode::decode(&mut d).unwrap();
        (all.slice(..header_len), credential(cred.body).unwrap(), verf, d.rest())
    }

    fn pair(service: Service) -> (GssClient, Callee) {
        let (a, b) = FakeContext::pair(7);
        let handle = Bytes::from_static(b"back");
        (GssClient::new(handle.clone(), Box::new(a), 4), Callee::new(handle, service, Box::new(b), 4))
    }

    #[test]
    fn a_sealed_call_is_admitted_once_and_its_reply_verifies() {
        for service in [Service::None, Service::Integrity, Service::Privacy] {
            let (mut caller, mut callee) = pair(service);
            let seq = caller.next_seq().unwrap();
            let record = caller.call(9, 0x40000000, 1, 1, service, seq, b"argsargs", false).unwrap();
            let (header, cred, verf, body) = split(record);
            let got = callee.admit(&header, &cred, &verf, body.clone()).unwrap();
            assert_eq!(got.args.as_ref(), b"argsargs");
            assert_eq!(callee.admit(&header, &cred, &verf, body), Err(Refusal::Drop));
            let verf = callee.verifier(seq).unwrap();
            let results = Bytes::from(callee.seal_results(seq, b"resu").unwrap().concat());
            assert_eq!(caller.reply(service, seq, &verf, results).unwrap().as_ref(), b"resu");
        }
    }

    #[test]
    fn tampering_another_service_or_key_is_refused() {
        let (mut caller, mut callee) = pair(Service::Integrity);
        let record = caller.call(9, 1, 1, 1, Service::Integrity, 1, b"argsargs", false).unwrap();
        let (header, cred, verf, body) = split(record);
        let mut bad = body.to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(callee.admit(&header, &cred, &verf, Bytes::from(bad)), Err(Refusal::GarbageArgs { seq: 1 }));
        let mut header2 = header.to_vec();
        header2[0] ^= 1;
        assert_eq!(
            callee.admit(&header2, &cred, &verf, body.clone()),
            Err(Refusal::Auth(auth_stat::RPCSEC_GSS_CREDPROBLEM))
        );
        let weaker = rpc_gss_cred_vers_1_t { service: Service::None.to_wire() as u32, ..cred.clone() };
        assert_eq!(callee.admit(&header, &weaker, &verf, body.clone()), Err(Refusal::Auth(auth_stat::AUTH_BADCRED)));
        let (_, other) = FakeContext::pair(8);
        let mut stranger = Callee::new(Bytes::from_static(b"back"), Service::Integrity, Box::new(other), 4);
        assert_eq!(stranger.admit(&header, &cred, &verf, body), Err(Refusal::Auth(auth_stat::RPCSEC_GSS_CREDPROBLEM)));
    }

    #[test]
    fn a_shared_context_serves_both_directions() {
        let (a, b) = FakeContext::pair(3);
        let shared = SharedContext::new(Box::new(a));
        let mut fore = shared.clone();
        let mut back = shared;
        let mut peer = b;
        let mic = fore.get_mic(b"x").unwrap();
        peer.verify_mic(b"x", &mic).unwrap();
        let sealed = peer.wrap(b"y").unwrap();
        assert_eq!(back.unwrap(&sealed).unwrap().as_ref(), b"y");
    }
}

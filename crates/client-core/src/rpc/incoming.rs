//! Calls the server makes to this client on the connection (the NFSv4.1
//! back channel), and the records answering them. A call under
//! RPCSEC_GSS is judged by the layer that holds its context, which needs
//! the credential, the verifier and the bytes the verifier checksums
//! (RFC 2203 section 5.3.1): all three come with the call.

use bytes::Bytes;
use proto::rpc::{
    accept_stat, accepted_reply, auth_flavor, auth_stat, call_body, opaque_auth, rejected_reply, reply_body,
    reply_data, rpc_msg, rpc_msg_body,
};
use xdr::{Decode, Encode, Encoder};

use super::framed;

/// A call the server made to this client on the same connection (the
/// NFSv4.1 back channel, RFC 8881 section 2.10.3.1).
#[derive(Debug, Clone)]
pub struct IncomingCall {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub cred: opaque_auth,
    pub verf: opaque_auth,
    /// The record from the xid through the credential: what an
    /// RPCSEC_GSS verifier checksums.
    pub header: Bytes,
    /// The arguments, after the call header (under RPCSEC_GSS with
    /// integrity or privacy, still sealed).
    pub args: Bytes,
}

/// The xid, the message type, the RPC version, the program, its version,
/// the procedure and the credential's flavor and length: the words
/// before the credential's body.
const WORDS_BEFORE_CRED_BODY: usize = 8;

impl IncomingCall {
    /// The call `record` holds, decoded up to `args` (what follows the
    /// verifier). None when the header's length does not fit the record,
    /// which a record that decoded cannot do.
    pub(super) fn new(record: &Bytes, xid: u32, call: call_body, args: Bytes) -> Option<IncomingCall> {
        let header_len = WORDS_BEFORE_CRED_BODY * 4 + call.cred.body.len().div_ceil(4) * 4;
        let header = record.get(..header_len).map(|_| record.slice(..header_len))?;
        Some(IncomingCall {
            xid,
            prog: call.prog,
            vers: call.vers,
            proc_: call.proc,
            cred: call.cred,
            verf: call.verf,
            header,
            args,
        })
    }

    /// A record that came to a service of this client's own (not on a
    /// connection it made): the call it holds, or None when it holds no
    /// call or does not decode.
    pub fn parse(record: Bytes) -> Option<IncomingCall> {
        let mut d = xdr::Decoder::new(record.clone());
        let msg = rpc_msg::decode(&mut d).ok()?;
        match msg.body {
            rpc_msg_body::CALL(call) if call.rpcvers == 2 => IncomingCall::new(&record, msg.xid, call, d.rest()),
            _ => None,
        }
    }
}

fn none() -> opaque_auth {
    opaque_auth { flavor: auth_flavor::AUTH_NONE, body: Bytes::new() }
}

fn record(xid: u32, body: reply_body, results: Vec<Bytes>) -> Vec<Bytes> {
    let msg = rpc_msg { xid, body: rpc_msg_body::REPLY(body) };
    let mut e = Encoder::new();
    msg.encode(&mut e);
    let mut segs = e.into_segments();
    segs.extend(results);
    framed(segs)
}

fn accepted(xid: u32, verf: opaque_auth, reply_data: reply_data, results: Vec<Bytes>) -> Vec<Bytes> {
    record(xid, reply_body::MSG_ACCEPTED(accepted_reply { verf, reply_data }), results)
}

/// The record answering an incoming call `xid` with `results` (AUTH_NONE
/// verifier, SUCCESS); ready to write as it is.
pub fn success_reply(xid: u32, results: Vec<Bytes>) -> Vec<Bytes> {
    accepted(xid, none(), reply_data::SUCCESS, results)
}

/// [`success_reply`] under the verifier `verf`, with results already
/// sealed as the call's security asks (RPCSEC_GSS integrity or privacy).
pub fn success_reply_with(xid: u32, verf: opaque_auth, sealed_results: Vec<Bytes>) -> Vec<Bytes> {
    accepted(xid, verf, reply_data::SUCCESS, sealed_results)
}

/// GARBAGE_ARGS under the verifier `verf`: the call's body did not open
/// or decode.
pub fn garbage_args_reply(xid: u32, verf: opaque_auth) -> Vec<Bytes> {
    accepted(xid, verf, reply_data::default(accept_stat::GARBAGE_ARGS), Vec::new())
}

/// An accepted call the service does not run: PROG_UNAVAIL,
/// PROC_UNAVAIL or SYSTEM_ERR (AUTH_NONE verifier).
pub fn unavailable_reply(xid: u32, why: accept_stat) -> Vec<Bytes> {
    accepted(xid, none(), reply_data::default(why), Vec::new())
}

/// MSG_DENIED with AUTH_ERROR `why`: the call's credential or verifier
/// was refused, and it was not run.
pub fn auth_error_reply(xid: u32, why: auth_stat) -> Vec<Bytes> {
    record(xid, reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(why)), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::RpcCore;
    use xdr::{Decode, Decoder};

    fn call(cred: opaque_auth, verf: opaque_auth) -> Bytes {
        let msg = rpc_msg {
            xid: 77,
            body: rpc_msg_body::CALL(call_body { rpcvers: 2, prog: 0x4000_0000, vers: 1, proc: 1, cred, verf }),
        };
        let mut v = xdr::to_bytes(&msg).to_vec();
        v.extend_from_slice(b"args");
        Bytes::from(v)
    }

    fn incoming(record: Bytes) -> IncomingCall {
        let mut c = RpcCore::new(Default::default(), none(), 1);
        c.accept_incoming();
        assert!(c.on_record(record, 0).is_none());
        c.poll_incoming().expect("kept")
    }

    /// The header ends where the credential does, whatever its length's
    /// padding, and the verifier and arguments follow it.
    #[test]
    fn a_call_carries_its_credential_verifier_and_header() {
        for len in 0..9 {
            let cred = opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from(vec![7u8; len]) };
            let verf = opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from_static(b"mic!x") };
            let record = call(cred.clone(), verf.clone());
            let c = incoming(record.clone());
            assert_eq!((c.xid, c.prog, c.vers, c.proc_), (77, 0x4000_0000, 1, 1));
            assert_eq!((&c.cred, &c.verf, &c.args[..]), (&cred, &verf, &b"args"[..]));
            assert_eq!(c.header.len(), 32 + len.div_ceil(4) * 4);
            assert_eq!(&record[..c.header.len()], &c.header[..]);
            let mut d = Decoder::new(record.slice(c.header.len()..));
            assert_eq!(opaque_auth::decode(&mut d).unwrap(), verf, "the verifier comes right after the header");
        }
    }

    fn reply_of(rec: Vec<Bytes>) -> (u32, reply_body, Bytes) {
        let flat = Bytes::from(rec.concat());
        assert_eq!(u32::from_be_bytes(flat[..4].try_into().unwrap()) as usize, 0x8000_0000 | (flat.len() - 4));
        let mut d = Decoder::new(flat.slice(4..));
        let msg = rpc_msg::decode(&mut d).unwrap();
        match msg.body {
            rpc_msg_body::REPLY(b) => (msg.xid, b, d.rest()),
            rpc_msg_body::CALL(_) => panic!("not a reply"),
        }
    }

    #[test]
    fn replies_carry_the_verifier_results_and_refusals_given() {
        let verf = opaque_auth { flavor: auth_flavor::RPCSEC_GSS, body: Bytes::from_static(b"checksum") };
        let (xid, body, rest) = reply_of(success_reply_with(5, verf.clone(), vec![Bytes::from_static(b"seal")]));
        assert_eq!((xid, &rest[..]), (5, &b"seal"[..]));
        match body {
            reply_body::MSG_ACCEPTED(a) => assert_eq!((a.verf, a.reply_data), (verf.clone(), reply_data::SUCCESS)),
            other => panic!("{other:?}"),
        }

        let (xid, body, rest) = reply_of(garbage_args_reply(6, verf.clone()));
        assert_eq!((xid, rest.len()), (6, 0));
        match body {
            reply_body::MSG_ACCEPTED(a) => {
                assert_eq!((a.verf, a.reply_data), (verf, reply_data::default(accept_stat::GARBAGE_ARGS)))
            }
            other => panic!("{other:?}"),
        }

        let (xid, body, rest) = reply_of(auth_error_reply(7, auth_stat::RPCSEC_GSS_CREDPROBLEM));
        assert_eq!((xid, rest.len()), (7, 0));
        assert_eq!(body, reply_body::MSG_DENIED(rejected_reply::AUTH_ERROR(auth_stat::RPCSEC_GSS_CREDPROBLEM)));

        let (xid, body, rest) = reply_of(success_reply(8, vec![Bytes::from_static(b"res!")]));
        assert_eq!((xid, &rest[..]), (8, &b"res!"[..]));
        match body {
            reply_body::MSG_ACCEPTED(a) => assert_eq!((a.verf, a.reply_data), (none(), reply_data::SUCCESS)),
            other => panic!("{other:?}"),
        }
    }
}

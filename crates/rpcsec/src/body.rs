//! The call and reply bodies of the integrity and privacy services
//! (RFC 2203 sections 5.3.2.2, 5.3.2.3 and 5.3.3.2): the sequence number
//! and the procedure's XDR, checksummed (`rpc_gss_integ_data`) or
//! encrypted (`rpc_gss_priv_data`). Calls and replies use the same form.

use bytes::Bytes;
use proto::rpcsec_gss::{rpc_gss_integ_data, rpc_gss_priv_data};
use xdr::Encoder;

use crate::{GssError, SecContext, Service};

/// Why a body could not be opened. Each is GARBAGE_ARGS on a server
/// (RFC 2203 section 5.3.3.4) and a bad reply on a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the body does not decode")]
    Malformed,
    #[error("the checksum does not verify: {0}")]
    Checksum(GssError),
    #[error("the body does not decrypt: {0}")]
    Decrypt(GssError),
    #[error("the body's sequence number {found} is not the credential's {expected}")]
    Sequence { expected: u32, found: u32 },
}

/// `procedure_xdr` protected by `service` for a message with sequence
/// number `seq`: the bytes that follow the verifier. With
/// [`Service::None`] it is `procedure_xdr` itself.
pub fn seal_body(
    ctx: &mut dyn SecContext,
    service: Service,
    seq: u32,
    procedure_xdr: &[u8],
) -> Result<Vec<Bytes>, GssError> {
    seal_segments(ctx, service, seq, &[Bytes::copy_from_slice(procedure_xdr)])
}

/// [`seal_body`] of the procedure's XDR given as segments (an encoder's
/// output), gathered once behind the sequence number: the mechanism
/// wants one buffer, and a READ's results are a mebibyte.
pub fn seal_segments(
    ctx: &mut dyn SecContext,
    service: Service,
    seq: u32,
    procedure_xdr: &[Bytes],
) -> Result<Vec<Bytes>, GssError> {
    if service == Service::None {
        return Ok(procedure_xdr.to_vec());
    }
    let len: usize = procedure_xdr.iter().map(Bytes::len).sum();
    let mut data = Vec::with_capacity(4 + len);
    data.extend_from_slice(&seq.to_be_bytes());
    for s in procedure_xdr {
        data.extend_from_slice(s);
    }
    let mut e = Encoder::with_capacity(64);
    match service {
        Service::Integrity => {
            let checksum = Bytes::from(ctx.get_mic(&data)?);
            xdr::Encode::encode(&rpc_gss_integ_data { databody_integ: Bytes::from(data), checksum }, &mut e);
        }
        _ => {
            let sealed = ctx.wrap(&data)?;
            xdr::Encode::encode(&rpc_gss_priv_data { databody_priv: sealed }, &mut e);
        }
    }
    Ok(e.into_segments())
}

/// The procedure's XDR from a body sealed by [`seal_body`] (or by a peer).
pub fn open_body(ctx: &mut dyn SecContext, service: Service, seq: u32, body: Bytes) -> Result<Bytes, BodyError> {
    let data = match service {
        Service::None => return Ok(body),
        Service::Integrity => {
            let d: rpc_gss_integ_data = xdr::from_bytes(body).map_err(|_| BodyError::Malformed)?;
            ctx.verify_mic(&d.databody_integ, &d.checksum).map_err(BodyError::Checksum)?;
            d.databody_integ
        }
        Service::Privacy => {
            let d: rpc_gss_priv_data = xdr::from_bytes(body).map_err(|_| BodyError::Malformed)?;
            ctx.unwrap(&d.databody_priv).map_err(BodyError::Decrypt)?
        }
    };
    let Some(head) = data.get(..4) else { return Err(BodyError::Malformed) };
    let found = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if found != seq {
        return Err(BodyError::Sequence { expected: seq, found });
    }
    Ok(data.slice(4..))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeContext;

    fn join(segs: Vec<Bytes>) -> Bytes {
        Bytes::from(segs.concat())
    }

    #[test]
    fn sealed_bodies_open_with_the_same_sequence_number() {
        for service in [Service::None, Service::Integrity, Service::Privacy] {
            let (mut a, mut b) = FakeContext::pair(7);
            let body = join(seal_body(&mut a, service, 42, b"procedure args!!").unwrap());
            assert_eq!(open_body(&mut b, service, 42, body.clone()).unwrap(), Bytes::from_static(b"procedure args!!"));
            if service != Service::None {
                assert!(matches!(
                    open_body(&mut b, service, 43, body.clone()),
                    Err(BodyError::Sequence { expected: 43, found: 42 })
                ));
            }
        }
    }

    #[test]
    fn tampered_or_foreign_bodies_are_refused() {
        let (mut a, mut b) = FakeContext::pair(7);
        let mut body = join(seal_body(&mut a, Service::Integrity, 1, b"abcdefgh").unwrap()).to_vec();
        body[9] ^= 1;
        assert!(matches!(open_body(&mut b, Service::Integrity, 1, body.into()), Err(BodyError::Checksum(_))));
        let (mut other, _) = FakeContext::pair(8);
        let body = join(seal_body(&mut other, Service::Privacy, 1, b"abcdefgh").unwrap());
        assert!(matches!(open_body(&mut b, Service::Privacy, 1, body), Err(BodyError::Decrypt(_))));
        assert_eq!(open_body(&mut b, Service::Privacy, 1, Bytes::from_static(&[0, 0])), Err(BodyError::Malformed));
    }
}

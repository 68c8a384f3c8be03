//! An established Kerberos context: the per-message calls of RPCSEC_GSS.

use bytes::Bytes;
use libgssapi::context::{ClientCtx, SecurityContext, ServerCtx};
use rpcsec::{major, GssError, SecContext};

use crate::gss_error;

/// An established context on either side, as [`KrbAcceptor`] and
/// [`KrbInitiator`] hand them out (or from a context set up with
/// [`libgssapi`] directly).
///
/// [`KrbAcceptor`]: crate::KrbAcceptor
/// [`KrbInitiator`]: crate::KrbInitiator
pub struct KrbContext(Side);

enum Side {
    Accepted(ServerCtx),
    Initiated(ClientCtx),
}

impl From<ServerCtx> for KrbContext {
    fn from(ctx: ServerCtx) -> KrbContext {
        KrbContext(Side::Accepted(ctx))
    }
}

impl From<ClientCtx> for KrbContext {
    fn from(ctx: ClientCtx) -> KrbContext {
        KrbContext(Side::Initiated(ctx))
    }
}

impl KrbContext {
    fn gss(&mut self) -> &mut dyn SecurityContext {
        match &mut self.0 {
            Side::Accepted(c) => c,
            Side::Initiated(c) => c,
        }
    }
}

impl std::fmt::Debug for KrbContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Side::Accepted(_) => "KrbContext(accepted)",
            Side::Initiated(_) => "KrbContext(initiated)",
        })
    }
}

impl SecContext for KrbContext {
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.gss().get_mic(msg).map_err(gss_error)?.to_vec())
    }

    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.gss().verify_mic(msg, mic).map_err(gss_error)
    }

    fn wrap(&mut self, msg: &[u8]) -> Result<Bytes, GssError> {
        Ok(Bytes::from_owner(Token(self.gss().wrap(true, msg).map_err(gss_error)?)))
    }

    /// The binding's unwrap does not return GSS_Unwrap's conf_state, so the
    /// token's own header says whether it was encrypted (see [`sealed`]).
    /// That header is covered by the token's checksum, so once the library
    /// has accepted the token the answer read from it is authentic.
    fn unwrap(&mut self, token: &[u8]) -> Result<Bytes, GssError> {
        match sealed(token) {
            Some(true) => Ok(Bytes::from_owner(Token(self.gss().unwrap(token).map_err(gss_error)?))),
            Some(false) => Err(GssError::new(
                major::GSS_S_DEFECTIVE_TOKEN,
                0,
                "the wrap token is not encrypted, and privacy requires it",
            )),
            None => Err(GssError::new(major::GSS_S_DEFECTIVE_TOKEN, 0, "not a Kerberos V5 wrap token")),
        }
    }
}

/// A buffer the library allocated, handed on without a copy (a krb5p
/// READ reply is a mebibyte); freed by the library when the last `Bytes`
/// of it goes.
struct Token(libgssapi::util::Buf);

impl AsRef<[u8]> for Token {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The Kerberos V5 mechanism's OID (1.2.840.113554.1.2.2), as the
/// RFC 1964 token framing carries it after its tag and length.
const KRB5_OID_TLV: [u8; 11] = [0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02];

/// Whether a Kerberos V5 GSS_Wrap token says its payload is encrypted;
/// `None` when it is no wrap token of the mechanism.
///
/// - RFC 4121 (section 4.2.6.2; AES and newer enctypes, what MIT emits
///   for them): TOK_ID `05 04`, then a flags byte whose bit `0x02`,
///   "Sealed", is set when the payload is encrypted.
/// - RFC 1964 (section 1.2.2; DES3 and RC4 enctypes): the token framing
///   (`60` length, the mechanism's OID), TOK_ID `02 01`, SGN_ALG, then
///   SEAL_ALG, `ff ff` for none.
pub(crate) fn sealed(token: &[u8]) -> Option<bool> {
    if let [0x05, 0x04, flags, ..] = token {
        // The rest of the 16-byte header is checked by the library.
        return (token.len() >= 16).then_some(flags & 0x02 != 0);
    }
    let rest = token.strip_prefix(&[0x60])?;
    let (&len0, rest) = rest.split_first()?;
    // A DER length: short form, or 0x81..0x84 followed by that many bytes.
    let rest = match len0 {
        0..=0x7f => rest,
        0x81..=0x84 => rest.get(usize::from(len0 & 0x7f)..)?,
        _ => return None,
    };
    let inner = rest.strip_prefix(&KRB5_OID_TLV[..])?;
    match inner {
        [0x02, 0x01, _sgn0, _sgn1, seal0, seal1, ..] => Some(!(*seal0 == 0xff && *seal1 == 0xff)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4121_tokens_say_whether_they_are_sealed() {
        let mut t = vec![0x05, 0x04, 0x02, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 9, 9];
        assert_eq!(sealed(&t), Some(true));
        t[2] = 0x01 | 0x04;
        assert_eq!(sealed(&t), Some(false));
        t[2] = 0x07;
        assert_eq!(sealed(&t), Some(true));
        assert_eq!(sealed(&t[..15]), None);
        // A MIC token is no wrap token.
        t[1] = 0x04;
        t[0] = 0x04;
        assert_eq!(sealed(&t), None);
    }

    #[test]
    fn rfc1964_tokens_say_whether_they_are_sealed() {
        let framed = |seal: [u8; 2], long: bool| {
            let mut body = KRB5_OID_TLV.to_vec();
            body.extend_from_slice(&[0x02, 0x01, 0x04, 0x00, seal[0], seal[1], 0xff, 0xff]);
            body.extend_from_slice(&[7; 24]);
            let mut t = vec![0x60];
            if long {
                t.extend_from_slice(&[0x81, body.len() as u8]);
            } else {
                t.push(body.len() as u8);
            }
            t.extend_from_slice(&body);
            t
        };
        assert_eq!(sealed(&framed([0x02, 0x00], false)), Some(true));
        assert_eq!(sealed(&framed([0x10, 0x00], true)), Some(true));
        assert_eq!(sealed(&framed([0xff, 0xff], false)), Some(false));
        assert_eq!(sealed(&framed([0xff, 0xff], true)), Some(false));
        let mut other_mech = framed([0x02, 0x00], false);
        other_mech[10] ^= 1;
        assert_eq!(sealed(&other_mech), None);
    }

    #[test]
    fn garbage_is_no_wrap_token() {
        for t in [&[][..], &[0x05], &[0x60], &[0x60, 0x85, 0, 0, 0, 0, 0], &[0x60, 0x81], &[1, 2, 3, 4]] {
            assert_eq!(sealed(t), None, "{t:?}");
        }
    }
}

//! Kerberos V5 for RPCSEC_GSS through the system's GSS-API (MIT krb5 on
//! Debian), behind the traits of [`rpcsec`]:
//!
//! - [`KrbAcceptor`]: the server's service credential (a keytab) and the
//!   contexts it accepts;
//! - [`KrbInitiator`]: a user's credential (a credential cache, or a client
//!   keytab) and the contexts it starts with a service such as
//!   `nfs@server.example.com`;
//! - [`KrbContext`]: an established context on either side, the per-message
//!   calls RPCSEC_GSS makes;
//! - [`NssMap`]: principals to local users through the name service, as
//!   rpc.svcgssd and gssproxy map them.
//!
//! Kerberos itself is the system library's; this crate only carries
//! tokens, names and credentials across the FFI (mostly through the
//! `libgssapi` binding, its raw `libgssapi-sys` where that binding lacks a
//! call).

mod accept;
mod context;
mod init;
mod nss;
mod raw;

pub use accept::KrbAcceptor;
pub use context::KrbContext;
pub use init::KrbInitiator;
/// The binding the contexts come from, for callers that set one up
/// themselves and hand it to [`KrbContext`].
pub use libgssapi;
pub use nss::NssMap;

use rpcsec::GssError;

/// A failed call of the binding, with the library's words for it.
fn gss_error(e: libgssapi::error::Error) -> GssError {
    GssError::new(e.major.bits(), e.minor, e.to_string())
}

/// A name as the mechanism displays it (`alice@EXAMPLE.COM`).
fn display(name: &libgssapi::name::Name) -> Result<String, GssError> {
    let buf = name.display_name().map_err(gss_error)?;
    String::from_utf8(buf.to_vec())
        .map_err(|_| GssError::new(rpcsec::major::GSS_S_FAILURE, 0, "the name the mechanism displays is not UTF-8"))
}

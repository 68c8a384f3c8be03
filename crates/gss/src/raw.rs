//! The calls `libgssapi` does not make: credentials from a credential store
//! (`gss_acquire_cred_from`, MIT's extension that names a keytab or a ccache
//! per credential instead of through the process environment), and the
//! imported names those need.

use std::ffi::{c_void, CString};
use std::ptr;

use libgssapi::credential::{Cred, CredUsage};
use libgssapi::error::{Error, MajorFlags};
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL};
use libgssapi_sys as sys;
use rpcsec::{major, GssError};

use crate::gss_error;

/// How a name handed to [`acquire_cred_from`] is written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NameKind {
    /// `service@host`.
    HostService,
    /// A Kerberos principal, `alice`, `alice@REALM`, `nfs/host@REALM`.
    Principal,
}

/// The calling and routine error bits of a major status (GSS_ERROR()).
const ERROR_BITS: u32 = 0xffff_0000;

fn check(major: u32, minor: u32) -> Result<(), GssError> {
    if major & ERROR_BITS == 0 {
        Ok(())
    } else {
        Err(gss_error(Error { major: MajorFlags::from_bits_retain(major), minor }))
    }
}

/// An OID descriptor over one of the binding's static OIDs. The library
/// takes `gss_OID` as a mutable pointer but only reads through it.
fn oid_desc(bytes: &'static [u8]) -> sys::gss_OID_desc {
    sys::gss_OID_desc { length: bytes.len() as u32, elements: bytes.as_ptr() as *mut c_void }
}

/// A `gss_name_t` this process imported and releases.
struct RawName(sys::gss_name_t);

impl RawName {
    fn import(name: &str, kind: NameKind) -> Result<RawName, GssError> {
        let mut oid = oid_desc(match kind {
            NameKind::HostService => &GSS_NT_HOSTBASED_SERVICE,
            NameKind::Principal => &GSS_NT_KRB5_PRINCIPAL,
        });
        let mut buf = sys::gss_buffer_desc { length: name.len(), value: name.as_ptr() as *mut c_void };
        let mut minor = 0;
        let mut out: sys::gss_name_t = ptr::null_mut();
        // SAFETY: `buf` and `oid` describe memory that outlives the call,
        // which copies what they point at and writes through neither; `out`
        // is a valid place for the new name, owned by the RawName below.
        let status = unsafe { sys::gss_import_name(&mut minor, &mut buf, &mut oid, &mut out) };
        check(status, minor)?;
        Ok(RawName(out))
    }
}

impl Drop for RawName {
    fn drop(&mut self) {
        let mut minor = 0;
        // SAFETY: the name came from gss_import_name, is owned by this value
        // alone and is released once; the call nulls the handle.
        unsafe { sys::gss_release_name(&mut minor, &mut self.0) };
    }
}

/// A Kerberos credential for `name` (or the store's default one) from the
/// credential store `store`, key/value pairs such as `keytab`,
/// `client_keytab` and `ccache` (gss_store_cred_into(3) lists them). An
/// empty store is the process's defaults (KRB5_KTNAME, KRB5CCNAME, ...).
pub(crate) fn acquire_cred_from(
    name: Option<(&str, NameKind)>,
    usage: CredUsage,
    store: &[(&str, &str)],
) -> Result<Cred, GssError> {
    let nul = || GssError::new(major::GSS_S_FAILURE, 0, "a credential store element holds a NUL byte");
    let name = name.map(|(n, kind)| RawName::import(n, kind)).transpose()?;
    let strings = store
        .iter()
        .map(|(k, v)| Ok((CString::new(*k)?, CString::new(*v)?)))
        .collect::<Result<Vec<_>, std::ffi::NulError>>()
        .map_err(|_| nul())?;
    let mut elements: Vec<sys::gss_key_value_element_desc> =
        strings.iter().map(|(k, v)| sys::gss_key_value_element_desc { key: k.as_ptr(), value: v.as_ptr() }).collect();
    let set = sys::gss_key_value_set_desc { count: elements.len() as u32, elements: elements.as_mut_ptr() };
    let mut mech = oid_desc(&GSS_MECH_KRB5);
    let mut mechs = sys::gss_OID_set_desc { count: 1, elements: &mut mech };
    let usage = match usage {
        CredUsage::Accept => sys::GSS_C_ACCEPT,
        CredUsage::Initiate => sys::GSS_C_INITIATE,
        CredUsage::Both => sys::GSS_C_BOTH,
    } as sys::gss_cred_usage_t;
    let mut cred: sys::gss_cred_id_t = ptr::null_mut();
    let mut minor = 0;
    // SAFETY: every pointer handed over refers to memory alive until the
    // call returns (the name, the mechanism set, the store and the C
    // strings its elements point into); the library copies what it keeps
    // and writes only `minor` and `cred`. The optional outputs are null,
    // which the API allows.
    let status = unsafe {
        sys::gss_acquire_cred_from(
            &mut minor,
            name.as_ref().map_or(ptr::null_mut(), |n| n.0),
            sys::_GSS_C_INDEFINITE,
            &mut mechs,
            usage,
            if store.is_empty() { ptr::null() } else { &set },
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    check(status, minor)?;
    // SAFETY: `cred` was made by the successful call above and nothing else
    // holds it; the Cred releases it.
    Ok(unsafe { Cred::from_c(cred) })
}

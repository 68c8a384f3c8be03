//! The part of librados's C interface (`rados/librados.h`, Ceph 16.2) the
//! cluster records use, loaded with `dlopen` like libcephfs: only a server
//! configured with `[cluster]` needs `librados.so.2`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// `rados_t` and `rados_ioctx_t`: opaque pointers.
pub type rados_t = *mut c_void;
pub type rados_ioctx_t = *mut c_void;

api! {
    rados_create: fn(*mut rados_t, *const c_char) -> c_int;
    rados_conf_read_file: fn(rados_t, *const c_char) -> c_int;
    rados_conf_set: fn(rados_t, *const c_char, *const c_char) -> c_int;
    rados_connect: fn(rados_t) -> c_int;
    rados_shutdown: fn(rados_t);
    rados_ioctx_create: fn(rados_t, *const c_char, *mut rados_ioctx_t) -> c_int;
    rados_ioctx_destroy: fn(rados_ioctx_t);
    rados_ioctx_set_namespace: fn(rados_ioctx_t, *const c_char);
    rados_read: fn(rados_ioctx_t, *const c_char, *mut c_char, usize, u64) -> c_int;
    rados_write_full: fn(rados_ioctx_t, *const c_char, *const c_char, usize) -> c_int;
    rados_stat: fn(rados_ioctx_t, *const c_char, *mut u64, *mut libc::time_t) -> c_int;
    rados_remove: fn(rados_ioctx_t, *const c_char) -> c_int;
    rados_lock_exclusive: fn(rados_ioctx_t, *const c_char, *const c_char, *const c_char, *const c_char, *mut libc::timeval, u8) -> c_int;
    rados_unlock: fn(rados_ioctx_t, *const c_char, *const c_char, *const c_char) -> c_int;
    rados_list_lockers: fn(rados_ioctx_t, *const c_char, *const c_char, *mut c_int, *mut c_char, *mut usize, *mut c_char, *mut usize, *mut c_char, *mut usize, *mut c_char, *mut usize) -> isize;
    rados_break_lock: fn(rados_ioctx_t, *const c_char, *const c_char, *const c_char, *const c_char) -> c_int;
}

/// The library's file name (the run-time package: Debian `librados2`).
pub const LIBRARY: &str = "librados.so.2";

/// librados, loaded on first use; the error says what to install.
pub fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        // SAFETY: loading librados runs its initialisers, which have no
        // preconditions; the symbols are declared with Ceph 16.2's signatures.
        unsafe {
            let lib = libloading::Library::new(LIBRARY)
                .map_err(|e| format!("cannot load {LIBRARY} (install Debian's librados2): {e}"))?;
            Api::resolve(lib).map_err(|e| format!("{LIBRARY} lacks a function nfsx needs (Ceph 16.2 or later): {e}"))
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

//! The part of libcephfs's C interface (`cephfs/libcephfs.h`, Ceph 16.2)
//! the backend uses, loaded with `dlopen` when a Ceph export is opened.
//!
//! Loading at run time rather than linking keeps one `nfsx` binary for
//! every machine: a host without Ceph's client library builds and runs
//! nfsx, and only `--backend ceph` needs `libcephfs.so.2`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// Opaque handles of the C interface.
#[repr(C)]
pub struct ceph_mount_info {
    _private: [u8; 0],
}
#[repr(C)]
pub struct Inode {
    _private: [u8; 0],
}
#[repr(C)]
pub struct Fh {
    _private: [u8; 0],
}
#[repr(C)]
pub struct UserPerm {
    _private: [u8; 0],
}
#[repr(C)]
pub struct ceph_dir_result {
    _private: [u8; 0],
}

/// `inodeno_t`, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct inodeno_t {
    pub val: u64,
}

/// `struct ceph_statx` (`cephfs/ceph_ll_client.h`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ceph_statx {
    pub stx_mask: u32,
    pub stx_blksize: u32,
    pub stx_nlink: u32,
    pub stx_uid: u32,
    pub stx_gid: u32,
    pub stx_mode: u16,
    pub stx_ino: u64,
    pub stx_size: u64,
    pub stx_blocks: u64,
    pub stx_dev: libc::dev_t,
    pub stx_rdev: libc::dev_t,
    pub stx_atime: libc::timespec,
    pub stx_ctime: libc::timespec,
    pub stx_mtime: libc::timespec,
    pub stx_btime: libc::timespec,
    pub stx_version: u64,
}

impl Default for ceph_statx {
    fn default() -> Self {
        // SAFETY: a plain C struct of integers, for which all-zero is valid.
        unsafe { std::mem::zeroed() }
    }
}

pub const CEPH_STATX_MODE: c_uint = 0x1;
pub const CEPH_STATX_UID: c_uint = 0x4;
pub const CEPH_STATX_GID: c_uint = 0x8;
pub const CEPH_STATX_ATIME: c_uint = 0x20;
pub const CEPH_STATX_MTIME: c_uint = 0x40;
pub const CEPH_STATX_CTIME: c_uint = 0x80;
pub const CEPH_STATX_SIZE: c_uint = 0x200;
/// Every attribute nfsx reports, with the birth time (the handle's
/// generation) and the change attribute.
pub const CEPH_STATX_ALL_STATS: c_uint = 0x1fff;

pub const CEPH_SETATTR_MODE: c_int = 1 << 0;
pub const CEPH_SETATTR_UID: c_int = 1 << 1;
pub const CEPH_SETATTR_GID: c_int = 1 << 2;
pub const CEPH_SETATTR_MTIME: c_int = 1 << 3;
pub const CEPH_SETATTR_ATIME: c_int = 1 << 4;
pub const CEPH_SETATTR_SIZE: c_int = 1 << 5;

/// `ceph_start_reclaim`: end the earlier client's session, keep nothing.
pub const CEPH_RECLAIM_RESET: c_uint = 1;

/// `ceph_ll_delegation` commands.
pub const CEPH_DELEGATION_NONE: c_uint = 0;
pub const CEPH_DELEGATION_RD: c_uint = 1;
pub const CEPH_DELEGATION_WR: c_uint = 2;

/// Called by libcephfs when the metadata server wants a delegation back
/// (`ceph_deleg_cb_t`), with the client's lock held: it may not call back
/// into libcephfs.
pub type ceph_deleg_cb_t = unsafe extern "C" fn(*mut Fh, *mut c_void);

/// `AT_SYMLINK_NOFOLLOW` as libcephfs takes it in lookup flags.
pub const AT_SYMLINK_NOFOLLOW: c_uint = 0x100;

api! {
    ceph_version: fn(*mut c_int, *mut c_int, *mut c_int) -> *const c_char;
    ceph_create: fn(*mut *mut ceph_mount_info, *const c_char) -> c_int;
    ceph_conf_read_file: fn(*mut ceph_mount_info, *const c_char) -> c_int;
    ceph_conf_set: fn(*mut ceph_mount_info, *const c_char, *const c_char) -> c_int;
    ceph_conf_get: fn(*mut ceph_mount_info, *const c_char, *mut c_char, usize) -> c_int;
    ceph_select_filesystem: fn(*mut ceph_mount_info, *const c_char) -> c_int;
    ceph_init: fn(*mut ceph_mount_info) -> c_int;
    ceph_start_reclaim: fn(*mut ceph_mount_info, *const c_char, c_uint) -> c_int;
    ceph_finish_reclaim: fn(*mut ceph_mount_info);
    ceph_set_uuid: fn(*mut ceph_mount_info, *const c_char);
    ceph_set_session_timeout: fn(*mut ceph_mount_info, c_uint);
    ceph_mount: fn(*mut ceph_mount_info, *const c_char) -> c_int;
    ceph_unmount: fn(*mut ceph_mount_info) -> c_int;
    ceph_release: fn(*mut ceph_mount_info) -> c_int;
    ceph_get_fs_cid: fn(*mut ceph_mount_info) -> i64;
    ceph_mount_perms: fn(*mut ceph_mount_info) -> *mut UserPerm;
    ceph_userperm_new: fn(u32, u32, c_int, *mut u32) -> *mut UserPerm;
    ceph_userperm_destroy: fn(*mut UserPerm);
    ceph_ll_lookup_root: fn(*mut ceph_mount_info, *mut *mut Inode) -> c_int;
    ceph_ll_lookup_inode: fn(*mut ceph_mount_info, inodeno_t, *mut *mut Inode) -> c_int;
    ceph_ll_lookup: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *mut *mut Inode, *mut ceph_statx, c_uint, c_uint, *const UserPerm) -> c_int;
    ceph_ll_put: fn(*mut ceph_mount_info, *mut Inode) -> c_int;
    ceph_ll_getattr: fn(*mut ceph_mount_info, *mut Inode, *mut ceph_statx, c_uint, c_uint, *const UserPerm) -> c_int;
    ceph_ll_setattr: fn(*mut ceph_mount_info, *mut Inode, *mut ceph_statx, c_int, *const UserPerm) -> c_int;
    ceph_ll_open: fn(*mut ceph_mount_info, *mut Inode, c_int, *mut *mut Fh, *const UserPerm) -> c_int;
    ceph_ll_read: fn(*mut ceph_mount_info, *mut Fh, i64, u64, *mut c_char) -> c_int;
    ceph_ll_write: fn(*mut ceph_mount_info, *mut Fh, i64, u64, *const c_char) -> c_int;
    ceph_ll_fsync: fn(*mut ceph_mount_info, *mut Fh, c_int) -> c_int;
    ceph_ll_setlk: fn(*mut ceph_mount_info, *mut Fh, *mut libc::flock, u64, c_int) -> c_int;
    ceph_ll_getlk: fn(*mut ceph_mount_info, *mut Fh, *mut libc::flock, u64) -> c_int;
    ceph_ll_sync_inode: fn(*mut ceph_mount_info, *mut Inode, c_int) -> c_int;
    ceph_ll_fallocate: fn(*mut ceph_mount_info, *mut Fh, c_int, i64, i64) -> c_int;
    ceph_ll_close: fn(*mut ceph_mount_info, *mut Fh) -> c_int;
    ceph_get_cap_return_timeout: fn(*mut ceph_mount_info) -> u32;
    ceph_set_deleg_timeout: fn(*mut ceph_mount_info, u32) -> c_int;
    ceph_ll_delegation: fn(*mut ceph_mount_info, *mut Fh, c_uint, ceph_deleg_cb_t, *mut c_void) -> c_int;
    ceph_ll_create: fn(*mut ceph_mount_info, *mut Inode, *const c_char, libc::mode_t, c_int, *mut *mut Inode, *mut *mut Fh, *mut ceph_statx, c_uint, c_uint, *const UserPerm) -> c_int;
    ceph_ll_mknod: fn(*mut ceph_mount_info, *mut Inode, *const c_char, libc::mode_t, libc::dev_t, *mut *mut Inode, *mut ceph_statx, c_uint, c_uint, *const UserPerm) -> c_int;
    ceph_ll_mkdir: fn(*mut ceph_mount_info, *mut Inode, *const c_char, libc::mode_t, *mut *mut Inode, *mut ceph_statx, c_uint, c_uint, *const UserPerm) -> c_int;
    ceph_ll_symlink: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *const c_char, *mut *mut Inode, *mut ceph_statx, c_uint, c_uint, *const UserPerm) -> c_int;
    ceph_ll_readlink: fn(*mut ceph_mount_info, *mut Inode, *mut c_char, usize, *const UserPerm) -> c_int;
    ceph_ll_link: fn(*mut ceph_mount_info, *mut Inode, *mut Inode, *const c_char, *const UserPerm) -> c_int;
    ceph_ll_unlink: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *const UserPerm) -> c_int;
    ceph_ll_rmdir: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *const UserPerm) -> c_int;
    ceph_ll_rename: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *mut Inode, *const c_char, *const UserPerm) -> c_int;
    ceph_ll_opendir: fn(*mut ceph_mount_info, *mut Inode, *mut *mut ceph_dir_result, *const UserPerm) -> c_int;
    ceph_ll_releasedir: fn(*mut ceph_mount_info, *mut ceph_dir_result) -> c_int;
    ceph_readdirplus_r: fn(*mut ceph_mount_info, *mut ceph_dir_result, *mut libc::dirent, *mut ceph_statx, c_uint, c_uint, *mut *mut Inode) -> c_int;
    ceph_telldir: fn(*mut ceph_mount_info, *mut ceph_dir_result) -> i64;
    ceph_seekdir: fn(*mut ceph_mount_info, *mut ceph_dir_result, i64);
    ceph_ll_statfs: fn(*mut ceph_mount_info, *mut Inode, *mut libc::statvfs) -> c_int;
    ceph_ll_getxattr: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *mut c_void, usize, *const UserPerm) -> c_int;
    ceph_ll_setxattr: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *const c_void, usize, c_int, *const UserPerm) -> c_int;
    ceph_ll_listxattr: fn(*mut ceph_mount_info, *mut Inode, *mut c_char, usize, *mut usize, *const UserPerm) -> c_int;
    ceph_ll_removexattr: fn(*mut ceph_mount_info, *mut Inode, *const c_char, *const UserPerm) -> c_int;
}

/// The library's file name (the run-time package: Debian `libcephfs2`).
pub const LIBRARY: &str = "libcephfs.so.2";

/// libcephfs, loaded on first use; the error says what to install.
pub fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        // SAFETY: loading libcephfs runs its (C++) initialisers, which have
        // no preconditions; the symbols resolved are declared above with
        // the signatures of Ceph 16.2's header.
        unsafe {
            let lib = libloading::Library::new(LIBRARY)
                .map_err(|e| format!("cannot load {LIBRARY} (install Debian's libcephfs2): {e}"))?;
            Api::resolve(lib).map_err(|e| format!("{LIBRARY} lacks a function nfsx needs (Ceph 16.2 or later): {e}"))
        }
    })
    .as_ref()
    .map_err(Clone::clone)
}

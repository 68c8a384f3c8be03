//! The sans-IO NFS client: everything that decides what to send and what a
//! reply means, with time passed in, so it is tested on virtual time. The
//! tokio layer (`client` crate) only moves bytes and sleeps.
#![forbid(unsafe_code)]

pub mod attrcache;
pub mod readahead;
pub mod rpc;
pub mod stats;
pub mod v41;
pub mod writeback;

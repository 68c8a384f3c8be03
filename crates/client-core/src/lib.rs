//! The sans-IO NFS client: everything that decides what to send and what a
//! reply means, with time passed in, so it is tested on virtual time. The
//! tokio layer (`client` crate) only moves bytes and sleeps.
#![forbid(unsafe_code)]
// Data from the network is never indexed into; slices of local buffers
// use checked access too, so a wrong length is an error, not a panic.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod attrcache;
pub mod fattr;
pub mod readahead;
pub mod rpc;
pub mod stats;
pub mod v41;
pub mod writeback;

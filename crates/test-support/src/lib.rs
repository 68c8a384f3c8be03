//! Helpers shared by the workspace's test suites. The in-process
//! harness of server-core and the TCP tests of nfsx speak NFSv4 with the
//! same operations and the same session rules; only the way a COMPOUND
//! reaches the server differs.
#![forbid(unsafe_code)]

pub mod kdc;
pub mod nfs4;
pub mod pki;

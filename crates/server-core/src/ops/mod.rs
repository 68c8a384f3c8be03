//! Protocol operations, per NFS version.

pub mod v3;

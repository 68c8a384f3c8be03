//! Protocol operations, per NFS version.

pub mod v3;
#[allow(dead_code)] // filled in operation by operation
pub mod v4;

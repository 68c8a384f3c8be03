//! Byte-range locks, shared by NFSv4 LOCK and NLM so that v3 and v4
//! locks conflict with each other.

#[derive(Debug, Default)]
pub(crate) struct LockManager {}

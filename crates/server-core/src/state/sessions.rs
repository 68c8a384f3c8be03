//! Sessions, slot tables and the per-slot reply cache (RFC 8881 2.10).

#[derive(Debug, Default)]
pub(crate) struct Sessions {}

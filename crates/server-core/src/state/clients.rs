//! Client records: EXCHANGE_ID (4.1) and SETCLIENTID (4.0), leases,
//! courtesy clients.

#[derive(Debug, Default)]
pub(crate) struct Clients {}

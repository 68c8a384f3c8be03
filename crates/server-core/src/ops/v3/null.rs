//! NULL (RFC 1813 section 3.3.0): does nothing; answered to every client,
//! whatever its credential, so that clients can probe the server.

pub(super) fn null() {}

//! NFSv4.1 client state, sans IO (RFC 8881): the slot table of a session,
//! the attributes the client asks for and how it reads them, the waits
//! between retries of a request the server asked to delay, the
//! delegations the client holds and the locks it holds under them, and
//! the directories it holds delegations on, kept by the server's
//! notifications.

pub mod attrs;
pub mod backoff;
pub mod delegations;
pub mod dirdeleg;
pub mod dirdelegs;
pub mod locallocks;
pub mod slots;

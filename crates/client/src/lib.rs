//! The async nfsx client: a tokio transport around the sans-IO
//! `client-core`, portmap/MOUNT discovery from an `nfs://` URL, NFSv3 or
//! an NFSv4.1/4.2 session (`?version=4.1`, `?version=4.2`) underneath, and
//! a file API with write-behind, adaptive readahead, attribute/name caches
//! and, over NFSv4.2, server-side copy and clone, holes and extended
//! attributes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), client::Error> {
//! let c = client::Client::connect("nfs://127.0.0.1/srv/data", Default::default()).await?;
//! let mut f = c.open("hello.txt", client::OpenOptions { write: true, create: true, ..Default::default() }).await?;
//! f.write(0, b"hello").await?;
//! f.close().await?;
//! # Ok(()) }
//! ```

// Data from the network is never indexed into; slices of local buffers
// use checked access too, so a wrong length is an error, not a panic.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod cache;
mod client;
mod delegated;
pub mod error;
mod file;
mod fs;
mod handles;
pub mod lockd;
pub mod mount;
pub mod nfs;
pub mod nfs3;
pub mod nfs41;
pub mod nlm;
mod rcvlowat;
mod results;
pub mod settings;
pub mod tls;
pub mod transport;
pub mod url;
mod v42;

pub use client::{resolve, Client};
pub use client_core::fattr::{Fattr, Sattr, SetTime, Time, TimeRangeError};
pub use delegated::{DirListener, DirNotice};
pub use error::{Error, Result};
pub use file::File;
pub use fs::{DirEntry, OpenOptions};
pub use handles::DirPage;
pub use mount::ServerAddrs;
pub use nfs41::LockConflict;
pub use results::{CreateHow, FsStat, ListEntry, NodeKind};
pub use settings::ClientSettings;
pub use url::{NfsUrl, Version};
pub use v42::XattrHow;

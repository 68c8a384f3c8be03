//! The NFSv4 state as the operations use it: methods of [`super::State4`]
//! in the protocol's terms (client ids, files, stateids, owners), each
//! taking the locks it needs itself. The operations never see the tables
//! or their locks, so that how the state is kept and locked (tables
//! under one lock, files' state in shards) can change behind this
//! surface alone.

mod clients;
mod cluster;
pub(crate) mod dir_delegations;
mod dirs;
mod layouts;
mod locks;
mod nlm;
mod offloads;
mod opens;
mod stateids;
mod without_tables;

pub(crate) use locks::{LockRange, Locker};
pub(crate) use nlm::Wait;
pub(crate) use opens::{Answer, OpenRequest, OpenStep, OpenStore};

//! `nfsx bench`: the workloads of the five NFS studies (Lever & Honeyman's
//! sequential write, Chen 2015's data, metadata and macro workloads, Lai's
//! `find -exec ls -l`), run against any NFS server through the nfsx client or
//! against any directory, repeated, summarised with confidence intervals and
//! compared side by side.
#![forbid(unsafe_code)]

pub mod model;
pub mod stats;
pub mod target;

pub mod cli;
pub mod dir;
pub mod heads;
pub mod nfs;
pub mod params;
pub mod proxy;
pub mod report;
pub mod run;
pub mod workloads;

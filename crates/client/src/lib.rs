//! The async nfsx client.

//! Host-directory backend (placeholder until implemented).
pub struct LocalFs;

//! In-memory backend (placeholder until implemented).
pub struct MemFs;

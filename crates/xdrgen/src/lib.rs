//! .x to Rust generator.

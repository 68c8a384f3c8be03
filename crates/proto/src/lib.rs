//! Generated protocol types (see crates/xdrgen).

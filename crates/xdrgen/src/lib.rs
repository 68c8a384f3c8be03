//! `.x` to Rust generator for XDR (RFC 4506 section 6) and ONC RPC program
//! definitions (RFC 5531 section 12).
//!
//! Mapping (names are kept verbatim from the .x file):
//! - `const X = N;` and program/version/procedure numbers become `pub const`
//!   (`u32`, or `u64`/`i64` when the value needs it).
//! - `enum` becomes a `#[repr(i32)]` Rust enum with `TryFrom<i32>`; decoding
//!   an unknown value fails with `XdrError::BadEnum`.
//! - `struct` becomes a struct with public fields.
//! - A union switched on `bool` with a `TRUE` arm and a void `FALSE` or
//!   `default` arm becomes `Option<T>`; other unions become enums with one
//!   variant per case label, plus `default(Disc[, T])` for the default arm.
//! - A struct whose last field points to its own type is a linked-list
//!   element: that field is omitted and every pointer to the type becomes a
//!   `Vec`, encoded in the XDR list form (`Encoder::list`).
//! - `opaque<>`/`string<>` become `xdr::Bytes` (bounded, zero-copy);
//!   `T x<N>` becomes `Vec<T>`, `T x[N]` becomes `[T; N]`.
//! - `typedef` becomes `pub type`; when the alias's wire form is not what
//!   the Rust type's own impls do (a bound, the list form), `encode_NAME` /
//!   `decode_NAME` functions are emitted as well.
#![forbid(unsafe_code)]

mod ast;
mod emit;
mod lexer;
mod model;
mod parser;
mod writer;

/// A problem in the .x input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{msg}", if *line > 0 { format!("line {line}: ") } else { String::new() })]
pub struct Error {
    pub line: usize,
    pub msg: String,
}

impl Error {
    pub(crate) fn at(line: usize, msg: impl Into<String>) -> Error {
        Error { line, msg: msg.into() }
    }
    pub(crate) fn new(msg: impl Into<String>) -> Error {
        Error { line: 0, msg: msg.into() }
    }
}

/// Generates a Rust module from the text of a .x file. `source` is the name
/// written in the `@generated` header (e.g. `spec/xdr/nfs3_prot.x`); the
/// output depends only on the two arguments.
pub fn generate(src: &str, source: &str) -> Result<String, Error> {
    let tokens = lexer::lex(src)?;
    let defs = parser::parse(&tokens)?;
    let model = model::Model::new(defs)?;
    emit::emit(&model, source)
}

/// The name the header of a module generated from `path` uses: the path as
/// given (run from the workspace root, as `crates/proto/regen.sh` does, so
/// it reads `spec/xdr/NAME.x`), with `/` separators.
pub fn source_name(path: &std::path::Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").unwrap_or(&s).to_string()
}

#[cfg(test)]
mod tests;

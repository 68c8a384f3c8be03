//! Syntax tree of an XDR (RFC 4506 section 6) / RPC (RFC 5531 section 12)
//! specification, as written; meaning is resolved later in `model`.

/// A constant or a size: a literal or the name of a constant / enum member.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Lit(i128),
    Named(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum TypeSpec {
    Int,
    UInt,
    Hyper,
    UHyper,
    Float,
    Double,
    Quadruple,
    Bool,
    /// A named type (`foo`, `struct foo`, `enum foo`, `union foo`).
    Named(String),
    /// Anonymous bodies nested in a declaration; hoisted to named types
    /// before code generation.
    Enum(Vec<(String, Value)>),
    Struct(Vec<Decl>),
    Union(Box<UnionBody>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeclKind {
    Void,
    Plain(TypeSpec),
    /// `T x[N]` (T not opaque).
    Array(TypeSpec, Value),
    /// `T x<N>` / `T x<>`.
    VarArray(TypeSpec, Option<Value>),
    OpaqueFixed(Value),
    OpaqueVar(Option<Value>),
    String(Option<Value>),
    /// `T *x`.
    Pointer(TypeSpec),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    pub name: String,
    pub kind: DeclKind,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    pub labels: Vec<Value>,
    pub decl: Decl,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UnionBody {
    pub disc: Decl,
    pub arms: Vec<Arm>,
    pub default: Option<Decl>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Procedure {
    pub name: String,
    pub ret: Option<TypeSpec>,
    pub args: Vec<TypeSpec>,
    pub num: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub name: String,
    pub procs: Vec<Procedure>,
    pub num: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Definition {
    Const(String, Value),
    Typedef(Decl),
    Enum(String, Vec<(String, Value)>),
    Struct(String, Vec<Decl>),
    Union(String, UnionBody),
    Program { name: String, versions: Vec<Version>, num: Value },
}

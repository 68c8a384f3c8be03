//! Semantic model: anonymous types hoisted to named ones, constants
//! resolved, and the facts code generation needs (which structs are linked
//! list elements, which unions are really `Option`, how each declaration is
//! encoded).

use std::collections::{HashMap, HashSet};

use crate::ast::*;
use crate::Error;

/// How a declaration goes on the wire, beyond what the Rust type's own
/// `Encode`/`Decode` implementation does.
#[derive(Debug, Clone, PartialEq)]
pub enum Codec {
    /// The Rust type's `Encode`/`Decode`.
    Default,
    /// Variable-length opaque or string with its bound.
    Opaque(u32),
    VarArray(Box<Codec>, u32),
    FixedArray(Box<Codec>, usize),
    /// `T *x` where T is a linked-list element: the whole chain as a `Vec`.
    List,
    /// Optional value; `true` when boxed.
    Option(Box<Codec>, bool),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Builtin {
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Bool,
}

/// The type a union switches on.
#[derive(Debug, Clone, PartialEq)]
pub enum Disc {
    Enum(String),
    Int(Builtin),
    Bool,
}

pub struct Model {
    pub defs: Vec<Definition>,
    pub consts: HashMap<String, i128>,
    pub enums: HashMap<String, Vec<(String, i128)>>,
    pub structs: HashMap<String, Vec<Decl>>,
    pub unions: HashMap<String, UnionBody>,
    pub typedefs: HashMap<String, Decl>,
    /// Structs whose last field points to their own type.
    pub list_elems: HashSet<String>,
    /// Unions `switch (bool) { case TRUE: T x; case FALSE|default: void; }`
    /// mapped to the declaration of their TRUE arm.
    pub option_unions: HashMap<String, Decl>,
    default_memo: std::cell::RefCell<HashMap<String, bool>>,
}

impl Model {
    pub fn new(defs: Vec<Definition>) -> Result<Model, Error> {
        let defs = hoist(defs);
        let mut m = Model {
            defs: Vec::new(),
            consts: HashMap::new(),
            enums: HashMap::new(),
            structs: HashMap::new(),
            unions: HashMap::new(),
            typedefs: HashMap::new(),
            list_elems: HashSet::new(),
            option_unions: HashMap::new(),
            default_memo: Default::default(),
        };
        // Boolean case labels.
        m.consts.insert("TRUE".into(), 1);
        m.consts.insert("FALSE".into(), 0);
        let mut pending: Vec<(String, Value)> = Vec::new();
        for d in &defs {
            match d {
                Definition::Const(n, v) => pending.push((n.clone(), v.clone())),
                Definition::Enum(_, members) => pending.extend(members.iter().cloned()),
                _ => {}
            }
        }
        // Constants may refer to each other in any order.
        loop {
            let before = pending.len();
            pending.retain(|(n, v)| match v {
                Value::Lit(x) => {
                    m.consts.insert(n.clone(), *x);
                    false
                }
                Value::Named(r) => match m.consts.get(r) {
                    Some(x) => {
                        let x = *x;
                        m.consts.insert(n.clone(), x);
                        false
                    }
                    None => true,
                },
            });
            if pending.is_empty() {
                break;
            }
            if pending.len() == before {
                let (n, v) = &pending[0];
                return Err(Error::new(format!("constant `{n}` refers to an undefined name: {v:?}")));
            }
        }
        for d in &defs {
            match d {
                Definition::Enum(n, members) => {
                    let mut vals = Vec::new();
                    for (mn, _) in members {
                        vals.push((mn.clone(), m.consts[mn]));
                    }
                    m.enums.insert(n.clone(), vals);
                }
                Definition::Struct(n, f) => {
                    m.structs.insert(n.clone(), f.clone());
                }
                Definition::Union(n, u) => {
                    m.unions.insert(n.clone(), u.clone());
                }
                Definition::Typedef(decl) => {
                    m.typedefs.insert(decl.name.clone(), decl.clone());
                }
                _ => {}
            }
        }
        let names: Vec<String> = m.structs.keys().cloned().collect();
        // A list element has exactly one pointer to its own type, and it is
        // the last field (so the wire form is element, then "more?").
        for n in names {
            let fields = &m.structs[&n];
            let selfs: Vec<usize> =
                (0..fields.len()).filter(|&i| m.pointer_target(&fields[i].kind).is_some_and(|t| t == n)).collect();
            if selfs.len() == 1 && selfs[0] + 1 == fields.len() {
                m.list_elems.insert(n);
            }
        }
        for (n, u) in &m.unions {
            if let Some(d) = option_arm(&m, u) {
                m.option_unions.insert(n.clone(), d);
            }
        }
        m.defs = defs;
        m.check()?;
        Ok(m)
    }

    /// Every named type and constant used must be defined.
    fn check(&self) -> Result<(), Error> {
        let mut err = None;
        let mut visit = |ts: &TypeSpec| {
            if let TypeSpec::Named(n) = ts {
                if !self.is_type(n) && err.is_none() {
                    err = Some(Error::new(format!("undefined type `{n}`")));
                }
            }
        };
        for d in &self.defs {
            match d {
                Definition::Typedef(decl) => decl_types(decl, &mut visit),
                Definition::Struct(_, fields) => fields.iter().for_each(|f| decl_types(f, &mut visit)),
                Definition::Union(_, u) => {
                    decl_types(&u.disc, &mut visit);
                    u.arms.iter().for_each(|a| decl_types(&a.decl, &mut visit));
                    if let Some(d) = &u.default {
                        decl_types(d, &mut visit);
                    }
                }
                _ => {}
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub fn is_type(&self, n: &str) -> bool {
        self.enums.contains_key(n)
            || self.structs.contains_key(n)
            || self.unions.contains_key(n)
            || self.typedefs.contains_key(n)
    }

    pub fn value(&self, v: &Value) -> Result<i128, Error> {
        match v {
            Value::Lit(x) => Ok(*x),
            Value::Named(n) => {
                self.consts.get(n).copied().ok_or_else(|| Error::new(format!("undefined constant `{n}`")))
            }
        }
    }

    pub fn size(&self, v: &Value) -> Result<u32, Error> {
        let x = self.value(v)?;
        u32::try_from(x).map_err(|_| Error::new(format!("size {x} out of range")))
    }

    /// Follows `typedef T name;` chains (plain declarations only).
    pub fn resolve<'a>(&'a self, mut n: &'a str) -> &'a str {
        for _ in 0..64 {
            match self.typedefs.get(n) {
                Some(Decl { kind: DeclKind::Plain(TypeSpec::Named(t)), .. }) => n = t,
                _ => break,
            }
        }
        n
    }

    /// If `kind` is an optional pointer (directly or through a pointer
    /// typedef), the resolved name of what it points to.
    pub fn pointer_target(&self, kind: &DeclKind) -> Option<String> {
        match kind {
            DeclKind::Pointer(TypeSpec::Named(t)) => Some(self.resolve(t).to_string()),
            DeclKind::Plain(TypeSpec::Named(t)) => {
                let r = self.resolve(t);
                match self.typedefs.get(r) {
                    Some(Decl { kind: DeclKind::Pointer(TypeSpec::Named(t)), .. }) => Some(self.resolve(t).to_string()),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    pub fn is_list_pointer(&self, ts: &TypeSpec) -> bool {
        matches!(ts, TypeSpec::Named(t) if self.list_elems.contains(self.resolve(t)))
    }

    pub fn builtin(ts: &TypeSpec) -> Option<Builtin> {
        Some(match ts {
            TypeSpec::Int => Builtin::I32,
            TypeSpec::UInt => Builtin::U32,
            TypeSpec::Hyper => Builtin::I64,
            TypeSpec::UHyper => Builtin::U64,
            TypeSpec::Float => Builtin::F32,
            TypeSpec::Double => Builtin::F64,
            TypeSpec::Bool => Builtin::Bool,
            _ => return None,
        })
    }

    /// Whether a pointer to `ts` declared inside type `container` must be
    /// boxed to keep the Rust type finite.
    pub fn needs_box(&self, ts: &TypeSpec, container: &str) -> bool {
        match ts {
            TypeSpec::Named(t) => self.reaches(t, container),
            _ => false,
        }
    }

    /// How a declaration inside type `container` is encoded.
    pub fn codec(&self, kind: &DeclKind, container: &str) -> Result<Codec, Error> {
        Ok(match kind {
            DeclKind::Void | DeclKind::OpaqueFixed(_) => Codec::Default,
            DeclKind::Plain(TypeSpec::Named(n)) => {
                let r = self.resolve(n);
                if let Some(td) = self.typedefs.get(r) {
                    self.codec(&td.kind, r)?
                } else if let Some(arm) = self.option_unions.get(r) {
                    let inner = self.codec(&arm.kind, r)?;
                    if inner == Codec::Default {
                        Codec::Default
                    } else {
                        Codec::Option(Box::new(inner), false)
                    }
                } else {
                    Codec::Default
                }
            }
            DeclKind::Plain(_) => Codec::Default,
            // Unbounded opaques and arrays of plain elements are exactly what
            // the `Bytes` and `Vec<T>` impls do.
            DeclKind::OpaqueVar(max) | DeclKind::String(max) => match self.bound(max)? {
                u32::MAX => Codec::Default,
                b => Codec::Opaque(b),
            },
            DeclKind::VarArray(ts, max) => {
                match (self.codec(&DeclKind::Plain(ts.clone()), container)?, self.bound(max)?) {
                    (Codec::Default, u32::MAX) => Codec::Default,
                    (inner, b) => Codec::VarArray(Box::new(inner), b),
                }
            }
            DeclKind::Array(ts, n) => Codec::FixedArray(
                Box::new(self.codec(&DeclKind::Plain(ts.clone()), container)?),
                self.size(n)? as usize,
            ),
            DeclKind::Pointer(ts) => {
                if self.is_list_pointer(ts) {
                    Codec::List
                } else {
                    let inner = self.codec(&DeclKind::Plain(ts.clone()), container)?;
                    Codec::Option(Box::new(inner), self.needs_box(ts, container))
                }
            }
        })
    }

    fn bound(&self, max: &Option<Value>) -> Result<u32, Error> {
        match max {
            Some(v) => self.size(v),
            None => Ok(u32::MAX),
        }
    }

    /// The type a union's discriminant has.
    pub fn disc(&self, decl: &Decl) -> Result<Disc, Error> {
        let ts = match &decl.kind {
            DeclKind::Plain(ts) => ts,
            _ => return Err(Error::new(format!("bad union discriminant `{}`", decl.name))),
        };
        match ts {
            TypeSpec::Bool => Ok(Disc::Bool),
            TypeSpec::Named(n) => {
                let r = self.resolve(n);
                if self.enums.contains_key(r) {
                    return Ok(Disc::Enum(r.to_string()));
                }
                match self.typedefs.get(r) {
                    Some(Decl { kind: DeclKind::Plain(t), .. }) => {
                        self.disc(&Decl { name: decl.name.clone(), kind: DeclKind::Plain(t.clone()) })
                    }
                    _ => Err(Error::new(format!("bad union discriminant type `{n}`"))),
                }
            }
            other => match Self::builtin(other) {
                Some(b @ (Builtin::I32 | Builtin::U32 | Builtin::I64 | Builtin::U64)) => Ok(Disc::Int(b)),
                _ => Err(Error::new(format!("bad union discriminant type {other:?}"))),
            },
        }
    }

    /// Whether the type named `n` can reach `target` by value (so a pointer
    /// from `target` to `n` needs a `Box`).
    pub fn reaches(&self, n: &str, target: &str) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![n.to_string()];
        while let Some(cur) = stack.pop() {
            if cur == target {
                return true;
            }
            if !seen.insert(cur.clone()) {
                continue;
            }
            let mut push = |k: &DeclKind| {
                let ts = match k {
                    DeclKind::Plain(ts) | DeclKind::Array(ts, _) => ts,
                    DeclKind::Pointer(ts) if !self.is_list_pointer(ts) => ts,
                    _ => return,
                };
                if let TypeSpec::Named(t) = ts {
                    stack.push(t.clone());
                }
            };
            if let Some(fields) = self.structs.get(&cur) {
                let skip_last = self.list_elems.contains(&cur);
                let len = fields.len() - usize::from(skip_last);
                fields[..len].iter().for_each(|f| push(&f.kind));
            } else if let Some(u) = self.unions.get(&cur) {
                u.arms.iter().for_each(|a| push(&a.decl.kind));
                if let Some(d) = &u.default {
                    push(&d.kind);
                }
            } else if let Some(td) = self.typedefs.get(&cur) {
                push(&td.kind);
            }
        }
        false
    }

    /// Whether the Rust type of `kind` implements `Default`.
    pub fn has_default(&self, kind: &DeclKind) -> bool {
        match kind {
            DeclKind::Void
            | DeclKind::VarArray(..)
            | DeclKind::OpaqueVar(_)
            | DeclKind::String(_)
            | DeclKind::Pointer(_) => true,
            DeclKind::OpaqueFixed(n) => self.size(n).is_ok_and(|n| n <= 32),
            DeclKind::Array(ts, n) => {
                self.size(n).is_ok_and(|n| n <= 32) && self.has_default(&DeclKind::Plain(ts.clone()))
            }
            DeclKind::Plain(TypeSpec::Named(n)) => self.type_has_default(n),
            DeclKind::Plain(_) => true,
        }
    }

    pub fn type_has_default(&self, n: &str) -> bool {
        if let Some(v) = self.default_memo.borrow().get(n) {
            return *v;
        }
        // Provisional answer for cycles (only possible through boxes).
        self.default_memo.borrow_mut().insert(n.to_string(), true);
        let v = if self.enums.contains_key(n) || self.option_unions.contains_key(n) {
            true
        } else if let Some(fields) = self.structs.get(n) {
            fields.iter().all(|f| self.has_default(&f.kind))
        } else if let Some(td) = self.typedefs.get(n) {
            self.has_default(&td.kind)
        } else if self.unions.contains_key(n) {
            self.union_default(n).is_some()
        } else {
            false
        };
        self.default_memo.borrow_mut().insert(n.to_string(), v);
        v
    }

    /// The value `Default::default()` gives a union, as (label or None for
    /// the default arm, discriminant pattern for the default arm, whether
    /// the arm carries a value).
    pub fn union_default(&self, n: &str) -> Option<UnionDefault> {
        let u = self.unions.get(n)?;
        let disc = self.disc(&u.disc).ok()?;
        for a in &u.arms {
            if a.decl.kind == DeclKind::Void {
                return Some(UnionDefault::Arm(a.labels.first()?.clone(), false));
            }
        }
        let uncovered = || -> Option<String> {
            let covered: Vec<i128> =
                u.arms.iter().flat_map(|a| a.labels.iter()).filter_map(|l| self.value(l).ok()).collect();
            match &disc {
                Disc::Enum(e) => {
                    self.enums.get(e)?.iter().find(|(_, v)| !covered.contains(v)).map(|(m, _)| format!("{e}::{m}"))
                }
                Disc::Bool => [0, 1].iter().find(|v| !covered.contains(v)).map(|v| (*v == 1).to_string()),
                Disc::Int(_) => None,
            }
        };
        if let Some(d) = &u.default {
            if d.kind == DeclKind::Void {
                if let Some(p) = uncovered() {
                    return Some(UnionDefault::Default(p, false));
                }
            }
        }
        let a = u.arms.first()?;
        if self.has_default(&a.decl.kind) {
            return Some(UnionDefault::Arm(a.labels.first()?.clone(), true));
        }
        None
    }
}

pub enum UnionDefault {
    Arm(Value, bool),
    Default(String, bool),
}

fn option_arm(m: &Model, u: &UnionBody) -> Option<Decl> {
    if m.disc(&u.disc).ok()? != Disc::Bool {
        return None;
    }
    let mut true_arm = None;
    let mut false_void = false;
    for a in &u.arms {
        for l in &a.labels {
            match m.value(l).ok()? {
                1 if a.decl.kind != DeclKind::Void => true_arm = Some(a.decl.clone()),
                0 if a.decl.kind == DeclKind::Void => false_void = true,
                _ => return None,
            }
        }
    }
    if let Some(d) = &u.default {
        if d.kind != DeclKind::Void {
            return None;
        }
        false_void = true;
    }
    if false_void {
        true_arm
    } else {
        None
    }
}

fn decl_types(d: &Decl, f: &mut impl FnMut(&TypeSpec)) {
    match &d.kind {
        DeclKind::Plain(t) | DeclKind::Array(t, _) | DeclKind::VarArray(t, _) | DeclKind::Pointer(t) => f(t),
        _ => {}
    }
}

/// Gives every anonymous enum/struct/union nested in a declaration a name
/// (`<parent>_<field>`) and a definition of its own, placed before its
/// parent.
fn hoist(defs: Vec<Definition>) -> Vec<Definition> {
    let mut out = Vec::new();
    for d in defs {
        match d {
            Definition::Typedef(decl) => {
                // `typedef struct { ... } name;` defines `name` itself.
                let name = decl.name.clone();
                match decl.kind {
                    DeclKind::Plain(TypeSpec::Struct(fields)) => {
                        let fields = hoist_decls(&name, fields, &mut out);
                        out.push(Definition::Struct(name, fields));
                    }
                    DeclKind::Plain(TypeSpec::Union(u)) => {
                        let u = hoist_union(&name, *u, &mut out);
                        out.push(Definition::Union(name, u));
                    }
                    DeclKind::Plain(TypeSpec::Enum(m)) => out.push(Definition::Enum(name, m)),
                    kind => {
                        let decl = hoist_decl(&name, Decl { name: String::new(), kind }, &mut out);
                        out.push(Definition::Typedef(Decl { name, kind: decl.kind }));
                    }
                }
            }
            Definition::Struct(name, fields) => {
                let fields = hoist_decls(&name, fields, &mut out);
                out.push(Definition::Struct(name, fields));
            }
            Definition::Union(name, u) => {
                let u = hoist_union(&name, u, &mut out);
                out.push(Definition::Union(name, u));
            }
            other => out.push(other),
        }
    }
    out
}

fn hoist_decls(parent: &str, decls: Vec<Decl>, out: &mut Vec<Definition>) -> Vec<Decl> {
    decls.into_iter().map(|d| hoist_decl(parent, d, out)).collect()
}

fn hoist_union(parent: &str, u: UnionBody, out: &mut Vec<Definition>) -> UnionBody {
    UnionBody {
        disc: hoist_decl(parent, u.disc, out),
        arms: u.arms.into_iter().map(|a| Arm { labels: a.labels, decl: hoist_decl(parent, a.decl, out) }).collect(),
        default: u.default.map(|d| hoist_decl(parent, d, out)),
    }
}

fn hoist_decl(parent: &str, d: Decl, out: &mut Vec<Definition>) -> Decl {
    let name = if d.name.is_empty() { parent.to_string() } else { format!("{parent}_{}", d.name) };
    let mut fix = |ts: TypeSpec| -> TypeSpec {
        match ts {
            TypeSpec::Struct(fields) => {
                let fields = hoist_decls(&name, fields, out);
                out.push(Definition::Struct(name.clone(), fields));
                TypeSpec::Named(name.clone())
            }
            TypeSpec::Union(u) => {
                let u = hoist_union(&name, *u, out);
                out.push(Definition::Union(name.clone(), u));
                TypeSpec::Named(name.clone())
            }
            TypeSpec::Enum(m) => {
                out.push(Definition::Enum(name.clone(), m));
                TypeSpec::Named(name.clone())
            }
            t => t,
        }
    };
    let kind = match d.kind {
        DeclKind::Plain(t) => DeclKind::Plain(fix(t)),
        DeclKind::Array(t, n) => DeclKind::Array(fix(t), n),
        DeclKind::VarArray(t, n) => DeclKind::VarArray(fix(t), n),
        DeclKind::Pointer(t) => DeclKind::Pointer(fix(t)),
        k => k,
    };
    Decl { name: d.name, kind }
}

//! Recursive-descent parser for RFC 4506 section 6.3 plus the RFC 5531
//! `program` definition.

use crate::ast::*;
use crate::lexer::{Tok, Token};
use crate::Error;

pub fn parse(tokens: &[Token]) -> Result<Vec<Definition>, Error> {
    let mut p = Parser { toks: tokens, pos: 0 };
    let mut defs = Vec::new();
    while p.pos < p.toks.len() {
        defs.push(p.definition()?);
    }
    Ok(defs)
}

struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn line(&self) -> usize {
        self.toks.get(self.pos).or(self.toks.last()).map_or(0, |t| t.line)
    }

    fn err<T>(&self, msg: impl Into<String>) -> Result<T, Error> {
        let found = match self.toks.get(self.pos) {
            Some(t) => format!("{:?}", t.tok),
            None => "end of input".into(),
        };
        Err(Error::at(self.line(), format!("{}, found {found}", msg.into())))
    }

    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == kw)
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), Error> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.err(format!("expected `{c}`"))
        }
    }

    fn expect_kw(&mut self, kw: &str) -> Result<(), Error> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            self.err(format!("expected `{kw}`"))
        }
    }

    fn ident(&mut self) -> Result<String, Error> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(s.clone())
            }
            _ => self.err("expected an identifier"),
        }
    }

    fn value(&mut self) -> Result<Value, Error> {
        match self.peek() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(Value::Lit(*n))
            }
            Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(Value::Named(s.clone()))
            }
            _ => self.err("expected a constant"),
        }
    }

    fn definition(&mut self) -> Result<Definition, Error> {
        let kw = self.ident()?;
        let def = match kw.as_str() {
            "const" => {
                let name = self.ident()?;
                self.expect_punct('=')?;
                Definition::Const(name, self.value()?)
            }
            "typedef" => Definition::Typedef(self.declaration()?),
            "enum" => {
                let name = self.ident()?;
                Definition::Enum(name, self.enum_body()?)
            }
            "struct" => {
                let name = self.ident()?;
                Definition::Struct(name, self.struct_body()?)
            }
            "union" => {
                let name = self.ident()?;
                Definition::Union(name, self.union_body()?)
            }
            "program" => self.program()?,
            _ => {
                self.pos -= 1;
                return self.err("expected a definition");
            }
        };
        self.expect_punct(';')?;
        Ok(def)
    }

    fn enum_body(&mut self) -> Result<Vec<(String, Value)>, Error> {
        self.expect_punct('{')?;
        let mut members = Vec::new();
        loop {
            let name = self.ident()?;
            self.expect_punct('=')?;
            members.push((name, self.value()?));
            if self.eat_punct('}') {
                break;
            }
            self.expect_punct(',')?;
            // tolerate a trailing comma
            if self.eat_punct('}') {
                break;
            }
        }
        Ok(members)
    }

    fn struct_body(&mut self) -> Result<Vec<Decl>, Error> {
        self.expect_punct('{')?;
        let mut fields = Vec::new();
        while !self.eat_punct('}') {
            fields.push(self.declaration()?);
            self.expect_punct(';')?;
        }
        Ok(fields)
    }

    fn union_body(&mut self) -> Result<UnionBody, Error> {
        self.expect_kw("switch")?;
        self.expect_punct('(')?;
        let disc = self.declaration()?;
        self.expect_punct(')')?;
        self.expect_punct('{')?;
        let mut arms = Vec::new();
        let mut default = None;
        while !self.eat_punct('}') {
            if self.eat_kw("default") {
                self.expect_punct(':')?;
                default = Some(self.declaration()?);
                self.expect_punct(';')?;
                continue;
            }
            let mut labels = Vec::new();
            while self.eat_kw("case") {
                labels.push(self.value()?);
                self.expect_punct(':')?;
            }
            if labels.is_empty() {
                return self.err("expected `case`, `default` or `}`");
            }
            // `case A: default: void;` is not valid XDR; a default after
            // labels would be ambiguous, so it is rejected by the loop above.
            let decl = self.declaration()?;
            self.expect_punct(';')?;
            arms.push(Arm { labels, decl });
        }
        Ok(UnionBody { disc, arms, default })
    }

    /// A type specifier, including the C-style `unsigned`, `long` and the
    /// fixed-width names some .x files use without defining them.
    fn type_spec(&mut self) -> Result<TypeSpec, Error> {
        let word = self.ident()?;
        Ok(match word.as_str() {
            "unsigned" => {
                if self.eat_kw("int") || self.eat_kw("long") {
                    TypeSpec::UInt
                } else if self.eat_kw("hyper") {
                    TypeSpec::UHyper
                } else {
                    TypeSpec::UInt
                }
            }
            "int" | "long" | "int32_t" => TypeSpec::Int,
            "u_int" | "u_long" | "uint32_t" | "u_int32_t" => TypeSpec::UInt,
            "hyper" | "int64_t" => TypeSpec::Hyper,
            "uint64_t" | "u_int64_t" => TypeSpec::UHyper,
            "float" => TypeSpec::Float,
            "double" => TypeSpec::Double,
            "quadruple" => TypeSpec::Quadruple,
            "bool" | "bool_t" => TypeSpec::Bool,
            "enum" => {
                if self.is_punct('{') {
                    TypeSpec::Enum(self.enum_body()?)
                } else {
                    TypeSpec::Named(self.ident()?)
                }
            }
            "struct" => {
                if self.is_punct('{') {
                    TypeSpec::Struct(self.struct_body()?)
                } else {
                    TypeSpec::Named(self.ident()?)
                }
            }
            "union" => {
                if self.is_kw("switch") {
                    TypeSpec::Union(Box::new(self.union_body()?))
                } else {
                    TypeSpec::Named(self.ident()?)
                }
            }
            _ => TypeSpec::Named(word),
        })
    }

    fn declaration(&mut self) -> Result<Decl, Error> {
        if self.is_kw("void") {
            self.pos += 1;
            return Ok(Decl { name: String::new(), kind: DeclKind::Void });
        }
        if self.is_kw("opaque") || self.is_kw("string") {
            let string = self.is_kw("string");
            self.pos += 1;
            let name = self.ident()?;
            let kind = if self.eat_punct('[') {
                if string {
                    return self.err("string must be variable-length");
                }
                let v = self.value()?;
                self.expect_punct(']')?;
                DeclKind::OpaqueFixed(v)
            } else {
                self.expect_punct('<')?;
                let max = if self.is_punct('>') { None } else { Some(self.value()?) };
                self.expect_punct('>')?;
                if string {
                    DeclKind::String(max)
                } else {
                    DeclKind::OpaqueVar(max)
                }
            };
            return Ok(Decl { name, kind });
        }
        let ty = self.type_spec()?;
        if self.eat_punct('*') {
            let name = self.ident()?;
            return Ok(Decl { name, kind: DeclKind::Pointer(ty) });
        }
        let name = self.ident()?;
        let kind = if self.eat_punct('[') {
            let v = self.value()?;
            self.expect_punct(']')?;
            DeclKind::Array(ty, v)
        } else if self.eat_punct('<') {
            let max = if self.is_punct('>') { None } else { Some(self.value()?) };
            self.expect_punct('>')?;
            DeclKind::VarArray(ty, max)
        } else {
            DeclKind::Plain(ty)
        };
        Ok(Decl { name, kind })
    }

    fn program(&mut self) -> Result<Definition, Error> {
        let name = self.ident()?;
        self.expect_punct('{')?;
        let mut versions = Vec::new();
        while !self.eat_punct('}') {
            self.expect_kw("version")?;
            let vname = self.ident()?;
            self.expect_punct('{')?;
            let mut procs = Vec::new();
            while !self.eat_punct('}') {
                procs.push(self.procedure()?);
            }
            self.expect_punct('=')?;
            let num = self.value()?;
            self.expect_punct(';')?;
            versions.push(Version { name: vname, procs, num });
        }
        self.expect_punct('=')?;
        let num = self.value()?;
        Ok(Definition::Program { name, versions, num })
    }

    fn proc_type(&mut self) -> Result<Option<TypeSpec>, Error> {
        if self.eat_kw("void") {
            Ok(None)
        } else {
            Ok(Some(self.type_spec()?))
        }
    }

    fn procedure(&mut self) -> Result<Procedure, Error> {
        let ret = self.proc_type()?;
        let name = self.ident()?;
        self.expect_punct('(')?;
        let mut args = Vec::new();
        loop {
            if let Some(t) = self.proc_type()? {
                args.push(t);
            }
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct(')')?;
        self.expect_punct('=')?;
        let num = self.value()?;
        self.expect_punct(';')?;
        Ok(Procedure { name, ret, args, num })
    }
}

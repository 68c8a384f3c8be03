//! Tokens of the XDR language. Comments, `%` pass-through lines and
//! preprocessor lines (`#ifdef`, ...) are skipped.

use crate::Error;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    Num(i128),
    Punct(char),
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

pub fn lex(src: &str) -> Result<Vec<Token>, Error> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if line_start && (c == b'%' || c == b'#') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        line_start = false;
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err(Error::at(line, "unterminated comment"));
                }
                if b[i] == b'*' && b[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(src[start..i].to_string()), line });
            continue;
        }
        if c.is_ascii_digit() || (c == b'-' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let neg = c == b'-';
            if neg {
                i += 1;
            }
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let text = &src[start..i];
            let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                i128::from_str_radix(hex, 16)
            } else if text.len() > 1 && text.starts_with('0') {
                i128::from_str_radix(&text[1..], 8)
            } else {
                text.parse::<i128>()
            };
            let v = parsed.map_err(|_| Error::at(line, format!("bad number `{text}`")))?;
            out.push(Token { tok: Tok::Num(if neg { -v } else { v }), line });
            continue;
        }
        if b"{}[]<>()=;:,*".contains(&c) {
            out.push(Token { tok: Tok::Punct(c as char), line });
            i += 1;
            continue;
        }
        return Err(Error::at(line, format!("unexpected character `{}`", c as char)));
    }
    Ok(out)
}

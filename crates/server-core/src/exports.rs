//! `/etc/exports` (exports(5)) syntax: which clients may use which export,
//! and with which options.
//!
//! ```text
//! # path          client(options) ...
//! /srv/data       10.0.0.0/8(rw,no_root_squash) *.example.com(ro) *(ro)
//! "/srv/with space" -async host1 \
//!                   host2(rw)
//! ```
//!
//! Supported: comments, `\` line continuation, double-quoted paths, `\ooo`
//! octal escapes, default options after the path (`-opt,opt`), and the
//! client forms `*`, exact IPv4/IPv6 address, `addr/prefix` and
//! `addr/netmask`, host names and host-name wildcards (`*`, `?`).
//! Defaults are Linux's: `ro,sync,root_squash,secure,wdelay`,
//! anonuid/anongid 65534, `sec=sys`. `sec=` takes `sys`, `krb5`, `krb5i`
//! and `krb5p` (RPCSEC_GSS with Kerberos V5), in order of preference.
//! Netgroups (`@group`) are refused with an error rather than silently
//! ignored. Options that only
//! matter to the Linux kernel server (subtree checking, crossmnt, ...) are
//! accepted and have no effect.

use std::fmt;
use std::net::IpAddr;

use rpcsec::Flavor;

use crate::PeerInfo;

/// The anonymous uid/gid used when no `anonuid=`/`anongid=` is given.
pub const NOBODY: u32 = 65534;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// `ro` (default) / `rw`.
    pub read_only: bool,
    /// `sync` (default) / `async`. With `async` the server writes unstable
    /// data but replies as if it had reached the requested stability,
    /// which loses acknowledged data on a crash (as with Linux knfsd).
    pub sync: bool,
    /// `root_squash` (default) / `no_root_squash`.
    pub root_squash: bool,
    /// `all_squash` / `no_all_squash` (default).
    pub all_squash: bool,
    pub anonuid: u32,
    pub anongid: u32,
    /// `secure` (default): requests must come from a source port below 1024.
    pub secure: bool,
    /// `xprtsec=none:tls:mtls` (default: all three): the transport
    /// protections admitted (RFC 9289 RPC-with-TLS, as knfsd spells it).
    pub xprtsec: XprtSec,
    /// `sec=sys:krb5:krb5i:krb5p` (default `sys`): the security flavors
    /// admitted, most preferred first, as MOUNT and SECINFO list them.
    pub sec: Vec<Flavor>,
}

impl ExportOptions {
    /// Whether a call made with `flavor` may use the export. A Kerberos
    /// call protected more than a listed Kerberos flavor asks (krb5p
    /// where krb5i is listed) is admitted; AUTH_SYS never stands in for
    /// Kerberos, nor Kerberos for AUTH_SYS.
    pub fn admits(&self, flavor: Flavor) -> bool {
        self.sec.iter().any(|&listed| match (listed, flavor) {
            (Flavor::Sys, f) => f == Flavor::Sys,
            (_, Flavor::Sys) => false,
            (listed, f) => f >= listed,
        })
    }
}

/// Which connections an export admits, by their protection. As in knfsd,
/// each mode names exactly one kind of connection: `tls` is TLS without a
/// client certificate, `mtls` TLS with a verified one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XprtSec {
    pub none: bool,
    pub tls: bool,
    pub mtls: bool,
}

impl Default for XprtSec {
    fn default() -> Self {
        XprtSec { none: true, tls: true, mtls: true }
    }
}

impl XprtSec {
    pub fn admits(&self, t: &crate::TransportSecurity) -> bool {
        match t {
            crate::TransportSecurity::Clear => self.none,
            crate::TransportSecurity::Tls => self.tls,
            crate::TransportSecurity::Mtls { .. } => self.mtls,
        }
    }

    /// Whether clear-text connections are refused.
    pub fn requires_tls(&self) -> bool {
        !self.none
    }
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            read_only: true,
            sync: true,
            root_squash: true,
            all_squash: false,
            anonuid: NOBODY,
            anongid: NOBODY,
            secure: true,
            xprtsec: XprtSec::default(),
            sec: vec![Flavor::Sys],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMatcher {
    /// `*` alone: every client.
    Everyone,
    Addr(IpAddr),
    /// Network address (host bits cleared) and prefix length.
    Net(IpAddr, u8),
    /// A fully qualified host name (lower case, no trailing dot), compared
    /// with the reverse-resolved name the transport supplies.
    Host(String),
    /// A host name pattern with `*` and `?` (lower case). `*` also matches
    /// dots, so `*.example.com` covers sub-domains, as in exports(5).
    Wildcard(String),
}

/// One `client(options)` item of an export line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRule {
    pub matcher: ClientMatcher,
    pub options: ExportOptions,
    /// The client pattern as written, reported by MOUNT EXPORT.
    pub pattern: String,
}

impl ClientRule {
    /// A rule for `matcher` with default options.
    pub fn new(matcher: ClientMatcher, options: ExportOptions) -> ClientRule {
        let pattern = matcher.to_string();
        ClientRule { matcher, options, pattern }
    }

    pub fn matches(&self, peer: &PeerInfo) -> bool {
        self.matcher.matches(peer)
    }
}

impl fmt::Display for ClientMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientMatcher::Everyone => f.write_str("*"),
            ClientMatcher::Addr(a) => write!(f, "{a}"),
            ClientMatcher::Net(a, p) => write!(f, "{a}/{p}"),
            ClientMatcher::Host(h) | ClientMatcher::Wildcard(h) => f.write_str(h),
        }
    }
}

/// Peers on a dual-stack socket show up as `::ffff:a.b.c.d`; rules are
/// written with plain IPv4 addresses.
pub(crate) fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

fn mask_ip(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix.min(32))) };
            IpAddr::V4((bits & mask).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix.min(128))) };
            IpAddr::V6((bits & mask).into())
        }
    }
}

impl ClientMatcher {
    pub fn matches(&self, peer: &PeerInfo) -> bool {
        let ip = canonical_ip(peer.addr.ip());
        match self {
            ClientMatcher::Everyone => true,
            ClientMatcher::Addr(a) => *a == ip,
            ClientMatcher::Net(net, prefix) => net.is_ipv4() == ip.is_ipv4() && mask_ip(ip, *prefix) == *net,
            ClientMatcher::Host(h) => peer_hostname(peer).is_some_and(|n| n == *h),
            ClientMatcher::Wildcard(p) => peer_hostname(peer).is_some_and(|n| glob(p.as_bytes(), n.as_bytes())),
        }
    }
}

fn peer_hostname(peer: &PeerInfo) -> Option<String> {
    let h = peer.hostname.as_deref()?;
    let h = h.strip_suffix('.').unwrap_or(h);
    (!h.is_empty()).then(|| h.to_ascii_lowercase())
}

/// `*` any run of characters (dots included), `?` exactly one.
fn glob(pat: &[u8], s: &[u8]) -> bool {
    // Iterative matcher with single backtrack point: linear enough for
    // host names and immune to pathological patterns.
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == s[i]) {
            p += 1;
            i += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some((p, i));
            p += 1;
        } else if let Some((sp, si)) = star {
            p = sp + 1;
            i = si + 1;
            star = Some((sp, si + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// The first rule that matches `peer`, in the order written.
pub fn match_rule<'a>(rules: &'a [ClientRule], peer: &PeerInfo) -> Option<&'a ClientRule> {
    rules.iter().find(|r| r.matches(peer))
}

/// One export line (lines naming the same path are merged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportEntry {
    /// Absolute, normalised (no `//`, no trailing `/` except for `/`).
    pub path: String,
    pub rules: Vec<ClientRule>,
    /// Line where the entry starts (1-based).
    pub line: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportsFile {
    pub entries: Vec<ExportEntry>,
    /// Things that are accepted but probably not what was meant (e.g.
    /// `/path (rw)` exporting read-write to the world).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("exports line {line}: {message}")]
pub struct ExportsError {
    pub line: usize,
    pub message: String,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ExportsError> {
    Err(ExportsError { line, message: message.into() })
}

/// Parses the text of an exports file.
pub fn parse_exports(text: &str) -> Result<ExportsFile, ExportsError> {
    let mut out = ExportsFile::default();
    for (line, tokens) in logical_lines(text)? {
        let Some((path_tok, rest)) = tokens.split_first() else { continue };
        let path = normalize_path(path_tok).ok_or_else(|| ExportsError {
            line,
            message: format!("export path {path_tok:?} must be absolute and must not contain . or .. components"),
        })?;
        let mut defaults = ExportOptions::default();
        let mut clients = rest;
        if let Some((first, more)) = rest.split_first() {
            if let Some(opts) = first.strip_prefix('-') {
                apply_options(&mut defaults, opts, line)?;
                clients = more;
            }
        }
        let mut rules = Vec::new();
        if clients.is_empty() {
            out.warnings.push(format!(
                "line {line}: no client given for {path}; exporting to everyone (*) with default options"
            ));
            rules.push(ClientRule::new(ClientMatcher::Everyone, defaults.clone()));
        }
        for tok in clients {
            let (host, opts) = match tok.find('(') {
                Some(i) => {
                    let Some(body) = tok[i + 1..].strip_suffix(')') else {
                        return err(line, format!("unbalanced parenthesis in {tok:?}"));
                    };
                    (&tok[..i], Some(body))
                }
                None => (tok.as_str(), None),
            };
            let matcher = if host.is_empty() {
                out.warnings.push(format!(
                    "line {line}: options {tok:?} without a client apply to everyone (*); \
                     remove the space before '(' if they were meant for the previous client"
                ));
                ClientMatcher::Everyone
            } else {
                parse_client(host, line)?
            };
            let mut options = defaults.clone();
            if let Some(opts) = opts {
                apply_options(&mut options, opts, line)?;
            }
            let pattern = if host.is_empty() { "*".to_string() } else { host.to_string() };
            rules.push(ClientRule { matcher, options, pattern });
        }
        if let Some(prev) = out.entries.iter_mut().find(|e| e.path == path) {
            out.warnings
                .push(format!("line {line}: {path} already exported on line {}; client lists merged", prev.line));
            prev.rules.extend(rules);
        } else {
            out.entries.push(ExportEntry { path, rules, line });
        }
    }
    Ok(out)
}

/// Splits the text into logical lines (continuations joined, comments
/// dropped) of unquoted, unescaped tokens, each with its first line number.
fn logical_lines(text: &str) -> Result<Vec<(usize, Vec<String>)>, ExportsError> {
    let mut out = Vec::new();
    let mut tokens: Vec<String> = Vec::new();
    let mut start = 1;
    let mut continued = false;
    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        if !continued {
            start = lineno;
        }
        let (body, cont) = match raw.trim_end().strip_suffix('\\') {
            // A trailing backslash continues the line unless it is itself
            // escaped or part of a comment.
            Some(b) if !b.ends_with('\\') => (b, true),
            _ => (raw, false),
        };
        tokenize(body, lineno, &mut tokens)?;
        continued = cont;
        if !cont && !tokens.is_empty() {
            out.push((start, std::mem::take(&mut tokens)));
        }
    }
    if !tokens.is_empty() {
        out.push((start, tokens));
    }
    Ok(out)
}

fn tokenize(line: &str, lineno: usize, out: &mut Vec<String>) -> Result<(), ExportsError> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if b[i] == b'#' {
            return Ok(());
        }
        let mut tok: Vec<u8> = Vec::new();
        let mut quoted = false;
        while i < b.len() && (quoted || !b[i].is_ascii_whitespace()) {
            match b[i] {
                b'"' => {
                    quoted = !quoted;
                    i += 1;
                }
                b'\\' if i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) => {
                    let v = b[i + 1..i + 4].iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                    let Ok(v) = u8::try_from(v) else {
                        return err(lineno, "octal escape out of range");
                    };
                    tok.push(v);
                    i += 4;
                }
                c => {
                    tok.push(c);
                    i += 1;
                }
            }
        }
        if quoted {
            return err(lineno, "unterminated quote");
        }
        match String::from_utf8(tok) {
            Ok(s) => out.push(s),
            Err(_) => return err(lineno, "escape sequence produced invalid UTF-8"),
        }
    }
    Ok(())
}

/// Absolute path without empty, `.` or `..` components; `None` if invalid.
pub fn normalize_path(p: &str) -> Option<String> {
    if !p.starts_with('/') || p.contains('\0') {
        return None;
    }
    let mut out = String::new();
    for comp in p.split('/').filter(|c| !c.is_empty()) {
        if comp == "." || comp == ".." {
            return None;
        }
        out.push('/');
        out.push_str(comp);
    }
    if out.is_empty() {
        out.push('/');
    }
    Some(out)
}

fn parse_client(host: &str, line: usize) -> Result<ClientMatcher, ExportsError> {
    if host == "*" {
        return Ok(ClientMatcher::Everyone);
    }
    if host.starts_with('@') {
        return err(line, format!("netgroup {host:?}: netgroups are not supported"));
    }
    if let Some((addr, mask)) = host.split_once('/') {
        let Ok(ip) = addr.parse::<IpAddr>() else {
            return err(line, format!("{host:?}: {addr:?} is not an IP address"));
        };
        let ip = canonical_ip(ip);
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = if let Ok(p) = mask.parse::<u8>() {
            if p > max {
                return err(line, format!("{host:?}: prefix length {p} is larger than {max}"));
            }
            p
        } else if let Ok(IpAddr::V4(m)) = mask.parse::<IpAddr>() {
            let bits = u32::from(m);
            if !ip.is_ipv4() || bits.leading_ones() + bits.trailing_zeros() != 32 {
                return err(line, format!("{host:?}: {mask:?} is not a valid netmask"));
            }
            bits.leading_ones() as u8
        } else {
            return err(line, format!("{host:?}: {mask:?} is neither a prefix length nor a netmask"));
        };
        let net = mask_ip(ip, prefix);
        return Ok(ClientMatcher::Net(net, prefix));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ClientMatcher::Addr(canonical_ip(ip)));
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let valid = !name.is_empty()
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'*' | b'?'));
    if !valid {
        return err(line, format!("{host:?} is not a host name, address, network or wildcard"));
    }
    if name.contains(['*', '?']) {
        Ok(ClientMatcher::Wildcard(name))
    } else {
        Ok(ClientMatcher::Host(name))
    }
}

/// Options that only steer the Linux kernel server; accepted so that an
/// existing exports file works unchanged, and otherwise ignored.
const IGNORED_OPTIONS: &[&str] = &[
    "wdelay",
    "no_wdelay",
    "subtree_check",
    "no_subtree_check",
    "hide",
    "nohide",
    "crossmnt",
    "nocrossmnt",
    "secure_locks",
    "insecure_locks",
    "auth_nlm",
    "no_auth_nlm",
    "acl",
    "no_acl",
    "pnfs",
    "no_pnfs",
    "security_label",
    "no_security_label",
    "mp",
    "root_squash_gids",
];
const IGNORED_VALUE_OPTIONS: &[&str] = &["fsid", "mountpoint", "mp", "refer", "replicas", "root"];

fn apply_options(o: &mut ExportOptions, list: &str, line: usize) -> Result<(), ExportsError> {
    for opt in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        match (key, value) {
            ("ro", None) => o.read_only = true,
            ("rw", None) => o.read_only = false,
            ("sync", None) => o.sync = true,
            ("async", None) => o.sync = false,
            ("root_squash", None) => o.root_squash = true,
            ("no_root_squash", None) => o.root_squash = false,
            ("all_squash", None) => o.all_squash = true,
            ("no_all_squash", None) => o.all_squash = false,
            ("secure", None) => o.secure = true,
            ("insecure", None) => o.secure = false,
            ("anonuid", Some(v)) => o.anonuid = parse_id(v, opt, line)?,
            ("anongid", Some(v)) => o.anongid = parse_id(v, opt, line)?,
            ("xprtsec", Some(v)) => {
                let mut x = XprtSec { none: false, tls: false, mtls: false };
                for mode in v.split(':') {
                    match mode {
                        "none" => x.none = true,
                        "tls" => x.tls = true,
                        "mtls" => x.mtls = true,
                        _ => return err(line, format!("{opt}: {mode:?} is not none, tls or mtls")),
                    }
                }
                o.xprtsec = x;
            }
            ("sec", Some(v)) => {
                let mut sec = Vec::new();
                for name in v.split(':') {
                    let Some(f) = Flavor::parse(name) else {
                        return err(line, format!("{opt}: {name:?} is not sys, krb5, krb5i or krb5p"));
                    };
                    if !sec.contains(&f) {
                        sec.push(f);
                    }
                }
                o.sec = sec;
            }
            (k, None) if IGNORED_OPTIONS.contains(&k) => {}
            (k, Some(_)) if IGNORED_VALUE_OPTIONS.contains(&k) => {}
            _ => return err(line, format!("unknown export option {opt:?}")),
        }
    }
    Ok(())
}

fn parse_id(v: &str, opt: &str, line: usize) -> Result<u32, ExportsError> {
    // Linux also accepts -1 / -2 style values for the 16-bit nobody.
    match v.parse::<u32>() {
        Ok(n) => Ok(n),
        Err(_) => match v.parse::<i32>() {
            Ok(n) if n < 0 => Ok(n as u32),
            _ => err(line, format!("{opt}: {v:?} is not a number")),
        },
    }
}

#[cfg(test)]
mod tests;

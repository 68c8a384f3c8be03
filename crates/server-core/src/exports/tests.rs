use super::*;
use std::net::SocketAddr;

fn peer(addr: &str, host: Option<&str>) -> PeerInfo {
    PeerInfo {
        addr: addr.parse::<SocketAddr>().unwrap(),
        local: "127.0.0.1:2049".parse().unwrap(),
        hostname: host.map(str::to_string),
        conn: 0,
        tls: Default::default(),
    }
}

#[test]
fn defaults_are_linux_defaults() {
    let f = parse_exports("/srv host1\n").unwrap();
    let o = &f.entries[0].rules[0].options;
    assert!(o.read_only && o.sync && o.root_squash && !o.all_squash && o.secure);
    assert_eq!((o.anonuid, o.anongid), (65534, 65534));
}

#[test]
fn full_syntax() {
    let text = r#"
# comment line
/srv/data   10.0.0.0/8(rw,no_root_squash) *.example.com(ro) *(ro,insecure)   # trailing
"/srv/with space"  -rw,async host1 \
      host2.Example.COM.(ro,all_squash,anonuid=1000,anongid=1001)
/srv/v6 2001:db8::/32(rw) ::1(rw) 192.168.1.0/255.255.255.0(rw,no_subtree_check,sec=sys)
/srv/oct\040dir web-?.example.com(rw)
"#;
    let f = parse_exports(text).unwrap();
    assert_eq!(f.entries.len(), 4);
    let e = &f.entries[0];
    assert_eq!(e.path, "/srv/data");
    assert_eq!(e.line, 3);
    assert_eq!(e.rules.len(), 3);
    assert_eq!(e.rules[0].matcher, ClientMatcher::Net("10.0.0.0".parse().unwrap(), 8));
    assert!(!e.rules[0].options.read_only && !e.rules[0].options.root_squash);
    assert_eq!(e.rules[1].matcher, ClientMatcher::Wildcard("*.example.com".into()));
    assert_eq!(e.rules[2].matcher, ClientMatcher::Everyone);
    assert!(!e.rules[2].options.secure);

    let e = &f.entries[1];
    assert_eq!(e.path, "/srv/with space");
    assert_eq!(e.line, 4);
    assert_eq!(e.rules[0].matcher, ClientMatcher::Host("host1".into()));
    assert!(!e.rules[0].options.read_only && !e.rules[0].options.sync);
    let o = &e.rules[1].options;
    assert_eq!(e.rules[1].matcher, ClientMatcher::Host("host2.example.com".into()));
    assert!(o.read_only && !o.sync && o.all_squash);
    assert_eq!((o.anonuid, o.anongid), (1000, 1001));

    let e = &f.entries[2];
    assert_eq!(e.rules[0].matcher, ClientMatcher::Net("2001:db8::".parse().unwrap(), 32));
    assert_eq!(e.rules[1].matcher, ClientMatcher::Addr("::1".parse().unwrap()));
    assert_eq!(e.rules[2].matcher, ClientMatcher::Net("192.168.1.0".parse().unwrap(), 24));
    assert_eq!(f.entries[3].path, "/srv/oct dir");
    assert_eq!(f.entries[3].rules[0].matcher, ClientMatcher::Wildcard("web-?.example.com".into()));
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
}

#[test]
fn errors_carry_line_numbers() {
    let cases = [
        ("/a host(rw)\n/b host(bogus)\n", 2, "unknown export option"),
        ("\n\nrelative host\n", 3, "must be absolute"),
        ("/a @netgroup(rw)\n", 1, "netgroups"),
        ("/a 10.0.0.0/33(rw)\n", 1, "prefix length"),
        ("/a 10.0.0.0/255.0.255.0(rw)\n", 1, "netmask"),
        ("/a host(rw\n", 1, "parenthesis"),
        ("/a \"host\n", 1, "quote"),
        ("/a host(anonuid=x)\n", 1, "not a number"),
        ("/a host(sec=krb4)\n", 1, "not sys, krb5"),
        ("/a/../b host\n", 1, "must be absolute"),
        ("/a ho$t\n", 1, "not a host name"),
    ];
    for (text, line, needle) in cases {
        let e = parse_exports(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.to_string().contains(needle), "{text:?}: {e}");
        assert!(e.to_string().starts_with(&format!("exports line {line}:")));
    }
}

#[test]
fn warnings_for_likely_mistakes() {
    let f = parse_exports("/a (rw)\n/b\n/a host\n").unwrap();
    assert_eq!(f.warnings.len(), 3, "{:?}", f.warnings);
    assert_eq!(f.entries.len(), 2);
    assert_eq!(f.entries[0].rules.len(), 2);
    assert_eq!(f.entries[0].rules[0].matcher, ClientMatcher::Everyone);
    assert!(!f.entries[0].rules[0].options.read_only);
    assert_eq!(f.entries[1].rules[0].matcher, ClientMatcher::Everyone);
}

#[test]
fn path_normalisation() {
    assert_eq!(normalize_path("/").as_deref(), Some("/"));
    assert_eq!(normalize_path("//srv//x/").as_deref(), Some("/srv/x"));
    assert_eq!(normalize_path("/srv/./x"), None);
    assert_eq!(normalize_path("srv"), None);
}

#[test]
fn matching() {
    let f =
        parse_exports("/e 192.168.1.7(rw) 10.1.0.0/16(ro) *.lab.example.org(rw) exact.example.org(ro) fe80::/10(rw)\n")
            .unwrap();
    let rules = &f.entries[0].rules;
    let pick = |a: &str, h: Option<&str>| match_rule(rules, &peer(a, h)).map(|r| r.pattern.clone());
    assert_eq!(pick("192.168.1.7:700", None).as_deref(), Some("192.168.1.7"));
    // IPv4-mapped IPv6 from a dual-stack listener.
    assert_eq!(pick("[::ffff:192.168.1.7]:700", None).as_deref(), Some("192.168.1.7"));
    assert_eq!(pick("10.1.200.3:700", None).as_deref(), Some("10.1.0.0/16"));
    assert_eq!(pick("10.2.0.1:700", None), None);
    assert_eq!(pick("1.2.3.4:700", Some("a.b.LAB.example.org.")).as_deref(), Some("*.lab.example.org"));
    assert_eq!(pick("1.2.3.4:700", Some("exact.example.org")).as_deref(), Some("exact.example.org"));
    assert_eq!(pick("1.2.3.4:700", Some("other.example.org")), None);
    assert_eq!(pick("1.2.3.4:700", None), None);
    assert_eq!(pick("[fe80::1]:700", None).as_deref(), Some("fe80::/10"));
    // First match wins.
    let f = parse_exports("/e 10.0.0.0/8(rw) 10.0.0.1(ro) *(ro)\n").unwrap();
    let r = match_rule(&f.entries[0].rules, &peer("10.0.0.1:1", None)).unwrap();
    assert!(!r.options.read_only);
    let r = match_rule(&f.entries[0].rules, &peer("11.0.0.1:1", None)).unwrap();
    assert_eq!(r.matcher, ClientMatcher::Everyone);
}

#[test]
fn glob_patterns() {
    assert!(glob(b"*", b"anything.at.all"));
    assert!(glob(b"*.example.com", b"a.b.example.com"));
    assert!(!glob(b"*.example.com", b"example.com"));
    assert!(glob(b"web?", b"web1"));
    assert!(!glob(b"web?", b"web12"));
    assert!(glob(b"a*b*c", b"aXXbYYc"));
    assert!(!glob(b"a*b*c", b"aXXbYY"));
    assert!(glob(b"**", b""));
}

#[test]
fn xprtsec_names_the_transports_admitted() {
    use crate::TransportSecurity::{Clear, Mtls, Tls};
    let mtls = Mtls { identity: "sha256:00".into() };
    let f = parse_exports("/a *(xprtsec=tls:mtls)\n/b *(xprtsec=mtls)\n/c *\n").unwrap();
    let x = |i: usize| f.entries[i].rules[0].options.xprtsec;
    assert_eq!([x(0).admits(&Clear), x(0).admits(&Tls), x(0).admits(&mtls)], [false, true, true]);
    assert_eq!([x(1).admits(&Clear), x(1).admits(&Tls), x(1).admits(&mtls)], [false, false, true]);
    assert_eq!([x(2).admits(&Clear), x(2).admits(&Tls), x(2).admits(&mtls)], [true, true, true]);
    assert!(x(0).requires_tls() && !x(2).requires_tls());
    assert!(parse_exports("/a *(xprtsec=krb5)\n").is_err());
}

#[test]
fn sec_lists_the_flavors_in_order_and_weaker_calls_are_not_admitted() {
    use rpcsec::Flavor::*;
    let f = parse_exports("/a *(sec=krb5p:krb5i)\n/b *(sec=sys:krb5)\n/c *\n").unwrap();
    let o = |i: usize| f.entries[i].rules[0].options.clone();
    assert_eq!(o(0).sec, vec![Krb5p, Krb5i]);
    assert_eq!(o(2).sec, vec![Sys]);
    assert!(o(0).admits(Krb5p) && o(0).admits(Krb5i));
    assert!(!o(0).admits(Krb5) && !o(0).admits(Sys));
    assert!(o(1).admits(Sys) && o(1).admits(Krb5) && o(1).admits(Krb5p));
    assert!(!o(2).admits(Krb5) && o(2).admits(Sys));
}

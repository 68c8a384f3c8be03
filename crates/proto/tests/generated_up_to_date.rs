//! The committed generated modules must be what xdrgen makes of the .x
//! files today.

use std::path::Path;

/// (spec file under spec/xdr, generated file under crates/proto). Keep in
/// step with regen.sh.
const MODULES: &[(&str, &str)] = &[
    ("spec/xdr/rpc_prot.x", "src/gen/rpc.rs"),
    ("spec/xdr/portmap.x", "src/gen/portmap.rs"),
    ("spec/xdr/mount3.x", "src/gen/mount3.rs"),
    ("spec/xdr/nfs3_prot.x", "src/gen/nfs3.rs"),
    ("spec/xdr/nlm_prot.x", "src/gen/nlm.rs"),
    ("spec/xdr/sm_inter.x", "src/gen/nsm.rs"),
    ("spec/xdr/rpcsec_gss.x", "src/gen/rpcsec_gss.rs"),
    ("spec/xdr/nfs42_prot.x", "src/gen/nfs4.rs"),
    ("spec/xdr/lockd_relay.x", "src/gen/lockd_relay.rs"),
    ("crates/proto/tests/fixtures/features.x", "tests/fixtures/features.rs"),
];

#[test]
fn generated_modules_are_up_to_date() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir.join("../..");
    let mut stale = Vec::new();
    for (spec, out) in MODULES {
        let src = std::fs::read_to_string(root.join(spec)).unwrap_or_else(|e| panic!("reading {spec}: {e}"));
        let want = xdrgen::generate(&src, spec).unwrap_or_else(|e| panic!("xdrgen {spec}: {e}"));
        let have = std::fs::read_to_string(crate_dir.join(out)).unwrap_or_default();
        if have != want {
            stale.push(format!("  cargo run -p xdrgen -- {spec} -o crates/proto/{out}"));
        }
    }
    assert!(stale.is_empty(), "generated code is out of date; run `crates/proto/regen.sh`, or:\n{}", stale.join("\n"));
}

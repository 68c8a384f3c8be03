#!/bin/sh
# Regenerates the committed protocol modules in src/gen from spec/xdr/*.x.
# tests/generated_up_to_date.rs fails until this has been run after a
# change to a .x file or to xdrgen.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build --quiet -p xdrgen
gen() {
    ./target/debug/xdrgen "spec/xdr/$1.x" -o "crates/proto/src/gen/$2.rs"
}
gen rpc_prot rpc
gen portmap portmap
gen mount3 mount3
gen nfs3_prot nfs3
gen nlm_prot nlm
gen sm_inter nsm
gen rpcsec_gss rpcsec_gss
gen lockd_relay lockd_relay
gen nfs42_prot nfs4
# generator feature fixture used by tests/features.rs
./target/debug/xdrgen crates/proto/tests/fixtures/features.x -o crates/proto/tests/fixtures/features.rs

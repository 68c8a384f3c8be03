#!/usr/bin/env bash
# Runs every fuzz target for a short time (default 20 s each), as CI does.
# Longer runs: scripts/fuzz.sh 600, or `cargo fuzz run TARGET` in fuzz/.
# Uses the nightly toolchain when installed, else stable with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz passes -Z flags); installs cargo-fuzz from
# crates.io when missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-20}
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi
targets=$(cargo "${toolchain[@]}" fuzz list)
for t in $targets; do
  echo "== fuzz $t (${secs}s)"
  mkdir -p "corpus/$t"
  cargo "${toolchain[@]}" fuzz run "$t" --sanitizer none -- \
    -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 -print_final_stats=0 2>&1 | tail -n 3
done
echo "fuzz: all targets ran ${secs}s without a crash"

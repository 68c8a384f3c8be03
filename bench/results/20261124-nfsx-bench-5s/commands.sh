#!/bin/bash
# The nfsx-client rows with reads and writes dominating (--duration 5s), 5 alternating runs, nfsx vs Ganesha.
set -u
REPO=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)

NFSX=${NFSX:-$REPO/target/release/nfsx}
OUT=${OUT:-$REPO/bench/results/$(date -u +%Y%m%dT%H%M%SZ)-nfsx-bench-5s}
mkdir -p "$OUT"
W=/var/tmp/nxb5; rm -rf $W; mkdir -p $W/ex $W/st; printf 'portmap_port = 0\n' > $W/c.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/ex --listen 127.0.0.1:12160 --state-dir $W/st --config $W/c.toml --log warn & sp=$!
trap 'kill $sp; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
b() { "$NFSX" bench data --runs 5 --duration 5s --quiet --target "nfs://127.0.0.1:12160$W/ex?version=3" --target "nfs://127.0.0.1/export?version=3" "$@"; }
b --mode rand-read,rand-write --io-size 4KiB --threads 16 --size 64MiB --json "$OUT/rand-4k-16t.json" > "$OUT/rand-4k-16t.txt" 2>&1
b --mode seq-read,seq-write --io-size 1MiB --threads 4 --size 256MiB --json "$OUT/seq-1m-4t.json" > "$OUT/seq-1m-4t.txt" 2>&1

#!/bin/bash
# Two nfsx builds (OLD, and NFSX: this one) and NFS-Ganesha 4.3 side by side,
# alternating runs, same client (this build's): the direct-write rows and the
# read rows of the nfsx-client benchmarks. nfsx at its defaults (sync export,
# sync_metadata = true) but for leaving port 111 to Ganesha's rpcbind.
#   OLD=/path/to/previous/nfsx ab.sh OUTDIR [RUNS]
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=/path/to/previous/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-direct-ab; rm -rf $W; mkdir -p $W/new $W/old $W/st-new $W/st-old
printf 'portmap_port = 0\n' > $W/c.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/new --listen 127.0.0.1:12060 --state-dir $W/st-new --config $W/c.toml --log warn & np=$!
"$OLD" serve $W/old --listen 127.0.0.1:12062 --state-dir $W/st-old --config $W/c.toml --log warn & op=$!
trap 'kill $np $op 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
V=${VERS:-3}
T=(--target "nfs://127.0.0.1:12060$W/new?version=$V" --target "nfs://127.0.0.1:12062$W/old?version=$V" --target "nfs://127.0.0.1/export?version=$V")
C=(--runs "$RUNS" --quiet "${T[@]}")
run() { name=$1; shift; "$NFSX" bench data "$@" "${C[@]}" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1; }
run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --duration 5s --direct
run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --duration 5s --direct
run rand-read-4k-16t --mode rand-read --io-size 4KiB --threads 16 --size 64MiB --duration 5s --no-data-cache
run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration 5s --no-data-cache
grep -h -E "ops_per_sec|mbps" "$OUT"/*.txt

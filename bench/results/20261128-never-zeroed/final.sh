#!/bin/bash
# This build (server and client) against NFS-Ganesha 4.3, same client,
# alternating runs within each invocation, NFSv3 and NFSv4.1: the 1 MiB
# rows at four threads and the 16-thread 4 KiB write row.
#   final.sh OUTDIR [RUNS]      NFSX=path/to/nfsx (default target/release/nfsx)
# ../20261127-direct-writes/summary.py OUTDIR/v3 (and v41) prints medians
# and per-run ratios (targets: nfsx, Ganesha).
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT/v3" "$OUT/v41"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-never-zeroed-f; rm -rf $W; mkdir -p $W/ex $W/st
printf 'portmap_port = 0\n' > $W/server.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/ex --listen 127.0.0.1:12070 --state-dir $W/st --config $W/server.toml --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
for V in 3 4.1; do
  d=$OUT/v${V/./}
  T=(--target "nfs://127.0.0.1:12070$W/ex?version=$V" --target "nfs://127.0.0.1/export?version=$V")
  run() {
    local name=$1; shift
    "$NFSX" bench data "$@" --duration ${DURATION:-5s} --runs "$RUNS" --quiet "${T[@]}" \
      --json "$d/$name.json" > "$d/$name.txt" 2>&1
  }
  run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --direct --size 256MiB
  run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --no-data-cache --size 256MiB
  run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --direct --size 64MiB
done

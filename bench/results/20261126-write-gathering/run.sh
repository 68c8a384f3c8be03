#!/bin/bash
# Stable 8 KiB writes from 16 threads to one file (nfsx bench data --sync),
# three servers side by side, same client, alternating runs:
#   1. nfsx with write gathering (write_gather_max_us = 2000)
#   2. nfsx at its defaults (write_gather_max_us = 0: group commit only)
#   3. NFS-Ganesha 4.3 (FSAL_VFS, scripts/ganesha.sh)
# Then each nfsx server's flush counters (flushes, callers, gathers).
#   run.sh OUTDIR [RUNS] [DURATION] [VERSION]
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; DUR=${3:-5s}; V=${4:-3}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-gather; rm -rf $W; mkdir -p $W/ex1 $W/st1 $W/ex2 $W/st2
printf 'portmap_port = 0\n[localfs]\nwrite_gather_max_us = 2000\n' > $W/c1.toml
printf 'portmap_port = 0\n' > $W/c2.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/ex1 --listen 127.0.0.1:12060 --state-dir $W/st1 --config $W/c1.toml --metrics 127.0.0.1:12061 --log warn & p1=$!
"$NFSX" serve $W/ex2 --listen 127.0.0.1:12070 --state-dir $W/st2 --config $W/c2.toml --metrics 127.0.0.1:12071 --log warn & p2=$!
trap 'kill $p1 $p2 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
"$NFSX" bench data --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration "$DUR" --runs "$RUNS" --quiet \
  --target "nfs://127.0.0.1:12060$W/ex1?version=$V" --target "nfs://127.0.0.1:12070$W/ex2?version=$V" \
  --target "nfs://127.0.0.1/export?version=$V" --json "$OUT/sync-8k-16t-v$V.json" > "$OUT/sync-8k-16t-v$V.txt" 2>&1
for p in 12061 12071; do
  echo "== nfsx :$((p - 1))"
  curl -s 127.0.0.1:$p/metrics | grep -E '^nfsx_backend_(flush|flushes)'
done > "$OUT/flushes-v$V.txt"

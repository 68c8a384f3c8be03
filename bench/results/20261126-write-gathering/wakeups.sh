#!/bin/bash
# Stable 8 KiB writes from 16 threads to one file: the build before the
# flush group woke only the next flush's starter (OLD, one condition
# variable) against this build and NFS-Ganesha 4.3, same client,
# alternating runs; perf stat of each nfsx server for context switches and
# CPU per WRITE.
#   OLD=/path/to/previous/nfsx wakeups.sh OUTDIR [RUNS] [DURATION]
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; DUR=${3:-5s}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=previous nfsx binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-wake; rm -rf $W; mkdir -p $W/ex1 $W/st1 $W/ex2 $W/st2
printf 'portmap_port = 0\n' > $W/c.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$OLD" serve $W/ex1 --listen 127.0.0.1:12060 --state-dir $W/st1 --config $W/c.toml --metrics 127.0.0.1:12061 --log warn & p1=$!
"$NFSX" serve $W/ex2 --listen 127.0.0.1:12070 --state-dir $W/st2 --config $W/c.toml --metrics 127.0.0.1:12071 --log warn & p2=$!
trap 'kill $p1 $p2 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
perf stat -e task-clock,context-switches -p $p1 -o "$OUT/old.server.perf" & s1=$!
perf stat -e task-clock,context-switches -p $p2 -o "$OUT/new.server.perf" & s2=$!
"$NFSX" bench data --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration "$DUR" --runs "$RUNS" --quiet \
  --target "nfs://127.0.0.1:12060$W/ex1?version=3" --target "nfs://127.0.0.1:12070$W/ex2?version=3" \
  --target "nfs://127.0.0.1/export?version=3" --json "$OUT/wakeups-sync-8k-16t.json" > "$OUT/wakeups-sync-8k-16t.txt" 2>&1
kill -INT $s1 $s2; sleep 1
for p in 12061 12071; do
  echo "== nfsx :$((p - 1))"
  curl -s 127.0.0.1:$p/metrics | grep -E '^nfsx_backend_(flush|flushes)|^nfsx_requests_total\{proc="nfs3.WRITE"'
done > "$OUT/wakeups-flushes.txt"

#!/bin/bash
# The allocator settings at their defaults (malloc_mmap_threshold 8 MiB,
# malloc_trim_threshold 16 MiB) and at 0 (glibc's own dynamic choice), same
# build, and NFS-Ganesha 4.3, alternating runs, same client: the rows whose
# records are 1 MiB, and 4 KiB random writes to see small records lost
# nothing. Page faults of each nfsx server over the whole script in faults-*.txt.
#   ab.sh OUTDIR [RUNS]      (VERS=4.1 for NFSv4.1)
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-7}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-malloc; rm -rf $W; mkdir -p $W/on $W/off $W/st-on $W/st-off
printf 'portmap_port = 0\n' > $W/on.toml
printf 'portmap_port = 0\nmalloc_mmap_threshold = 0\nmalloc_trim_threshold = 0\n' > $W/off.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/on --listen 127.0.0.1:12070 --state-dir $W/st-on --config $W/on.toml --log warn & a=$!
"$NFSX" serve $W/off --listen 127.0.0.1:12072 --state-dir $W/st-off --config $W/off.toml --log warn & b=$!
trap 'kill $a $b 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
V=${VERS:-3}
T=(--target "nfs://127.0.0.1:12070$W/on?version=$V" --target "nfs://127.0.0.1:12072$W/off?version=$V" --target "nfs://127.0.0.1/export?version=$V")
C=(--runs "$RUNS" --quiet "${T[@]}")
run() { name=$1; shift; "$NFSX" bench data "$@" "${C[@]}" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1; }
run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --duration 5s --direct
run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration 5s --no-data-cache
run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --duration 5s --direct
for p in a b; do
  pid=${!p}; name=$([ $p = a ] && echo on || echo off)
  awk '{print "minor faults:", $10, "major faults:", $12}' /proc/$pid/stat > "$OUT/faults-$name.txt"
  grep -E "VmHWM|VmRSS" /proc/$pid/status >> "$OUT/faults-$name.txt"
done
python3 "$REPO/bench/results/20261127-direct-writes/summary.py" "$OUT"

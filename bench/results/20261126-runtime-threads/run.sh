#!/bin/bash
# The nfsx-client rows with the client's runtime at two threads (what
# `nfsx bench` used on this 2-core machine before `runtime_threads`) and at
# the default (one per connection: one here), each against nfsx and
# NFS-Ganesha 4.3 side by side, alternating runs. Reads with the client's
# data cache off (--no-data-cache: every read a READ).
#   run.sh OUTDIR [FILES] [RUNS]
set -u
OUT=${1:?OUTDIR}; FILES=${2:-50000}; RUNS=${3:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-rtthreads; rm -rf $W; mkdir -p $W/ex $W/st
# sync_metadata = false only shortens the untimed creation of the trees,
# which list, stat and the reads do not touch; the stable-write row flushes
# file data either way.
printf 'portmap_port = 0\n[localfs]\nsync_metadata = false\n' > $W/c.toml
printf 'runtime_threads = 2\n' > $W/two.toml
printf 'runtime_threads = 0\n' > $W/default.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/ex --listen 127.0.0.1:12060 --state-dir $W/st --config $W/c.toml --metrics 127.0.0.1:12061 --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
T=(--target "nfs://127.0.0.1:12060$W/ex?version=3" --target "nfs://127.0.0.1/export?version=3")
for c in two default; do
  C=(--client-config $W/$c.toml --runs "$RUNS" --quiet "${T[@]}")
  "$NFSX" bench data --mode rand-read --io-size 4KiB --threads 16 --size 64MiB --duration 5s --no-data-cache "${C[@]}" \
    --json "$OUT/$c-rand-read-4k-16t.json" > "$OUT/$c-rand-read-4k-16t.txt" 2>&1
  "$NFSX" bench data --mode rand-read --io-size 4KiB --threads 1 --size 16MiB --duration 3s --no-data-cache "${C[@]}" \
    --json "$OUT/$c-rand-read-4k-1t.json" > "$OUT/$c-rand-read-4k-1t.txt" 2>&1
  "$NFSX" bench data --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration 5s --no-data-cache "${C[@]}" \
    --json "$OUT/$c-seq-read-1m-4t.json" > "$OUT/$c-seq-read-1m-4t.txt" 2>&1
  "$NFSX" bench data --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --duration 5s "${C[@]}" \
    --json "$OUT/$c-rand-write-4k-16t.json" > "$OUT/$c-rand-write-4k-16t.txt" 2>&1
  "$NFSX" bench data --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --duration 5s "${C[@]}" \
    --json "$OUT/$c-seq-write-1m-4t.json" > "$OUT/$c-seq-write-1m-4t.txt" 2>&1
  "$NFSX" bench data --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration 5s "${C[@]}" \
    --json "$OUT/$c-sync-write-8k-16t.json" > "$OUT/$c-sync-write-8k-16t.txt" 2>&1
  "$NFSX" bench metadata --op list,stat --files "$FILES" --client-config $W/$c.toml --runs 3 --quiet "${T[@]}" \
    --json "$OUT/$c-liststat.json" > "$OUT/$c-liststat.txt" 2>&1
done
python3 "$HERE/summary.py" "$OUT"

#!/bin/bash
# nfsx's client with `drive_from_caller` on (default: a lone calling thread
# drives the client's runtime itself) and off (a runtime thread reads every
# reply and wakes the caller), each against nfsx and NFS-Ganesha 4.3 in the
# same invocation. Client settings are per invocation, so the two settings
# alternate invocation by invocation, one run of each target per invocation.
#   ab.sh OUTDIR [RUNS] [FILES]
# Rows: list and stat of a FILES-file tree (1 thread), 4 KiB random reads
# and 1 MiB sequential reads with 1 thread and the data cache off. NFSv3.
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-3}; FILES=${3:-50000}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-caller-driven; rm -rf $W; mkdir -p $W/ex $W/st
# sync_metadata = false only shortens the untimed creation of the trees.
printf 'portmap_port = 0\n[localfs]\nsync_metadata = false\n' > $W/server.toml
printf 'drive_from_caller = true\n' > $W/on.toml
printf 'drive_from_caller = false\n' > $W/off.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/ex --listen 127.0.0.1:12080 --state-dir $W/st --config $W/server.toml --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
T=(--target "nfs://127.0.0.1:12080$W/ex?version=3" --target "nfs://127.0.0.1/export?version=3")
for i in $(seq 1 "$RUNS"); do
  for mode in on off; do
    C=(--client-config $W/$mode.toml --runs 1 --quiet "${T[@]}")
    "$NFSX" bench metadata --op list,stat --files "$FILES" "${C[@]}" \
      --json "$OUT/$mode-liststat-$i.json" > "$OUT/$mode-liststat-$i.txt" 2>&1
    "$NFSX" bench data --mode rand-read --io-size 4KiB --threads 1 --size 16MiB --duration 5s --no-data-cache "${C[@]}" \
      --json "$OUT/$mode-rand-read-4k-1t-$i.json" > "$OUT/$mode-rand-read-4k-1t-$i.txt" 2>&1
    "$NFSX" bench data --mode seq-read --io-size 1MiB --threads 1 --size 256MiB --duration 5s --no-data-cache "${C[@]}" \
      --json "$OUT/$mode-seq-read-1m-1t-$i.json" > "$OUT/$mode-seq-read-1m-1t-$i.txt" 2>&1
  done
done
python3 "$HERE/summary.py" "$OUT"

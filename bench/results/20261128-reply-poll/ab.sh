#!/bin/bash
# nfsx's client with its lone caller polling the socket for each reply
# (`reply_poll_us`) for each budget in POLLS (0: sleep at once), each
# against nfsx and NFS-Ganesha 4.3 in the same invocation. Client settings
# are per invocation, so the budgets alternate invocation by invocation,
# one run of each target per invocation.
#   [POLLS="0 100"] [VERS=3] ab.sh OUTDIR [RUNS] [FILES]
# Rows: list and stat of a FILES-file tree (1 thread), 4 KiB random reads
# and 1 MiB sequential reads with 1 thread and the data cache off.
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-3}; FILES=${3:-20000}
POLLS=${POLLS:-0 100}; VERS=${VERS:-3}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-reply-poll; rm -rf $W; mkdir -p $W/st
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports; mkdir -p $W/ex
printf 'portmap_port = 0\n' > $W/server.toml
for p in $POLLS; do printf 'reply_poll_us = %s\n' "$p" > $W/poll$p.toml; done
cd "$REPO"
PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve --exports $W/exports --listen 127.0.0.1:12080 --state-dir $W/st --config $W/server.toml --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
T=(--target "nfs://127.0.0.1:12080$W/ex?version=$VERS" --target "nfs://127.0.0.1/export?version=$VERS")
for i in $(seq 1 "$RUNS"); do
  for p in $POLLS; do
    C=(--client-config $W/poll$p.toml --runs 1 --quiet "${T[@]}")
    "$NFSX" bench metadata --op list,stat --files "$FILES" "${C[@]}" \
      --json "$OUT/poll$p-liststat-$i.json" > "$OUT/poll$p-liststat-$i.txt" 2>&1
    [ -n "${LISTSTAT_ONLY:-}" ] && continue
    "$NFSX" bench data --mode rand-read --io-size 4KiB --threads 1 --size 16MiB --duration 5s --no-data-cache "${C[@]}" \
      --json "$OUT/poll$p-rand-read-4k-1t-$i.json" > "$OUT/poll$p-rand-read-4k-1t-$i.txt" 2>&1
    "$NFSX" bench data --mode seq-read --io-size 1MiB --threads 1 --size 256MiB --duration 5s --no-data-cache "${C[@]}" \
      --json "$OUT/poll$p-seq-read-1m-1t-$i.json" > "$OUT/poll$p-seq-read-1m-1t-$i.txt" 2>&1
  done
done

#!/bin/bash
# Two builds of nfsx's client (bench), each against nfsx (this build's
# server) and NFS-Ganesha 4.3 in the same invocation, the clients
# alternating invocation by invocation: the 1 MiB rows at 4 threads.
#   OLD=/path/to/older/nfsx [NEW=target/release/nfsx] [VERS=3] clients.sh OUTDIR [RUNS]
# clients-summary.py OUTDIR prints the medians and the per-run ratios.
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NEW=${NEW:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=path to the older nfsx}
V=${VERS:-3}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-never-zeroed-c; rm -rf $W; mkdir -p $W/ex $W/st
printf 'portmap_port = 0\n' > $W/server.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NEW" serve $W/ex --listen 127.0.0.1:12080 --state-dir $W/st --config $W/server.toml --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
T=(--target "nfs://127.0.0.1:12080$W/ex?version=$V" --target "nfs://127.0.0.1/export?version=$V")
for i in $(seq 1 "$RUNS"); do
  for c in old new; do
    [ $c = new ] && BIN=$NEW || BIN=$OLD
    "$BIN" bench data --mode seq-read --io-size 1MiB --threads 4 --no-data-cache --size 256MiB \
      --duration ${DURATION:-5s} --runs 1 --quiet "${T[@]}" --json "$OUT/$c-read-$i.json" > "$OUT/$c-read-$i.txt" 2>&1
    "$BIN" bench data --mode seq-write --io-size 1MiB --threads 4 --direct --size 256MiB \
      --duration ${DURATION:-5s} --runs 1 --quiet "${T[@]}" --json "$OUT/$c-write-$i.json" > "$OUT/$c-write-$i.txt" 2>&1
  done
done

#!/bin/bash
# serial_unstable_writes on (the default) and off, same build, and NFS-Ganesha
# 4.3, alternating runs, same client: the direct-write rows, and the stable
# 8 KiB writes (which are never chained) to see that group commit lost nothing.
#   chain.sh OUTDIR [RUNS]
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-7}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-chain; rm -rf $W; mkdir -p $W/on $W/off $W/st-on $W/st-off
printf 'portmap_port = 0\n' > $W/on.toml
printf 'portmap_port = 0\nserial_unstable_writes = false\n' > $W/off.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/on --listen 127.0.0.1:12060 --state-dir $W/st-on --config $W/on.toml --metrics 127.0.0.1:12061 --log warn & a=$!
"$NFSX" serve $W/off --listen 127.0.0.1:12062 --state-dir $W/st-off --config $W/off.toml --log warn & b=$!
trap 'kill $a $b 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
V=${VERS:-3}
T=(--target "nfs://127.0.0.1:12060$W/on?version=$V" --target "nfs://127.0.0.1:12062$W/off?version=$V" --target "nfs://127.0.0.1/export?version=$V")
C=(--runs "$RUNS" --quiet "${T[@]}")
run() { name=$1; shift; "$NFSX" bench data "$@" "${C[@]}" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1; }
run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --duration 5s --direct
run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --duration 5s --direct
run sync-write-8k-16t --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration 5s
curl -s http://127.0.0.1:12061/metrics | grep -E "^nfsx_requests_(worker|chained)_total" > "$OUT/metrics-on.txt"
python3 "$HERE/summary.py" "$OUT"

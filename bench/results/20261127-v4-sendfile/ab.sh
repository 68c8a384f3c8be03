#!/bin/bash
# NFSv4.1 READs sent from the page cache (the default, read_sendfile_min
# 64 KiB) against read_sendfile_min = 0 (every READ read into memory and
# written out, as NFSv4 READs were before), same build, and NFS-Ganesha 4.3,
# alternating runs, same client (nfsx's, data cache off).
#   ab.sh OUTDIR [RUNS]
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-7}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-v4sf; rm -rf $W; mkdir -p $W/on $W/off $W/st-on $W/st-off
printf 'portmap_port = 0\n' > $W/on.toml
printf 'portmap_port = 0\n[core]\nread_sendfile_min = 0\n' > $W/off.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/on --listen 127.0.0.1:12074 --state-dir $W/st-on --config $W/on.toml --log warn & a=$!
"$NFSX" serve $W/off --listen 127.0.0.1:12076 --state-dir $W/st-off --config $W/off.toml --log warn & b=$!
trap 'kill $a $b 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
V=${VERS:-4.1}
T=(--target "nfs://127.0.0.1:12074$W/on?version=$V" --target "nfs://127.0.0.1:12076$W/off?version=$V" --target "nfs://127.0.0.1/export?version=$V")
C=(--runs "$RUNS" --quiet "${T[@]}")
run() { name=$1; shift; "$NFSX" bench data "$@" "${C[@]}" --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1; }
run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration 5s --no-data-cache
run seq-read-1m-1t --mode seq-read --io-size 1MiB --threads 1 --size 256MiB --duration 5s --no-data-cache
python3 "$REPO/bench/results/20261127-direct-writes/summary.py" "$OUT"

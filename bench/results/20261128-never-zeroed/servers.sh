#!/bin/bash
# Two nfsx server builds and NFS-Ganesha 4.3 side by side, one client (this
# build's) for all three, alternating runs within each invocation: the
# data rows whose READs and WRITEs are 1 MiB, and the 16-thread 4 KiB rows.
#   OLD=/path/to/older/nfsx [NEW=target/release/nfsx] [VERS=3] servers.sh OUTDIR [RUNS]
#   ROWS="stable-8k-16t" runs stable 8 KiB writes from 16 threads to one file
#   instead (--sync; ../20261128-write-pieces/stable/)
# ../20261127-direct-writes/summary.py OUTDIR prints medians and ratios
# (targets: this build, the build before, Ganesha).
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NEW=${NEW:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=path to the older nfsx}
V=${VERS:-3}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-never-zeroed; rm -rf $W; mkdir -p $W/new $W/old $W/st-new $W/st-old
printf 'portmap_port = 0\n' > $W/server.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NEW" serve $W/new --listen 127.0.0.1:12070 --state-dir $W/st-new --config $W/server.toml --log warn & a=$!
"$OLD" serve $W/old --listen 127.0.0.1:12072 --state-dir $W/st-old --config $W/server.toml --log warn & b=$!
trap 'kill $a $b 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
T=(--target "nfs://127.0.0.1:12070$W/new?version=$V" --target "nfs://127.0.0.1:12072$W/old?version=$V"
  --target "nfs://127.0.0.1/export?version=$V")
run() {
  local name=$1; shift
  "$NEW" bench data "$@" --duration ${DURATION:-5s} --runs "$RUNS" --quiet "${T[@]}" \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
}
row() {
  case " ${ROWS:-seq-read-1m-1t seq-read-1m-4t seq-write-1m-4t rand-write-4k-16t rand-read-4k-16t} " in
    *" $1 "*) run "$@" ;;
  esac
}
row seq-read-1m-1t --mode seq-read --io-size 1MiB --threads 1 --no-data-cache --size 256MiB
row seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --no-data-cache --size 256MiB
row seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --direct --size 256MiB
row rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --direct --size 64MiB
row rand-read-4k-16t --mode rand-read --io-size 4KiB --threads 16 --no-data-cache --size 64MiB
row stable-8k-16t --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB

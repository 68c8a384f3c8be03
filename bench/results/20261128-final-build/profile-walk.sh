#!/bin/bash
# Where a listing's time goes in nfsx's client: `nfsx bench metadata --op
# OP --files 50000` (NFSv3, one thread) against one server on tmpfs (nfsx
# at its defaults but portmap_port = 0, or NFS-Ganesha 4.3 by
# scripts/ganesha.sh) under `perf record --call-graph dwarf`, then the
# samples of the timed walk summarised by walk-profile.py.
#   profile-walk.sh OUTDIR [list|stat] [nfsx|ganesha]
set -eu
OUT=${1:?OUTDIR}; OP=${2:-list}; SERVER=${3:-nfsx}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-walk-prof; rm -rf $W; mkdir -p $W/ex $W/st
if [ "$SERVER" = ganesha ]; then
  G() { (cd "$REPO" && PEER_DIR=$W/g GANESHA_DELEGATIONS=none scripts/ganesha.sh "$1" > /dev/null 2>&1); }
  G start; trap 'G stop; rm -rf $W' EXIT
  URL="nfs://127.0.0.1/export?version=3"
else
  printf 'portmap_port = 0\n' > $W/c.toml
  "$NFSX" serve $W/ex --listen 127.0.0.1:12090 --state-dir $W/st --config $W/c.toml --log warn & np=$!
  trap 'kill $np 2>/dev/null; rm -rf $W' EXIT
  URL="nfs://127.0.0.1:12090$W/ex?version=3"
fi
sleep 1
perf record -o "$OUT/perf.data" --call-graph dwarf,32768 -F 997 -- \
  "$NFSX" bench metadata --op "$OP" --files 50000 --runs 1 --quiet --target "$URL" > "$OUT/bench-$OP-$SERVER.txt" 2>&1
perf script -i "$OUT/perf.data" -F comm,tid,time,ip,sym 2>/dev/null | python3 "$HERE/walk-profile.py" > "$OUT/profile-$OP-$SERVER.txt"
rm -f "$OUT/perf.data"
cat "$OUT/profile-$OP-$SERVER.txt"

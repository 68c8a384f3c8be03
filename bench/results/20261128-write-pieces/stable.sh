#!/bin/bash
# Stable 8 KiB writes from 16 threads to one file (nfsx bench data --sync),
# this build against the build before WRITEs went to ext4 in pieces and
# NFS-Ganesha 4.3, same client (this build's), alternating runs, ext4.
#   OLD=/path/to/older/nfsx stable.sh OUTDIR [RUNS]      VERS=3 (default) or 4.1
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NEW=${NEW:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=path to the older nfsx}
V=${VERS:-3}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-write-pieces; rm -rf $W; mkdir -p $W/new $W/old $W/st-new $W/st-old
printf 'portmap_port = 0\n' > $W/server.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NEW" serve $W/new --listen 127.0.0.1:12070 --state-dir $W/st-new --config $W/server.toml --log warn & a=$!
"$OLD" serve $W/old --listen 127.0.0.1:12072 --state-dir $W/st-old --config $W/server.toml --log warn & b=$!
trap 'kill $a $b 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
"$NEW" bench data --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration ${DURATION:-5s} \
  --runs "$RUNS" --quiet --target "nfs://127.0.0.1:12070$W/new?version=$V" \
  --target "nfs://127.0.0.1:12072$W/old?version=$V" --target "nfs://127.0.0.1/export?version=$V" \
  --json "$OUT/stable-8k-16t.json" > "$OUT/stable-8k-16t.txt" 2>&1

#!/bin/bash
# The nfsx-client read rows with the client's data cache and readahead off
# (no-data-cache.toml), 5 s of reads per run, 5 alternating runs, nfsx vs
# NFS-Ganesha 4.3, NFSv3 and NFSv4.1. Writes still go through the client's
# write-behind cache, as the random-write row always did.
set -u
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
OUT=${OUT:-$HERE}
W=/var/tmp/nxbn; rm -rf $W; mkdir -p $W/ex $W/st; printf 'portmap_port = 0\n' > $W/c.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/ex --listen 127.0.0.1:12160 --state-dir $W/st --config $W/c.toml --log warn & sp=$!
trap 'kill $sp; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
for v in 3 4.1; do
  b() { "$NFSX" bench data --runs 5 --duration 5s --quiet --client-config "$HERE/no-data-cache.toml" \
          --target "nfs://127.0.0.1:12160$W/ex?version=$v" --target "nfs://127.0.0.1/export?version=$v" "$@"; }
  b --mode rand-read --io-size 4KiB --threads 16 --size 64MiB --json "$OUT/rand-read-4k-16t-v$v.json" > "$OUT/rand-read-4k-16t-v$v.txt" 2>&1
  b --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --json "$OUT/seq-read-1m-4t-v$v.json" > "$OUT/seq-read-1m-4t-v$v.txt" 2>&1
done

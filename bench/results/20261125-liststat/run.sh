#!/bin/bash
# list and stat of a 50,000-file tree, nfsx against NFS-Ganesha 4.3, same
# client, 3 alternating runs; nfsx with sync_metadata = false only to shorten
# the untimed creation of the tree. Prints nfsx's time per READDIRPLUS.
set -u
REPO=$(cd "$(dirname "$0")/../../.." && pwd); HERE=$(cd "$(dirname "$0")" && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
W=/var/tmp/exp; rm -rf $W; mkdir -p $W/ex1 $W/st1
printf 'portmap_port = 0\n[localfs]\nsync_metadata = false\n' > $W/c.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
$NFSX serve $W/ex1 --listen 127.0.0.1:12060 --state-dir $W/st1 --config $W/c.toml --metrics 127.0.0.1:12061 --log warn & p1=$!
sleep 1
$NFSX bench metadata --op list,stat --files 50000 --runs 3 --quiet --target "nfs://127.0.0.1:12060$W/ex1?version=3" \
  --target "nfs://127.0.0.1/export?version=3" --json $HERE/ls2.json > $HERE/ls2.txt 2>&1
curl -s 127.0.0.1:12061/metrics | awk '/duration_seconds_(sum|count)\{proc="nfs3.READDIRPLUS"/ {v[$1]=$2} END {for (k in v) print k, v[k]}'
kill $p1; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1

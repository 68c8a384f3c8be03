#!/bin/bash
# usage: liststat3.sh RUNS OUTPREFIX FILES
# three targets: new nfsx, old nfsx, Ganesha; nfsx with sync_metadata=false (setup only creates)
set -u
RUNS=${1:-3}; OUT=$2; FILES=${3:-50000}
NEW=${NFSX:-target/release/nfsx}; OLD=${OLD:?the build to compare with}
W=/var/tmp/exp; rm -rf $W; mkdir -p $W/ex1 $W/st1 $W/ex2 $W/st2
printf 'portmap_port = 0\n[localfs]\nsync_metadata = false\n' > $W/c.toml
cd "$(dirname "$0")/../../.."
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
$NEW serve $W/ex1 --listen 127.0.0.1:12060 --state-dir $W/st1 --config $W/c.toml --metrics 127.0.0.1:12061 --log warn & p1=$!
$OLD serve $W/ex2 --listen 127.0.0.1:12070 --state-dir $W/st2 --config $W/c.toml --metrics 127.0.0.1:12071 --log warn & p2=$!
sleep 1
$NEW bench metadata --op list,stat --files $FILES --runs $RUNS --quiet --target "nfs://127.0.0.1:12060$W/ex1?version=3" --target "nfs://127.0.0.1:12070$W/ex2?version=3" --target "nfs://127.0.0.1/export?version=3" --json $OUT.json > $OUT.txt 2>&1
curl -s 127.0.0.1:12061/metrics > $OUT.new.metrics
curl -s 127.0.0.1:12071/metrics > $OUT.old.metrics
kill $p1 $p2; wait $p1 $p2 2>/dev/null
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1

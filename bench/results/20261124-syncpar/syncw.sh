#!/bin/bash
# stable 8 KiB writes, 16 threads: nfsx parallelism 1, nfsx parallelism P, Ganesha
set -u
RUNS=${1:-5}; OUT=$2; P=${3:-4}
NFSX=${NFSX:-target/release/nfsx}
W=/var/tmp/exp; rm -rf $W; mkdir -p $W/ex1 $W/st1 $W/ex2 $W/st2
printf 'portmap_port = 0\n' > $W/c1.toml
printf 'portmap_port = 0\n[localfs]\nflush_parallelism = %s\n' $P > $W/c2.toml
cd "$(dirname "$0")/../../.."
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
$NFSX serve $W/ex1 --listen 127.0.0.1:12060 --state-dir $W/st1 --config $W/c1.toml --metrics 127.0.0.1:12061 --log warn & p1=$!
$NFSX serve $W/ex2 --listen 127.0.0.1:12070 --state-dir $W/st2 --config $W/c2.toml --metrics 127.0.0.1:12071 --log warn & p2=$!
sleep 1
$NFSX bench data --mode seq-write --io-size 8KiB --threads 16 --sync --size 16MiB --runs $RUNS --quiet \
  --target "nfs://127.0.0.1:12060$W/ex1?version=3" --target "nfs://127.0.0.1:12070$W/ex2?version=3" --target "nfs://127.0.0.1/export?version=3" --json $OUT.json > $OUT.txt 2>&1
curl -s 127.0.0.1:12061/metrics | grep -E '^nfsx_backend_flush' > $OUT.p1.flushes
curl -s 127.0.0.1:12071/metrics | grep -E '^nfsx_backend_flush' > $OUT.pP.flushes
kill $p1 $p2; wait $p1 $p2 2>/dev/null
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1

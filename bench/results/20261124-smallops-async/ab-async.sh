#!/bin/bash
# usage: [BASE=/dev/shm] ab-async.sh RUNS N [NFSX_EXTRA_TOML]
# BASE: where both exports live [/var/tmp]; /dev/shm puts them on tmpfs (CPU only)
# SMALLOPS: absolute path of ../shared/peers/smallops.c built with cc -O2 -o smallops smallops.c -lnfs; NFSX: the nfsx binary
set -u
RUNS=${1:-3}; N=${2:-2000}; EXTRA=${3:-}
NFSX=${NFSX:-target/release/nfsx}
BASE=${BASE:-/var/tmp}
W=$BASE/nfsx-exp; rm -rf $W; mkdir -p $W/ex $W/st
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports
printf 'portmap_port = 0\n%b\n' "$EXTRA" > $W/c.toml
cd "$(dirname "$0")/../../.."
PEER_DIR=$BASE/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
for r in $(seq $RUNS); do
  $NFSX serve --exports $W/exports --listen 127.0.0.1:12060 --state-dir $W/st --config $W/c.toml --metrics 127.0.0.1:12061 --log warn & p=$!
  sleep 1
  echo "nfsx run $r"; ${SMALLOPS:-./smallops} "nfs://127.0.0.1$W/ex?version=3&nfsport=12060&mountport=12060" $N
  curl -s 127.0.0.1:12061/metrics > $W/metrics.$r
  kill $p; wait $p 2>/dev/null
  sleep 2
  echo "ganesha run $r"; ${SMALLOPS:-./smallops} "nfs://127.0.0.1/export?version=3" $N
  sleep 2
done
PEER_DIR=$BASE/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1

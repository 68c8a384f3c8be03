#!/bin/bash
# Two nfsx server builds and NFS-Ganesha 4.3 side by side, the same nfsx
# client for all three, list and stat of a FILES-file tree (1 thread),
# targets taking turns within each invocation, RUNS invocations.
#   OLD=/path/to/older/nfsx [VERS=3] servers.sh OUTDIR [RUNS] [FILES]
# summary: servers.py OUTDIR
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; FILES=${3:-50000}; VERS=${VERS:-3}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=path to the older nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-servers; rm -rf $W; mkdir -p $W/new/st $W/new/ex $W/old/st $W/old/ex
for s in new old; do printf "$W/$s/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/$s/exports; done
printf 'portmap_port = 0\n' > $W/server.toml
cd "$REPO"
PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve --exports $W/new/exports --listen 127.0.0.1:12080 --state-dir $W/new/st --config $W/server.toml --log warn & a=$!
"$OLD" serve --exports $W/old/exports --listen 127.0.0.1:12081 --state-dir $W/old/st --config $W/server.toml --log warn & b=$!
trap 'kill $a $b 2>/dev/null; PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
for i in $(seq 1 "$RUNS"); do
  "$NFSX" bench metadata --op list,stat --files "$FILES" --runs 1 --quiet \
    --target "nfs://127.0.0.1:12080$W/new/ex?version=$VERS" \
    --target "nfs://127.0.0.1:12081$W/old/ex?version=$VERS" \
    --target "nfs://127.0.0.1/export?version=$VERS" \
    --json "$OUT/liststat-$i.json" > "$OUT/liststat-$i.txt" 2>&1
done

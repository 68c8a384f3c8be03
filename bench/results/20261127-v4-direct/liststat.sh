#!/bin/bash
# list and stat of a FILES-file tree through nfsx's client (nfsx bench
# metadata, 1 thread), NFSv3 and NFSv4.1: this build, the build before
# (OLD) and NFS-Ganesha 4.3, alternating, `async` exports on tmpfs.
#   OLD=/path/to/previous/nfsx liststat.sh OUTDIR [RUNS] [FILES]
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-3}; FILES=${3:-20000}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=previous nfsx binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-v4-liststat; rm -rf $W; mkdir -p $W/new/ex $W/new/st $W/old/ex $W/old/st
for b in new old; do
  printf "$W/$b/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/$b/exports
  printf 'portmap_port = 0\n' > $W/$b/c.toml
done
cd "$REPO"
PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve --exports $W/new/exports --listen 127.0.0.1:12080 --state-dir $W/new/st --config $W/new/c.toml --log warn & p1=$!
"$OLD" serve --exports $W/old/exports --listen 127.0.0.1:12090 --state-dir $W/old/st --config $W/old/c.toml --log warn & p2=$!
trap 'kill $p1 $p2 2>/dev/null; PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
for v in 4.1 3; do
  "$NFSX" bench metadata --op list,stat --files "$FILES" --runs "$RUNS" --quiet \
    --target "nfs://127.0.0.1:12080$W/new/ex?version=$v" --target "nfs://127.0.0.1:12090$W/old/ex?version=$v" \
    --target "nfs://127.0.0.1/export?version=$v" --json "$OUT/v$v-liststat.json" > "$OUT/v$v-liststat.txt" 2>&1
done

#!/bin/bash
# Requests that may block run on the connection's thread when the client
# has one at a time (lone_requests_in_place_after): the build before
# (OLD), this build and NFS-Ganesha 4.3, alternating runs.
#  1. smallops (libnfs, one request in flight: create, list, stat, unlink)
#     on an `async` export on tmpfs, where a request costs CPU only;
#  2. with nfsx's client, NFSv4.1 creations at 1 and 16 threads and
#     stable 8 KiB writes from 16 threads (many in flight: must not lose).
#   OLD=/path/to/previous/nfsx SMALLOPS=/path/to/smallops run.sh OUTDIR [RUNS]
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NEW=${NEW:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=previous nfsx binary}; SMALLOPS=${SMALLOPS:?smallops binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-in-place; rm -rf $W; mkdir -p $W/old/ex $W/old/st $W/new/ex $W/new/st
for b in old new; do
  printf "$W/$b/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/$b/exports
  printf 'portmap_port = 0\n' > $W/$b/c.toml
done
cd "$REPO"
PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$OLD" serve --exports $W/old/exports --listen 127.0.0.1:12080 --state-dir $W/old/st --config $W/old/c.toml --metrics 127.0.0.1:12081 --log warn & p1=$!
"$NEW" serve --exports $W/new/exports --listen 127.0.0.1:12090 --state-dir $W/new/st --config $W/new/c.toml --metrics 127.0.0.1:12091 --log warn & p2=$!
trap 'kill $p1 $p2 2>/dev/null; PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
for r in $(seq "$RUNS"); do
  for t in old new ganesha; do
    case $t in
      old) url="nfs://127.0.0.1$W/old/ex?version=3&nfsport=12080&mountport=12080" ;;
      new) url="nfs://127.0.0.1$W/new/ex?version=3&nfsport=12090&mountport=12090" ;;
      ganesha) url="nfs://127.0.0.1/export?version=3" ;;
    esac
    echo "$t run $r" >> "$OUT/smallops.txt"; "$SMALLOPS" "$url" 2000 >> "$OUT/smallops.txt"
  done
done
curl -s 127.0.0.1:12091/metrics | grep -E "^nfsx_requests_(inline|worker|in_place)_total" > "$OUT/new-metrics.txt"
T=(--target "nfs://127.0.0.1:12080$W/old/ex?version=4.1" --target "nfs://127.0.0.1:12090$W/new/ex?version=4.1" --target "nfs://127.0.0.1/export?version=4.1")
"$NEW" bench metadata --op create --files 2000 --threads 1,16 --runs "$RUNS" --quiet "${T[@]}" --json "$OUT/nfs41-create.json" > "$OUT/nfs41-create.txt" 2>&1
T3=(--target "nfs://127.0.0.1:12080$W/old/ex?version=3" --target "nfs://127.0.0.1:12090$W/new/ex?version=3" --target "nfs://127.0.0.1/export?version=3")
"$NEW" bench data --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration 5s --runs "$RUNS" --quiet "${T3[@]}" --json "$OUT/sync-write.json" > "$OUT/sync-write.txt" 2>&1
awk '/run/ {b=$1} /^(create|stat|unlink)/ {print b, $1, $(NF-1)}' "$OUT/smallops.txt" | sort -k1,2 -k3n | awk '{k=$1" "$2; a[k]=a[k]" "$3} END {for (k in a) print k " us/op:" a[k]}' | sort

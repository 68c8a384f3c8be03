#!/bin/bash
# `lone_poll_us`: this build at its default (50: a lone client's next
# request is polled for before the connection's thread sleeps) and with
# `lone_poll_us = 0`, beside NFS-Ganesha 4.3, alternating runs.
#  1. smallops (libnfs, one request in flight: create, list, stat, unlink)
#     on an `async` export on tmpfs, where a request costs CPU only;
#  2. nfsx bench, NFSv3 and NFSv4.1, 4 KiB random reads at 1 thread (one
#     in flight) and 16 threads (many in flight: polling must not cost);
#  3. nfsx bench metadata list and stat of a FILES-file tree, 1 thread.
#   SMALLOPS=/path/to/smallops ab.sh OUTDIR [RUNS] [FILES]
#   (cc -O2 -o smallops ../shared/peers/smallops.c -lnfs)
# OFF_SETTING (default `lone_poll_us = 0`) is what the "off" server's
# settings file says instead; ROWS (default "smallops data liststat")
# picks the rows, e.g. for max_requests_in_place_direct:
#   OFF_SETTING='max_requests_in_place_direct = 0' ROWS="smallops liststat" ab.sh OUT 5
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; FILES=${3:-20000}
OFF_SETTING=${OFF_SETTING:-lone_poll_us = 0}; ROWS=${ROWS:-smallops data liststat}
row() { [[ " $ROWS " == *" $1 "* ]]; }
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; SMALLOPS=${SMALLOPS:?smallops binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-lone-poll; rm -rf $W; mkdir -p $W/on/ex $W/on/st $W/off/ex $W/off/st
for b in on off; do
  printf "$W/$b/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/$b/exports
done
printf 'portmap_port = 0\n' > $W/on/c.toml
printf 'portmap_port = 0\n%s\n' "$OFF_SETTING" > $W/off/c.toml
cd "$REPO"
PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve --exports $W/on/exports --listen 127.0.0.1:12080 --state-dir $W/on/st --config $W/on/c.toml --metrics 127.0.0.1:12081 --log warn & p1=$!
"$NFSX" serve --exports $W/off/exports --listen 127.0.0.1:12090 --state-dir $W/off/st --config $W/off/c.toml --log warn & p2=$!
trap 'kill $p1 $p2 2>/dev/null; PEER_DIR=/dev/shm/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
row smallops && for r in $(seq "$RUNS"); do
  for t in on off ganesha; do
    case $t in
      on) url="nfs://127.0.0.1$W/on/ex?version=3&nfsport=12080&mountport=12080" ;;
      off) url="nfs://127.0.0.1$W/off/ex?version=3&nfsport=12090&mountport=12090" ;;
      ganesha) url="nfs://127.0.0.1/export?version=3" ;;
    esac
    echo "$t run $r" >> "$OUT/smallops.txt"; "$SMALLOPS" "$url" 2000 >> "$OUT/smallops.txt"
  done
done
row data && for v in 3 4.1; do
  T=(--target "nfs://127.0.0.1:12080$W/on/ex?version=$v" --target "nfs://127.0.0.1:12090$W/off/ex?version=$v"
    --target "nfs://127.0.0.1/export?version=$v")
  for th in 1 16; do
    "$NFSX" bench data --mode rand-read --io-size 4KiB --threads $th --size 16MiB --duration 5s --no-data-cache \
      --runs "$RUNS" --quiet "${T[@]}" --json "$OUT/v$v-rand-read-4k-${th}t.json" > "$OUT/v$v-rand-read-4k-${th}t.txt" 2>&1
  done
done
T=(--target "nfs://127.0.0.1:12080$W/on/ex?version=3" --target "nfs://127.0.0.1:12090$W/off/ex?version=3"
  --target "nfs://127.0.0.1/export?version=3")
row liststat && "$NFSX" bench metadata --op list,stat --files "$FILES" --runs 3 --quiet "${T[@]}" \
  --json "$OUT/v3-liststat.json" > "$OUT/v3-liststat.txt" 2>&1
curl -s 127.0.0.1:12081/metrics | grep -E "^nfsx_(lone_polls|requests_(inline|worker|in_place))" > "$OUT/on-metrics.txt"
row smallops || exit 0
awk '/run/ {b=$1} /^(create|stat|unlink|readdir)/ {print b, $1, $(NF-1)}' "$OUT/smallops.txt" | sort -k1,2 -k3n \
  | awk '{k=$1" "$2; a[k]=a[k]" "$3} END {for (k in a) print k " us/op:" a[k]}' | sort > "$OUT/smallops-summary.txt"
cat "$OUT/smallops-summary.txt"

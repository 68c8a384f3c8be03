#!/bin/bash
# Two nfsx builds alternating, one smallops run each (2,000 creations,
# a listing, stats, removals, one request in flight) on an `async` export
# on tmpfs, where a request costs CPU only; then `strace -f -c` of each
# build over one more run.
#   OLD=/path/to/previous/nfsx SMALLOPS=/path/to/smallops run.sh OUTDIR [RUNS] [FILES]
# smallops: cc -O2 -o smallops ../shared/peers/smallops.c -lnfs
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; N=${3:-2000}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NEW=${NEW:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=previous nfsx binary}; SMALLOPS=${SMALLOPS:?smallops binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-lookup-create; rm -rf $W; mkdir -p $W/ex $W/st
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports
printf 'portmap_port = 0\n' > $W/c.toml
URL="nfs://127.0.0.1$W/ex?version=3&nfsport=12080&mountport=12080"
serve() { rm -rf $W/ex/* $W/st; mkdir -p $W/st; "$1" serve --exports $W/exports --listen 127.0.0.1:12080 --state-dir $W/st --config $W/c.toml --log warn & sp=$!; sleep 0.7; }
for r in $(seq "$RUNS"); do
  for b in old new; do
    bin=$NEW; [ $b = old ] && bin=$OLD
    serve "$bin"
    echo "$b run $r" >> "$OUT/smallops.txt"; "$SMALLOPS" "$URL" "$N" >> "$OUT/smallops.txt"
    kill $sp; wait $sp 2>/dev/null
  done
done
for b in old new; do
  bin=$NEW; [ $b = old ] && bin=$OLD
  serve "$bin"
  "$SMALLOPS" "$URL" "$N" > /dev/null
  strace -f -c -p $sp -o "$OUT/strace-$b.txt" & st=$!; sleep 1
  "$SMALLOPS" "$URL" "$N" > /dev/null
  kill $st; sleep 1; kill $sp; wait $sp 2>/dev/null
done
awk '/run/ {b=$1} /^create/ {print b, "create us/op", $(NF-1)}' "$OUT/smallops.txt" | sort | awk '{a[$1]=a[$1] " " $4} END {for (k in a) print k ":" a[k]}'

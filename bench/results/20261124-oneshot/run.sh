#!/bin/bash
# File creation over NFSv4.1 (and NFSv3) through nfsx's client: the build
# before the one-compound create+write+close (OLD) against this one, same
# server, alternating. usage: OLD=/path/to/old/nfsx run.sh OUTPREFIX [RUNS]
set -u
OUT=$1; RUNS=${2:-5}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?the build to compare with}
W=/var/tmp/os; rm -rf $W; mkdir -p $W/ex $W/st
printf 'portmap_port = 0\n' > $W/c.toml
$NFSX serve $W/ex --listen 127.0.0.1:12114 --state-dir $W/st --config $W/c.toml --log warn & p=$!
sleep 1
S=nfs://127.0.0.1:12114$W/ex
for size in 0 4KiB; do
  for bin in old new; do
    B=$NFSX; [ $bin = old ] && B=$OLD
    $B bench metadata --op create --files 2000 --file-size $size --runs $RUNS --quiet \
      --target "$S?version=4.1" --target "$S?version=4.1&delegations=0" --target "$S?version=3" \
      --json $OUT-$bin-$size.json > $OUT-$bin-$size.txt 2>&1
  done
done
kill $p; wait $p 2>/dev/null

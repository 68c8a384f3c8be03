#!/bin/bash
# File creation against two nfsx servers side by side: OLD (the directory
# flushed after every created file) and this build (create_dir_flush =
# "auto": not on ext4/XFS/btrfs), same client, alternating; NFSv3 and 4.1.
# usage: OLD=/path/to/old/nfsx run.sh OUTPREFIX [RUNS] [FILES]
set -u
OUT=$1; RUNS=${2:-5}; FILES=${3:-2000}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?the build to compare with}
W=/var/tmp/cf; rm -rf $W; mkdir -p $W/old/ex $W/old/st $W/new/ex $W/new/st
printf 'portmap_port = 0\n' > $W/c.toml
$OLD serve $W/old/ex --listen 127.0.0.1:12117 --state-dir $W/old/st --config $W/c.toml --log warn & a=$!
$NFSX serve $W/new/ex --listen 127.0.0.1:12118 --state-dir $W/new/st --config $W/c.toml --log warn & b=$!
sleep 1
for v in 3 4.1; do
  $NFSX bench metadata --op create --files $FILES --threads 1 --runs $RUNS --quiet \
    --target "nfs://127.0.0.1:12117$W/old/ex?version=$v" --target "nfs://127.0.0.1:12118$W/new/ex?version=$v" \
    --json $OUT-v$v.json > $OUT-v$v.txt 2>&1
done
kill $a $b; wait $a $b 2>/dev/null

#!/bin/bash
# nfsx mount against the direct client and against the local disk
# usage: mountbench.sh OUTPREFIX [RUNS]   (needs /dev/fuse and fusermount3)
set -u
OUT=$1; RUNS=${2:-5}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
W=/var/tmp/mb; rm -rf $W; mkdir -p $W/ex $W/st $W/mnt $W/local
printf 'portmap_port = 0\n' > $W/c.toml
$NFSX serve $W/ex --listen 127.0.0.1:12110 --state-dir $W/st --config $W/c.toml --log warn & p=$!
sleep 1
$NFSX mount "nfs://127.0.0.1:12110$W/ex?version=3" $W/mnt --log warn & m=$!
for i in $(seq 50); do grep -q " $W/mnt " /proc/mounts && break; sleep 0.1; done
mkdir -p $W/mnt/bench
$NFSX bench data --mode seq-write,seq-read --io-size 1MiB --threads 1 --size 256MiB --runs $RUNS --quiet \
  --target "nfs://127.0.0.1:12110$W/ex?version=3" --target $W/mnt/bench --json $OUT-seq.json > $OUT-seq.txt 2>&1
$NFSX bench metadata --op stat --files 10000 --runs $RUNS --quiet \
  --target $W/local --target $W/mnt/bench --json $OUT-stat.json > $OUT-stat.txt 2>&1
$NFSX umount $W/mnt; wait $m
kill $p; wait $p 2>/dev/null

#!/bin/bash
# The find -exec ls -l walk (Lai) through nfsx mount, with the kernel keeping
# listings (default) and with an OPENDIR per listing (--opendir), against
# the local disk; alternating.
# usage: mountstat.sh OUTPREFIX [RUNS] [FILES]   (needs /dev/fuse and fusermount3)
set -u
OUT=$1; RUNS=${2:-5}; FILES=${3:-10000}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
W=/var/tmp/ms; rm -rf $W; mkdir -p $W/ex $W/st $W/m1 $W/m2 $W/local
printf 'portmap_port = 0\n' > $W/c.toml
$NFSX serve $W/ex --listen 127.0.0.1:12112 --state-dir $W/st --config $W/c.toml --log warn & p=$!
sleep 1
U="nfs://127.0.0.1:12112$W/ex?version=${VERSION:-3}"
$NFSX mount "$U" $W/m1 ${M1_ARGS:-} --log warn & m1=$!
$NFSX mount "$U" $W/m2 --opendir --log warn & m2=$!
for i in $(seq 50); do grep -q " $W/m2 " /proc/mounts && grep -q " $W/m1 " /proc/mounts && break; sleep 0.1; done
mkdir -p $W/m1/kept $W/m2/opendir
$NFSX bench metadata --op stat --files $FILES --runs $RUNS --quiet \
  ${WARM:-} --target $W/local --target $W/m1/kept --target $W/m2/opendir --json $OUT.json > $OUT.txt 2>&1
$NFSX umount $W/m1; $NFSX umount $W/m2; wait $m1 $m2
kill $p; wait $p 2>/dev/null

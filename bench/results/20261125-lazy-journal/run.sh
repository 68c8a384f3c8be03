#!/bin/bash
# File creation, one at a time, against three servers side by side, same
# client, alternating in every run: nfsx flushing the id journal with every
# namespace change (sync_id_journal = true, the behaviour before), nfsx at
# its defaults (the journal flushed every 256 records; a crash is recovered
# by a walk), and NFS-Ganesha 4.3 (FSAL_VFS) from scripts/ganesha.sh.
# All three exports sit on the same file system (/tmp, /var/tmp: the root).
# Then libnfs (crates/cli/tests/support/nfsops.c, as bench/vs-ganesha.sh's
# create row): 'mkdir /c-i' 'createmany /c-i FILES' per server per run, NFSv3,
# the three servers in turn in every run; OUTPREFIX-nfsops.csv.
# usage: run.sh OUTPREFIX [RUNS] [FILES]
set -u
OUT=$1; RUNS=${2:-5}; FILES=${3:-2000}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
W=/var/tmp/lj; rm -rf $W; mkdir -p $W/old/ex $W/old/st $W/new/ex $W/new/st
printf 'portmap_port = 0\n[localfs]\nsync_id_journal = true\n' > $W/old.toml
printf 'portmap_port = 0\n' > $W/new.toml
$NFSX serve $W/old/ex --listen 127.0.0.1:12117 --state-dir $W/old/st --config $W/old.toml --log warn & a=$!
$NFSX serve $W/new/ex --listen 127.0.0.1:12118 --state-dir $W/new/st --config $W/new.toml --log warn & b=$!
"$REPO/scripts/ganesha.sh" start >/dev/null
sleep 1
for v in 3 4.1; do
  $NFSX bench metadata --op create --files $FILES --threads 1 --runs $RUNS --quiet \
    --target "nfs://127.0.0.1:12117$W/old/ex?version=$v" --target "nfs://127.0.0.1:12118$W/new/ex?version=$v" \
    --target "nfs://127.0.0.1/export?version=$v" \
    --json $OUT-v$v.json > $OUT-v$v.txt 2>&1
done
cc -O2 -o $W/nfsops "$REPO/crates/cli/tests/support/nfsops.c" -lnfs
echo "run,server,files,seconds,creates_per_sec" > $OUT-nfsops.csv
for i in $(seq 1 $RUNS); do
  for s in "old nfs://127.0.0.1$W/old/ex?version=3&nfsport=12117&mountport=12117" \
           "new nfs://127.0.0.1$W/new/ex?version=3&nfsport=12118&mountport=12118" \
           "ganesha nfs://127.0.0.1/export?version=3"; do
    set -- $s
    sync; sleep 1
    out=$($W/nfsops "$2" "mkdir /c-$i" "createmany /c-$i $FILES")
    secs=$(sed -n 's/.*created=[0-9]* seconds=\([0-9.]*\).*/\1/p' <<<"$out")
    echo "$i,$1,$FILES,$secs,$(awk -v n=$FILES -v s=$secs 'BEGIN{printf "%.1f", n/s}')" >> $OUT-nfsops.csv
  done
done
kill $a $b; wait $a $b 2>/dev/null
"$REPO/scripts/ganesha.sh" stop >/dev/null

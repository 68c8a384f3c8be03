#!/bin/bash
# NFSv4 compounds run in place without a hand-off: the build before
# (OLD), this build and NFS-Ganesha 4.3, every export on tmpfs (CPU only).
#   OLD=/path/to/previous/nfsx SMALLOPS=/path/to/smallops run.sh OUTDIR [RUNS]
# 1. smallops over NFSv4.0 (libnfs), one request in flight, three servers
#    alternating (the one-statx script).
# 2. The NFSv4.1 driver's OPEN-create + CLOSE rate at 1 and 4 threads,
#    this build against the build before, then against Ganesha, both with
#    sync_metadata = false (Ganesha flushes nothing on creation).
# smallops: cc -O2 -o smallops ../shared/peers/smallops.c -lnfs
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
OLD=${OLD:?OLD=previous nfsx binary}; SMALLOPS=${SMALLOPS:?smallops binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$REPO"
NFSVERS=4 OLD=$OLD SMALLOPS=$SMALLOPS bench/results/20261126-one-statx/run.sh "$OUT/smallops-v4" "$RUNS" 2000

W=/dev/shm/nfsx-v4-direct; rm -rf $W; mkdir -p $W/ex $W/st
printf 'portmap_port = 0\n[localfs]\nsync_metadata = false\n' > $W/c.toml
NOSYNC=$'[localfs]\nsync_metadata = false'
bench() { # NAME PEER
  TMPDIR=/dev/shm NFS4_BENCH_PEER=$2 NFS4_BENCH_THREADS=1,4 NFS4_BENCH_RUNS=$RUNS \
    NFS4_BENCH_NFSX_CONFIG="$NOSYNC" NFS4_BENCH_JSON="$OUT/$1" \
    cargo test --release -p nfsx --test nfs4_bench -- --ignored --nocapture --test-threads 1 create \
    > "$OUT/$1.txt" 2>&1
}
"$OLD" serve $W/ex --listen 127.0.0.1:12090 --state-dir $W/st --config $W/c.toml --log warn & op=$!
sleep 1
bench vs-build-before 127.0.0.1:12090$W/ex
kill $op; wait $op 2>/dev/null
PEER_DIR=$W/ganesha GANESHA_DELEGATIONS=rw scripts/ganesha.sh start >/dev/null 2>&1 || { echo "ganesha did not start" >&2; exit 1; }
bench vs-ganesha 127.0.0.1:2049/export
PEER_DIR=$W/ganesha scripts/ganesha.sh stop >/dev/null 2>&1
grep -h -E '^\s*[0-9]+ \|' "$OUT"/vs-*.txt || tail -30 "$OUT"/vs-*.txt

#!/bin/bash
# Every row of the server request path's summary table, one build, one
# sitting: nfsx (this build, its defaults but portmap_port = 0) against
# NFS-Ganesha 4.3 (FSAL_VFS), same client, alternating runs.
#   SMALLOPS=/path/to/smallops run-all.sh OUTDIR [RUNS]
#   (cc -O2 -o smallops ../shared/peers/smallops.c -lnfs)
#   STEPS (default "libnfs smallops data create41 liststat") picks steps;
#   LISTSTAT_VERS (default "3 4.1") the versions of the last one,
#   LISTSTAT_RUNS (default 3) its runs.
# 1. libnfs: 1 GiB nfs-cp write + COMMIT, nfs-cat read, the wire's limit,
#    2,000 durable creations (bench/vs-ganesha.sh; exports on ext4).
# 2. smallops, one request in flight, `async` exports on tmpfs, NFSv3 and
#    NFSv4.0 (libnfs).
# 3. nfsx bench data, NFSv3 and NFSv4.1, exports on ext4: 4 KiB random
#    read and write at 16 threads, 1 MiB sequential read and write at 4,
#    stable 8 KiB writes at 16 threads to one file.
# 4. The NFSv4.1 driver's OPEN-create + CLOSE rate, 1 to 512 threads,
#    tmpfs, nfsx with sync_metadata = false (Ganesha flushes nothing).
# 5. nfsx bench metadata list and stat of a 50,000-file tree, NFSv3 and
#    NFSv4.1, tmpfs.
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; SMALLOPS=${SMALLOPS:?smallops binary}
STEPS=${STEPS:-libnfs smallops data create41 liststat}
step() { [[ " $STEPS " == *" $1 "* ]] && echo "$(date -u +%T) $1" >&2; }
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$REPO"
git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null
G() { PEER_DIR=$1 GANESHA_DELEGATIONS=${2:-none} scripts/ganesha.sh ${3:-start} >/dev/null 2>&1; }

step libnfs && WAIT_IDLE=0 SKIP="read split" OUTDIR=$OUT/libnfs bench/vs-ganesha.sh -n "$RUNS" > "$OUT/libnfs.log" 2>&1

if step smallops; then
  for v in 3 4; do
    NFSVERS=$v BUILDS="new ganesha" OLD=$NFSX SMALLOPS=$SMALLOPS \
      bench/results/20261126-one-statx/run.sh "$OUT/smallops-v$v" "$RUNS" 2000 > "$OUT/smallops-v$v.log" 2>&1
  done
fi

if step data; then
  W=/var/tmp/nfsx-final; rm -rf $W; mkdir -p $W/ex $W/st
  printf 'portmap_port = 0\n' > $W/c.toml
  G /tmp/nfsx-ganesha
  "$NFSX" serve $W/ex --listen 127.0.0.1:12060 --state-dir $W/st --config $W/c.toml --metrics 127.0.0.1:12061 --log warn & np=$!
  sleep 1
  for v in 3 4.1; do
    C=(--runs "$RUNS" --quiet --target "nfs://127.0.0.1:12060$W/ex?version=$v" --target "nfs://127.0.0.1/export?version=$v")
    run() { name=$1; shift; "$NFSX" bench data "$@" "${C[@]}" --json "$OUT/data-v$v-$name.json" > "$OUT/data-v$v-$name.txt" 2>&1; }
    run rand-read-4k-16t --mode rand-read --io-size 4KiB --threads 16 --size 64MiB --duration 5s --no-data-cache
    run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --duration 5s --direct
    run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration 5s --no-data-cache
    run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --duration 5s --direct
    # Flushes per stable write: the metrics before and after that row.
    m() { curl -s 127.0.0.1:12061/metrics | grep -E '^nfsx_(backend_.*flush|requests_total)'; }
    m > "$OUT/data-v$v-sync-8k-16t.metrics-before.txt"
    run sync-8k-16t --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration 5s
    m > "$OUT/data-v$v-sync-8k-16t.metrics-after.txt"
  done
  kill $np; wait $np 2>/dev/null
  G /tmp/nfsx-ganesha none stop
  rm -rf $W
fi

if step create41; then
  G /dev/shm/nfsx-final-g rw
  TMPDIR=/dev/shm NFS4_BENCH_PEER=127.0.0.1:2049/export NFS4_BENCH_RUNS=$RUNS \
    NFS4_BENCH_NFSX_CONFIG=$'[localfs]\nsync_metadata = false' NFS4_BENCH_JSON="$OUT/nfs41" \
    cargo test --release -p nfsx --test nfs4_bench -- --ignored --nocapture --test-threads 1 create \
    > "$OUT/nfs41-create.txt" 2>&1
  G /dev/shm/nfsx-final-g none stop
fi

if step liststat; then
  W=/dev/shm/nfsx-final-ls; rm -rf $W; mkdir -p $W/ex $W/st
  printf 'portmap_port = 0\n' > $W/c.toml
  G /dev/shm/nfsx-final-g
  "$NFSX" serve $W/ex --listen 127.0.0.1:12080 --state-dir $W/st --config $W/c.toml --log warn & np=$!
  sleep 1
  for v in ${LISTSTAT_VERS:-3 4.1}; do
    "$NFSX" bench metadata --op list,stat --files 50000 --runs "${LISTSTAT_RUNS:-3}" --quiet \
      --target "nfs://127.0.0.1:12080$W/ex?version=$v" --target "nfs://127.0.0.1/export?version=$v" \
      --json "$OUT/liststat-v$v.json" > "$OUT/liststat-v$v.txt" 2>&1
  done
  kill $np; wait $np 2>/dev/null
  G /dev/shm/nfsx-final-g none stop
  rm -rf $W
fi
echo "$(date -u +%T) done" >&2

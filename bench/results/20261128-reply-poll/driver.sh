#!/bin/bash
# The NFSv4.1 driver's OPEN-create + CLOSE rate (crates/cli/tests/nfs4_bench.rs)
# with its replies read by the callers themselves (the default since this
# folder) and by a reader thread (NFS4_BENCH_READER=thread, as before),
# each against nfsx and NFS-Ganesha 4.3 (delegations on) in the same
# invocation, the two drivers alternating invocation by invocation.
# tmpfs, nfsx with sync_metadata = false (Ganesha flushes nothing on creation).
#   driver.sh OUTDIR [REPEATS] [THREADS]
set -u
OUT=${1:?OUTDIR}; REPEATS=${2:-2}; THREADS=${3:-1,2,4,16}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-driver; rm -rf $W; mkdir -p $W
cd "$REPO"
cargo build --release --tests -p nfsx >/dev/null 2>&1
PEER_DIR=$W/ganesha GANESHA_DELEGATIONS=rw scripts/ganesha.sh start >/dev/null 2>&1 || { echo "ganesha did not start" >&2; exit 1; }
trap 'PEER_DIR=$W/ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
for i in $(seq 1 "$REPEATS"); do
  for reader in callers thread; do
    TMPDIR=/dev/shm NFS4_BENCH_PEER=127.0.0.1:2049/export NFS4_BENCH_THREADS=$THREADS NFS4_BENCH_RUNS=5 \
      NFS4_BENCH_READER=$reader NFS4_BENCH_NFSX_CONFIG=$'[localfs]\nsync_metadata = false' \
      NFS4_BENCH_JSON="$OUT/$reader-$i" \
      cargo test --release -p nfsx --test nfs4_bench -- --ignored --nocapture --test-threads 1 create \
      > "$OUT/$reader-$i.txt" 2>&1
    # The driver never removes what it creates (nfsx's test export goes with its server).
    rm -rf $W/ganesha/export/create-bench-* 2>/dev/null
  done
done
grep -H -E '^(nfsx|peer) ' "$OUT"/*.txt

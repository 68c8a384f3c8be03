#!/usr/bin/env bash
# Aggregate 1 MiB sequential write and read of 4 clients through 1, 2 and 3
# nfsx heads (each in its own network namespace) over one Ceph cluster,
# `nfsx bench multi-client`, 5 alternating runs; then the store's own rate
# for the same pattern (rados bench, 1 MiB objects, 1 and 4 in flight).
# Needs root and a release build; starts and stops everything itself.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/nfsx-heads-bench}
RUNS=${RUNS:-5}
SIZE=${SIZE:-128MiB}
export CEPH_OSD_SIZE=${CEPH_OSD_SIZE:-24G}
rm -rf "$OUT" && mkdir -p "$OUT"
scripts/heads.sh start 3 | tee "$OUT/heads.txt"
trap 'scripts/heads.sh stop' EXIT
eval "$(grep '^CEPH_CONF=' "$OUT/heads.txt")"
N=10.78.0
target/release/nfsx bench multi-client --quiet --runs "$RUNS" --clients 1,2,4 --size "$SIZE" --io-size 1MiB \
  --target "nfs://$N.1/heads?version=4.1" \
  --target "nfs://$N.1,$N.2/heads?version=4.1" \
  --target "nfs://$N.1,$N.2,$N.3/heads?version=4.1" \
  --json "$OUT/multi-client.json" --report "$OUT/report" | tee "$OUT/multi-client.txt"
for t in 1 4; do
  rados -c "$CEPH_CONF" bench -p cephfs_data 10 write -b 1M -t $t --no-cleanup | grep -E 'Bandwidth \(MB|Average Latency' | sed "s/^/write -t $t: /"
  rados -c "$CEPH_CONF" bench -p cephfs_data 10 seq -t $t | grep -E 'Bandwidth \(MB|Average Latency' | sed "s/^/read -t $t: /"
  rados -c "$CEPH_CONF" -p cephfs_data cleanup >/dev/null
done | tee "$OUT/rados.txt"

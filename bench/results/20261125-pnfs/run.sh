#!/usr/bin/env bash
# pNFS flexible-file layouts through nfsx's client: 4 clients (1 MiB
# sequential write, then read, SIZE each, `nfsx bench multi-client`), 5
# alternating runs, three heads over one Ceph cluster:
#   one head   nfs://10.78.0.2/heads        every byte through head 2
#   pnfs       nfs://10.78.0.1/heads        head 1 hands out layouts naming
#                                           heads 1-3 as data servers
#   addresses  nfs://10.78.0.1,.2,.3/heads  clients spread over the heads
#                                           by address (head 1's with layouts)
# Needs root and a release build; starts and stops everything itself.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/nfsx-pnfs-bench}
RUNS=${RUNS:-5}
SIZE=${SIZE:-256MiB}
export CEPH_OSD_SIZE=${CEPH_OSD_SIZE:-24G}
N=10.78.0
export HEADS_CONFIG_1="[core]
pnfs_data_servers = [\"$N.1:2049\", \"$N.2:2049\", \"$N.3:2049\"]"
rm -rf "$OUT" && mkdir -p "$OUT"
scripts/heads.sh start 3 | tee "$OUT/heads.txt"
trap 'scripts/heads.sh stop' EXIT
target/release/nfsx bench multi-client --quiet --runs "$RUNS" --clients 4 --size "$SIZE" --io-size 1MiB \
  --target "nfs://$N.2/heads?version=4.1" \
  --target "nfs://$N.1/heads?version=4.1" \
  --target "nfs://$N.1,$N.2,$N.3/heads?version=4.1" \
  --json "$OUT/multi-client.json" --report "$OUT/report" | tee "$OUT/multi-client.txt"

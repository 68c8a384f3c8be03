#!/usr/bin/env bash
# OLD=/path/to/nfsx-before: Ganesha FSAL_CEPH, an nfsx head of OLD and one of this build
# (quiet_client_log on), all on the cluster setup.sh of 20261125-ceph-ganesha starts;
# metadata list, stat and read-small, 2,000 files, 5 alternating runs.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-/tmp/nfsx-ceph-vs-ganesha}
bench/results/20261125-ceph-ganesha/setup.sh
"$OLD" serve --backend ceph --listen 127.0.0.1:20804 --config "$OUT/nfsx.toml" --state-dir "$OUT/old.state" /nfsx >"$OUT/old.log" 2>&1 &
trap 'kill $(jobs -p); bench/results/20261125-ceph-ganesha/setup.sh stop; scripts/ceph.sh stop' EXIT
sleep 3
target/release/nfsx bench metadata --quiet --runs 5 --files 2000 --op list,stat,read-small \
  --target "nfs://127.0.0.1/export?version=4.1" --target "nfs://127.0.0.1:20804/nfsx?version=4.1" \
  --target "nfs://127.0.0.1:20801/nfsx?version=4.1"

#!/usr/bin/env bash
# OLD=/path/to/nfsx-before: Ganesha FSAL_CEPH, an nfsx head of OLD and one of this build
# (READDIR from the start seeks past "." and ".."), on the cluster setup.sh of
# 20261125-ceph-ganesha starts; metadata list and stat, 2,000 files, 5 alternating runs.
# Then the metadata server's getattr requests per `nfs-ls -R` walk of one kept tree
# through each head (mds-getattrs.txt).
set -euo pipefail
cd "$(dirname "$0")/../../.."
export OUT=${OUT:-/tmp/nfsx-ceph-vs-ganesha}
bench/results/20261125-ceph-ganesha/setup.sh
"$OLD" serve --backend ceph --listen 127.0.0.1:20806 --config "$OUT/nfsx.toml" --state-dir "$OUT/old.state" /nfsx >"$OUT/old.log" 2>&1 &
trap 'kill $(jobs -p); bench/results/20261125-ceph-ganesha/setup.sh stop; scripts/ceph.sh stop' EXIT
sleep 3
target/release/nfsx bench metadata --quiet --runs 5 --files 2000 --op list,stat --json metadata.json \
  --target "nfs://127.0.0.1/export?version=4.1" --target "nfs://127.0.0.1:20806/nfsx?version=4.1" \
  --target "nfs://127.0.0.1:20801/nfsx?version=4.1"
target/release/nfsx bench metadata --quiet --runs 1 --files 2000 --op stat --keep \
  --target "nfs://127.0.0.1:20801/nfsx?version=4.1" >/dev/null
getattrs() {
  ceph -c /tmp/nfsx-ceph/ceph.conf daemon mds.a perf dump |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["mds_server"]["req_getattr_latency"]["avgcount"])'
}
for port in 20806 20801; do
  for pass in 1 2; do
    before=$(getattrs); start=$(date +%s.%N)
    nfs-ls -R "nfs://127.0.0.1/nfsx/?version=4&nfsport=$port" >/dev/null
    echo "port $port walk $pass: $(echo "$(date +%s.%N) - $start" | bc) s, $(($(getattrs) - before)) MDS getattrs"
  done
done | tee mds-getattrs.txt
# Kept listings: the same two servers side by side again (this build first).
target/release/nfsx bench metadata --quiet --runs 5 --files 2000 --op list,stat --json metadata-listings.json \
  --target "nfs://127.0.0.1/export?version=4.1" --target "nfs://127.0.0.1:20801/nfsx?version=4.1"
# Sequential read, the same two servers.
target/release/nfsx bench data --quiet --runs 5 --target "nfs://127.0.0.1/export?version=4.1" \
  --target "nfs://127.0.0.1:20801/nfsx?version=4.1" --mode seq-read --size 256MiB --io-size 1MiB \
  --threads 1,4 --json seq-read.json

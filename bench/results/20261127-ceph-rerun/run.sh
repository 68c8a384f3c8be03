#!/usr/bin/env bash
# NFS-Ganesha 4.3 FSAL_CEPH, an nfsx head at its defaults and one answering on
# the MDS's early reply (sync_metadata = false, as Ganesha answers), on the
# cluster setup.sh of 20261125-ceph-ganesha starts; same client (nfsx's,
# NFSv4.1). Sequential 1 MiB reads at 1 and 4 threads, 7 alternating runs,
# (client data cache off: every read a READ), then creations, 5 alternating runs of 2,000 files. Writes the JSON here,
# or into RESULTS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=$(mkdir -p "${RESULTS:-$here}" && cd "${RESULTS:-$here}" && pwd)
cd "$here/../../.."
export OUT=${OUT:-/tmp/nfsx-ceph-vs-ganesha}
bench/results/20261125-ceph-ganesha/setup.sh
trap 'bench/results/20261125-ceph-ganesha/setup.sh stop' EXIT
sleep 3
targets=(--target "nfs://127.0.0.1/export?version=4.1" --target "nfs://127.0.0.1:20801/nfsx?version=4.1"
  --target "nfs://127.0.0.1:20802/nfsx-async?version=4.1")
target/release/nfsx bench data --quiet --runs 7 "${targets[@]:0:4}" --mode seq-read --size 256MiB --no-data-cache \
  --io-size 1MiB --threads 1,4 --json "$results/seq-read.json"
target/release/nfsx bench metadata --quiet --runs 5 --files 2000 --op create "${targets[@]}" \
  --json "$results/create.json"
git rev-parse HEAD >"$results/nfsx-commit.txt"

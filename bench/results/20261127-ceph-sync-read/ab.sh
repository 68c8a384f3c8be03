#!/usr/bin/env bash
# One nfsx head with read_delegations (its reads bypass libcephfs's object
# cache: client_debug_force_sync_read) against one at the default, both
# exporting the root of the cluster scripts/ceph.sh starts, same client
# (nfsx's, NFSv4.1, data cache off so every read is a READ), alternating
# runs. Usage: ab.sh OUT [RUNS]   (a cluster from `scripts/ceph.sh start`)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
out=${1:?usage: ab.sh OUT [RUNS]}
runs=${2:-7}
conf=${CEPH_CONF:-/tmp/nfsx-ceph/ceph.conf}
mkdir -p "$out"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
start() { # name port read_delegations
  local d=$out/$1
  mkdir -p "$d/state"
  printf 'portmap_port = 0\n[ceph]\nconf = "%s"\nread_delegations = %s\n' "$conf" "$3" >"$d/nfsx.toml"
  echo "/ 127.0.0.1(rw,sync,no_root_squash,insecure)" >"$d/exports"
  target/release/nfsx serve --backend ceph --listen "127.0.0.1:$2" --config "$d/nfsx.toml" \
    --state-dir "$d/state" --exports "$d/exports" >"$d/nfsx.log" 2>&1 &
  pids+=($!)
}
start default 20811 false
start readdeleg 20812 true
sleep 4
targets=(--target "nfs://127.0.0.1:20811/?version=4.1" --target "nfs://127.0.0.1:20812/?version=4.1")
target/release/nfsx bench data --quiet --runs "$runs" "${targets[@]}" --mode seq-read --size 256MiB \
  --no-data-cache --io-size 1MiB --threads 1,4 --json "$out/seq-read.json"
target/release/nfsx bench data --quiet --runs "$runs" "${targets[@]}" --mode rand-read --size 64MiB \
  --no-data-cache --io-size 4KiB --threads 16 --duration 5s --json "$out/rand-read.json"
git rev-parse HEAD >"$out/nfsx-commit.txt"

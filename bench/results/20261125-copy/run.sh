#!/bin/sh
# Server-side COPY of a 1 GiB file against the same copy through nfsx's
# client (read + write + commit), and CLONE, over NFSv4.2; NFSv3 beside it
# as the client-side-only reference.
# Usage: bench/results/20261125-copy/run.sh [RUNS] [OUT]   (from the repository root,
# after `cargo build --release -p nfsx`). EXPORT=DIR exports another directory,
# e.g. a loop-mounted XFS image where COPY and CLONE share blocks:
#   truncate -s 6G /var/tmp/xfs.img && mkfs.xfs -q -m reflink=1 /var/tmp/xfs.img
#   mkdir -p /mnt/nfsx-xfs && mount -o loop /var/tmp/xfs.img /mnt/nfsx-xfs
#   EXPORT=/mnt/nfsx-xfs bench/results/20261125-copy/run.sh 5 out/copy-xfs
set -eu
runs=${1:-5}
out=${2:-out/copy}
nfsx=${NFSX:-target/release/nfsx}
export_dir=${EXPORT:-/var/tmp/nfsx-copy-export}
mkdir -p "$out" "$export_dir"
"$nfsx" serve "$export_dir" --listen 127.0.0.1:2052 --state-dir "$out/state" \
  --portmap-port 0 > "$out/server.log" 2>&1 &
srv=$!
trap 'kill $srv' EXIT
sleep 1
S="nfs://127.0.0.1:2052$export_dir"
"$nfsx" bench copy --size 1GiB --io-size 1MiB --runs "$runs" \
  --target "$S?version=4.2" --target "$S?version=3" \
  --json "$out/copy.json" --report "$out/report" | tee "$out/summary.txt"

#!/usr/bin/env bash
# The nfsx-client rows of docs/BENCHMARKS.md ("Server request path"): nfsx and
# NFS-Ganesha side by side, same client, 5 alternating runs per point.
#   NFSX=target/release/nfsx bash bench/results/20261124-nfsx-bench/commands.sh
set -euo pipefail
NFSX=${NFSX:-target/release/nfsx}
OUT=${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-nfsx-bench}
mkdir -p "$OUT" /var/tmp/nxb/ex /var/tmp/nxb/st
printf 'portmap_port = 0\n' >/var/tmp/nxb/c.toml
scripts/ganesha.sh start                       # nfs://127.0.0.1/export, takes port 111
"$NFSX" serve /var/tmp/nxb/ex --listen 127.0.0.1:12060 --state-dir /var/tmp/nxb/st \
  --config /var/tmp/nxb/c.toml --metrics 127.0.0.1:12061 --log warn &
trap 'kill $!; scripts/ganesha.sh stop' EXIT
sleep 1
N='nfs://127.0.0.1:12060/var/tmp/nxb/ex?version=3' G='nfs://127.0.0.1/export?version=3'
b() { "$NFSX" bench data --runs 5 --target "$N" --target "$G" --quiet "$@"; }
b --mode seq-write --io-size 8KiB --threads 16 --sync --size 16MiB --json "$OUT/sync-8k-16t.json" | tee "$OUT/sync-8k-16t.txt"
curl -s 127.0.0.1:12061/metrics | grep -E '^nfsx_backend_flush' | tee "$OUT/flushes.txt"
b --mode rand-read,rand-write --io-size 4KiB --threads 16 --size 64MiB --json "$OUT/rand-4k-16t.json" | tee "$OUT/rand-4k-16t.txt"
b --mode seq-read,seq-write --io-size 1MiB --threads 4 --size 256MiB --json "$OUT/seq-1m-4t.json" | tee "$OUT/seq-1m-4t.txt"

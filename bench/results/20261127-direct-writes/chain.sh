#!/bin/bash
# serial_unstable_writes on (the default) and off, same build, and NFS-Ganesha
# 4.3, alternating runs, same client: the direct-write rows, and the stable
# 8 KiB writes (which are never chained) to see that group commit lost nothing.
#   chain.sh OUTDIR [RUNS]      (VERS=4.1 for NFSv4.1)
set -u
. "$(dirname "$0")/../../settings-ab.sh"
settings_ab_start "${1:?OUTDIR}" "${2:-7}" $'portmap_port = 0\nmetrics = "127.0.0.1:12071"' \
  $'portmap_port = 0\nserial_unstable_writes = false'
settings_ab_run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --duration ${AB_DURATION:-5s} --direct
settings_ab_run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --duration ${AB_DURATION:-5s} --direct
settings_ab_run sync-write-8k-16t --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB --duration ${AB_DURATION:-5s}
curl -s http://127.0.0.1:12071/metrics | grep -E "^nfsx_requests_(worker|chained)_total" > "$AB_OUT/metrics-on.txt"
settings_ab_summary

#!/bin/bash
# NFSv4 READs of cached data tried on the connection's thread (the default,
# inline_cached_reads = true: a SEQUENCE, PUTFH, READ compound reads its
# data with RWF_NOWAIT before SEQUENCE runs) against every NFSv4 READ on a
# worker (false; NFSv3 READs lose their inline path too), same build, and
# NFS-Ganesha 4.3, alternating runs, same client (nfsx's, data cache off).
#   ab.sh OUTDIR [RUNS]          VERS=4.1 (default) or 3
set -u
VERS=${VERS:-4.1}
. "$(dirname "$0")/../../settings-ab.sh"
settings_ab_start "${1:?OUTDIR}" "${2:-7}" 'portmap_port = 0' $'portmap_port = 0\n[core]\ninline_cached_reads = false'
D=(--no-data-cache --duration ${AB_DURATION:-5s} --size 256MiB)
settings_ab_run rand-read-4k-16t --mode rand-read --io-size 4KiB --threads 16 "${D[@]}"
settings_ab_run rand-read-64k-16t --mode rand-read --io-size 64KiB --threads 16 "${D[@]}"
settings_ab_run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 "${D[@]}"
settings_ab_run seq-read-1m-1t --mode seq-read --io-size 1MiB --threads 1 "${D[@]}"
settings_ab_summary

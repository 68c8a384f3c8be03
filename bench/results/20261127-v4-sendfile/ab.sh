#!/bin/bash
# NFSv4.1 READs sent from the page cache (the default, read_sendfile_min
# 64 KiB) against read_sendfile_min = 0 (every READ read into memory and
# written out, as NFSv4 READs were before), same build, and NFS-Ganesha 4.3,
# alternating runs, same client (nfsx's, data cache off).
#   ab.sh OUTDIR [RUNS]
set -u
. "$(dirname "$0")/../../settings-ab.sh"
VERS=${VERS:-4.1}
settings_ab_start "${1:?OUTDIR}" "${2:-7}" 'portmap_port = 0' $'portmap_port = 0\n[core]\nread_sendfile_min = 0'
settings_ab_run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration ${AB_DURATION:-5s} --no-data-cache
settings_ab_run seq-read-1m-1t --mode seq-read --io-size 1MiB --threads 1 --size 256MiB --duration ${AB_DURATION:-5s} --no-data-cache
settings_ab_summary

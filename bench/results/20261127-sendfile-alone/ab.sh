#!/bin/bash
# Large READs by sendfile only while alone on their connection (the
# default, read_sendfile_alone_only = true: beside others an NFSv3 READ of
# cached data is copied on the connection's thread, any other READ's data
# read into memory) against sendfile for every READ of at least
# read_sendfile_min (false, as before), same build, and NFS-Ganesha 4.3,
# alternating runs, same client (nfsx's, data cache off).
#   ab.sh OUTDIR [RUNS]          VERS=3 (default) or 4.1
set -u
. "$(dirname "$0")/../../settings-ab.sh"
settings_ab_start "${1:?OUTDIR}" "${2:-7}" 'portmap_port = 0' $'portmap_port = 0\n[core]\nread_sendfile_alone_only = false'
D=(--no-data-cache --duration ${AB_DURATION:-5s} --size 256MiB)
settings_ab_run seq-read-1m-1t --mode seq-read --io-size 1MiB --threads 1 "${D[@]}"
settings_ab_run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 "${D[@]}"
settings_ab_run rand-read-64k-16t --mode rand-read --io-size 64KiB --threads 16 "${D[@]}"
settings_ab_run rand-read-4k-16t --mode rand-read --io-size 4KiB --threads 16 "${D[@]}"
settings_ab_summary

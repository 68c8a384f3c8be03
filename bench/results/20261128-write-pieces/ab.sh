#!/bin/bash
# write_piece at 64 KiB against 256 KiB (the default since this run), same
# build, and
# NFS-Ganesha 4.3, alternating runs, same client (this build's): the
# 16-thread 4 KiB random writes and the 4-thread 1 MiB sequential writes.
#   ab.sh OUTDIR [RUNS]          VERS=3 (default) or 4.1
set -u
. "$(dirname "$0")/../../settings-ab.sh"
settings_ab_start "${1:?OUTDIR}" "${2:-5}" $'portmap_port = 0\n[localfs]\nwrite_piece = 65536' $'portmap_port = 0\n[localfs]\nwrite_piece = 262144'
settings_ab_run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --direct --size 64MiB --duration ${AB_DURATION:-5s}
settings_ab_run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --direct --size 256MiB --duration ${AB_DURATION:-5s}
settings_ab_summary

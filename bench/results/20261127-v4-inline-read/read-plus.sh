#!/bin/bash
# NFSv4.2 READ_PLUS (the only read a Linux NFSv4.2 mount sends) of cached
# data tried on the connection's thread (the default) against every
# READ_PLUS on a worker (inline_cached_reads = false), same build,
# alternating runs, same client (nfsx's, data cache off, [v41] read_plus =
# true). NFS-Ganesha 4.3 answers READ_PLUS here with an empty data segment
# at offset 0, so it takes no part (see ../20261127-read-plus/ab.sh).
#   read-plus.sh OUTDIR [RUNS]
set -u
VERS=4.2
. "$(dirname "$0")/../../settings-ab.sh"
settings_ab_start "${1:?OUTDIR}" "${2:-7}" 'portmap_port = 0' $'portmap_port = 0\n[core]\ninline_cached_reads = false'
printf '[v41]\nread_plus = true\n' > "$AB_OUT/client.toml"
D=(--no-data-cache --duration ${AB_DURATION:-5s} --size 256MiB --client-config "$AB_OUT/client.toml")
settings_ab_run_nfsx rp-rand-4k-16t --mode rand-read --io-size 4KiB --threads 16 "${D[@]}"
settings_ab_run_nfsx rp-rand-64k-16t --mode rand-read --io-size 64KiB --threads 16 "${D[@]}"
settings_ab_summary

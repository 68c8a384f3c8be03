#!/bin/bash
# NFSv4.2 reads as READ_PLUS (the only read a Linux NFSv4.2 mount sends):
# ranges without holes sent from the page cache (the default,
# read_sendfile_min 64 KiB) against read_sendfile_min = 0 (every READ_PLUS
# read into memory, as before), same build, alternating runs, same client
# (nfsx's, data cache off, [v41] read_plus = true). NFS-Ganesha 4.3 answers
# READ_PLUS here with an empty data segment at offset 0 whatever was asked,
# so it takes part only in the plain READ rows (seq-read-*), the same
# client sending READs at NFSv4.2.
#   ab.sh OUTDIR [RUNS]
set -u
. "$(dirname "$0")/../../settings-ab.sh"
VERS=${VERS:-4.2}
settings_ab_start "${1:?OUTDIR}" "${2:-7}" 'portmap_port = 0' $'portmap_port = 0\n[core]\nread_sendfile_min = 0'
printf '[v41]\nread_plus = true\n' > "$AB_OUT/client.toml"
rp() { local name=$1; shift; settings_ab_run_nfsx "$name" "$@" --client-config "$AB_OUT/client.toml"; }
D=(--no-data-cache --duration ${AB_DURATION:-5s} --size 256MiB)
rp rp-seq-1m-4t --mode seq-read --io-size 1MiB --threads 4 "${D[@]}"
rp rp-seq-1m-1t --mode seq-read --io-size 1MiB --threads 1 "${D[@]}"
rp rp-rand-64k-16t --mode rand-read --io-size 64KiB --threads 16 "${D[@]}"
settings_ab_run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 "${D[@]}"
settings_ab_summary

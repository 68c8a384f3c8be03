#!/bin/bash
# The allocator settings at their defaults (malloc_mmap_threshold 8 MiB,
# malloc_trim_threshold 16 MiB) and at 0 (glibc's own dynamic choice), same
# build, and NFS-Ganesha 4.3, alternating runs, same client: the rows whose
# records are 1 MiB, and 4 KiB random writes to see small records lost
# nothing. Page faults of each nfsx server over the whole script in faults-*.txt.
#   ab.sh OUTDIR [RUNS]      (VERS=4.1 for NFSv4.1)
set -u
. "$(dirname "$0")/../../settings-ab.sh"
settings_ab_start "${1:?OUTDIR}" "${2:-7}" 'portmap_port = 0' \
  $'portmap_port = 0\nmalloc_mmap_threshold = 0\nmalloc_trim_threshold = 0'
settings_ab_run seq-write-1m-4t --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --duration ${AB_DURATION:-5s} --direct
settings_ab_run seq-read-1m-4t --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration ${AB_DURATION:-5s} --no-data-cache
settings_ab_run rand-write-4k-16t --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --duration ${AB_DURATION:-5s} --direct
for name in on off; do
  pid=$([ $name = on ] && echo $AB_ON_PID || echo $AB_OFF_PID)
  awk '{print "minor faults:", $10, "major faults:", $12}' /proc/$pid/stat > "$AB_OUT/faults-$name.txt"
  grep -E "VmHWM|VmRSS" /proc/$pid/status >> "$AB_OUT/faults-$name.txt"
done
settings_ab_summary

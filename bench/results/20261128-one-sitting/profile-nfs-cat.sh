#!/bin/bash
# Where one 1 MiB READ at a time goes: `nfs-cat` of a 1 GiB file from nfsx
# (ext4, page cache warm) to /dev/null under a system-wide `perf record`
# (both cores), and the wire probes of bench/wire.c beside it.
#   profile-nfs-cat.sh OUTDIR [NFSX]
# Writes OUTDIR/nfs-cat.perf.txt (CPU samples by process, library and
# symbol) and OUTDIR/rates.txt (MB/s of nfs-cat and of the wire probes: from
# memory, by sendfile from the same file, from memory with the client's extra
# copy; 3 runs each).
set -u
OUT=${1:?OUTDIR}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${2:-$REPO/target/release/nfsx}
W=/var/tmp/nfsx-profile-nfs-cat; rm -rf $W; mkdir -p $W/ex $W/st
cc -O2 -o $W/wire "$REPO/bench/wire.c"
head -c 1G /dev/urandom > $W/ex/f; sync
printf 'portmap_port = 0\n' > $W/c.toml
"$NFSX" serve $W/ex --listen 127.0.0.1:12090 --state-dir $W/st --config $W/c.toml --log warn & np=$!
trap 'kill $np 2>/dev/null; rm -rf $W' EXIT
sleep 1
URL="nfs://127.0.0.1$W/ex/f?version=3&nfsport=12090&mountport=12090"
nfs-cat "$URL" > /dev/null
t() { local s=$(date +%s.%N); "$@" > /dev/null; awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.0f", 1073.741824/(e-s)}'; }
: > "$OUT/rates.txt"
for i in 1 2 3; do
  echo "run $i nfs-cat $(t nfs-cat "$URL") wire $($W/wire 1024 | sed 's/.*mb_per_s=//')" \
    "wire-sendfile $($W/wire 1024 1048576 $W/ex/f | sed 's/.*mb_per_s=//') wire-copy $($W/wire -c 1024 | sed 's/.*mb_per_s=//')" >> "$OUT/rates.txt"
done
perf record -a -F 2000 -o $W/perf.data -- nfs-cat "$URL" > /dev/null 2> /dev/null
perf report -i $W/perf.data --no-children --sort comm,dso,sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 > "$OUT/nfs-cat.perf.txt"
perf report -i $W/perf.data --no-children --sort comm --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -10 >> "$OUT/nfs-cat.perf.txt"

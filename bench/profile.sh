#!/usr/bin/env bash
# Where the time of one row goes, under `perf`: the profiles behind the
# paragraphs of docs/BENCHMARKS.md on the rows that miss their targets.
#
#   bench/profile.sh nfs-cat OUT
#       `nfs-cat` of a 1 GiB file from nfsx (ext4 under BASE, page cache
#       warm) to /dev/null under a system-wide `perf record` (both cores),
#       and the loopback probes of bench/wire.c beside it, 3 runs each:
#       OUT/rates.txt (MB/s of nfs-cat; of the probe from memory, by
#       sendfile from the same file, and from memory with the client's
#       second copy, `wire -c`) and OUT/nfs-cat.perf.txt (samples by
#       process, library and symbol).
#   bench/profile.sh walk-list|walk-stat OUT [nfsx|ganesha]
#       nfsx's client walking a FILES-file tree (50,000; NFSv3, one thread,
#       `nfsx bench metadata --op list|stat`) against one server on tmpfs
#       under `perf record --call-graph dwarf`; bench/walk-profile.py splits
#       the walk's samples into the client's own work and its wait for each
#       reply: OUT/profile-OP-SERVER.txt.
#   bench/profile.sh depth OUT [ROUNDS]
#       1 MiB sequential reads with one READ in flight (the client polling
#       for its reply, and with reply_poll_us = 0) and with four, against
#       both servers, each run under `perf stat` of the server and of the
#       client (bench/per-call.py: CPU and context switches per READ), and
#       the probe at depth 1 and 4 in the same rounds: OUT/reads.tsv,
#       OUT/wire.tsv.
#
# Environment: BASE [/var/tmp] for nfs-cat and depth; bench/lib.sh's.
# Needs perf (linux-perf), libnfs-utils for nfs-cat, a C compiler.
set -uo pipefail
WHAT=${1:?usage: profile.sh nfs-cat|walk-list|walk-stat|depth OUT [...]}
OUT=${2:?OUT}
. "$(dirname "$0")/lib.sh"
BASE=${BASE:-/var/tmp}
OUT=$(out_dir "$OUT")
W=$BASE/nfsx-profile
trap 'stop_all; rm -rf "$W" "/dev/shm/nfsx-profile"' EXIT
rm -rf "$W"
mkdir -p "$W"
mbps() { sed 's/.*mb_per_s=//'; }

case $WHAT in
nfs-cat)
  cc -O2 -o "$W/wire" "$BENCH/wire.c" || exit 1
  nfsx_start nfsx "$W/srv" 12090 || exit 1
  f=$W/srv/ex/f
  head -c 1G /dev/urandom >"$f"
  sync
  url="nfs://127.0.0.1$f?version=3&nfsport=12090&mountport=12090"
  nfs-cat "$url" >/dev/null
  for i in 1 2 3; do
    s=$(date +%s.%N)
    nfs-cat "$url" >/dev/null
    cat_mbps=$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN {printf "%.0f", 1073.741824 / (e - s)}')
    echo "run $i nfs-cat $cat_mbps wire $("$W/wire" 1024 | mbps)" \
      "wire-sendfile $("$W/wire" 1024 1048576 "$f" | mbps) wire-copy $("$W/wire" -c 1024 | mbps)" >>"$OUT/rates.txt"
  done
  perf record -a -F 2000 -o "$W/perf.data" -- nfs-cat "$url" >/dev/null 2>&1
  {
    perf report -i "$W/perf.data" --no-children --sort comm,dso,sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60
    perf report -i "$W/perf.data" --no-children --sort comm --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -10
  } >"$OUT/nfs-cat.perf.txt"
  cat "$OUT/rates.txt"
  ;;
walk-list | walk-stat)
  op=${WHAT#walk-}
  server=${3:-nfsx}
  if [[ $server == ganesha ]]; then
    ganesha_start /dev/shm/nfsx-profile/g || exit 1
  else
    nfsx_start nfsx /dev/shm/nfsx-profile/srv 12090 || exit 1
  fi
  perf record -o "$W/perf.data" --call-graph dwarf,32768 -F 997 -- \
    "$NFSX" bench metadata --op "$op" --files "$FILES" --runs 1 --quiet $(targets 3 "$server") \
    >"$OUT/bench-$op-$server.txt" 2>&1
  perf script -i "$W/perf.data" -F comm,tid,time,ip,sym 2>/dev/null |
    python3 "$BENCH/walk-profile.py" >"$OUT/profile-$op-$server.txt"
  cat "$OUT/profile-$op-$server.txt"
  ;;
depth)
  rounds=${3:-5}
  cc -O2 -o "$W/wire" "$BENCH/wire.c" || exit 1
  head -c 268435456 /dev/urandom >"$W/probe.dat"
  cat "$W/probe.dat" >/dev/null
  printf 'reply_poll_us = 0\n' >"$W/nopoll.toml"
  : >"$W/default.toml"
  ganesha_start "$W/g" && nfsx_start nfsx "$W/srv" 12100 || exit 1
  printf 'round\tcase\tmbps\tcalls\tcalls_per_s\tserver_us_per_call\tclient_us_per_call\tserver_cs_per_call\tclient_cs_per_call\n' >"$OUT/reads.tsv"
  printf 'round\tprobe\tdepth\tmbps\n' >"$OUT/wire.tsv"
  for r in $(seq "$rounds"); do
    log "round $r"
    for d in 1 4; do
      printf '%s\tmemory\t%s\t%s\n' "$r" "$d" "$("$W/wire" -d "$d" 2048 | mbps)" >>"$OUT/wire.tsv"
      printf '%s\tsendfile\t%s\t%s\n' "$r" "$d" "$("$W/wire" -d "$d" 2048 1048576 "$W/probe.dat" | mbps)" >>"$OUT/wire.tsv"
    done
    for s in nfsx ganesha; do
      for c in 1t:1:default 1t-nopoll:1:nopoll 4t:4:default; do
        IFS=: read -r label threads conf <<<"$c"
        line=$(perf_call "$OUT/$s-$label-$r" "$s" "$NFSX" data --mode seq-read --io-size 1MiB --size 256MiB \
          --threads "$threads" --duration "$DURATION" --no-data-cache --client-config "$W/$conf.toml" $(targets 3 "$s"))
        printf '%s\t%s\t%s\n' "$r" "$s-$label" "$line" >>"$OUT/reads.tsv"
      done
    done
  done
  python3 - "$OUT" <<'PY'
import csv, statistics as st, sys, collections
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/reads.tsv"), delimiter="\t"))
by = collections.defaultdict(list)
for r in rows:
    by[r["case"]].append(r)
for case, rs in sorted(by.items()):
    med = lambda k: st.median(float(r[k]) for r in rs)
    print(f"{case:20} {med('mbps'):8.0f} MB/s  server {med('server_us_per_call'):6.1f} µs  client {med('client_us_per_call'):6.1f} µs"
          f"  context switches {med('server_cs_per_call'):.2f} / {med('client_cs_per_call'):.2f} per READ")
wire = collections.defaultdict(list)
for r in csv.DictReader(open(f"{out}/wire.tsv"), delimiter="\t"):
    wire[(r["probe"], r["depth"])].append(float(r["mbps"]))
for (probe, depth), v in sorted(wire.items()):
    print(f"probe {probe:8} depth {depth}: {st.median(v):8.0f} MB/s ({min(v):.0f}-{max(v):.0f})")
PY
  ;;
*)
  echo "unknown profile $WHAT" >&2
  exit 2
  ;;
esac

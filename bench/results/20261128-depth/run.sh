#!/bin/bash
# 1 MiB sequential reads with one READ in flight against four, both servers,
# with each side's CPU and context switches per READ, and the loopback probe
# (bench/wire.c) at depth 1 and 4 beside them: is it the wire, the server or
# the client that makes four READs in flight slower than one?
#   run.sh OUTDIR [ROUNDS]      (needs perf; runs Ganesha via scripts/ganesha.sh)
# Every round runs every case once, in the same order; nothing else may run.
set -u
OUT=${1:?OUTDIR}; ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-depth; rm -rf $W; mkdir -p $W
cc -O2 -o $W/wire "$REPO/bench/wire.c"
head -c 268435456 /dev/urandom > $W/probe.dat; cat $W/probe.dat > /dev/null
printf 'reply_poll_us = 0\n' > $W/nopoll.toml
cd "$REPO"; git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null
. "$REPO/bench/two-servers.sh"
start_two_servers $W 12100
echo -e "round\tcase\tmbps\treads\tserver_us_per_read\tclient_us_per_read\tserver_cs_per_read\tclient_cs_per_read" > "$OUT/reads.tsv"
echo -e "round\tprobe\tdepth\tmbps" > "$OUT/wire.tsv"
# One `nfsx bench data` run of 5 s under perf stat, and perf stat of the server beside it.
one() {  # round server threads label [client args]
  local r=$1 s=$2 th=$3 label=$4; shift 4
  perf stat -x, -e task-clock,context-switches -p "${PID[$s]}" -o $W/srv.txt -- sleep 5.8 & local sp=$!
  perf stat -x, -e task-clock,context-switches -o $W/cli.txt "$NFSX" bench data --target "${URL[$s]}" --threads "$th" "$@" \
    --mode seq-read --io-size 1MiB --size 256MiB --duration 5s --no-data-cache --runs 1 --quiet --json "$OUT/$s-$label-$r.json" > /dev/null 2>&1
  wait $sp
  cp $W/srv.txt "$OUT/$s-$label-$r.server-perf.txt"; cp $W/cli.txt "$OUT/$s-$label-$r.client-perf.txt"
  printf '%s\t%s\t' "$r" "$s-$label" >> "$OUT/reads.tsv"
  # MB/s, READs, server and client µs and context switches per READ
  python3 "$REPO/bench/per-call.py" "$OUT/$s-$label-$r.json" $W/srv.txt $W/cli.txt | cut -f1,2,4- >> "$OUT/reads.tsv"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "$(date -u +%T) round $r" >&2
  for d in 1 4; do
    echo -e "$r\tmemory\t$d\t$($W/wire -d $d 2048 | sed 's/.*mb_per_s=//')" >> "$OUT/wire.tsv"
    echo -e "$r\tsendfile\t$d\t$($W/wire -d $d 2048 1048576 $W/probe.dat | sed 's/.*mb_per_s=//')" >> "$OUT/wire.tsv"
  done
  for s in nfsx ganesha; do
    one "$r" $s 1 1t
    one "$r" $s 1 1t-nopoll --client-config $W/nopoll.toml
    one "$r" $s 4 4t
  done
done
stop_two_servers
rm -rf $W
python3 "$HERE/summary.py" "$OUT" | tee "$OUT/summary.txt"

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
W=/var/tmp/nfsx-depth; rm -rf $W; mkdir -p $W/ex $W/st
cc -O2 -o $W/wire "$REPO/bench/wire.c"
head -c 268435456 /dev/urandom > $W/probe.dat; cat $W/probe.dat > /dev/null
printf 'portmap_port = 0\n' > $W/server.toml
printf 'reply_poll_us = 0\n' > $W/nopoll.toml
cd "$REPO"; git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start > /dev/null 2>&1
"$NFSX" serve $W/ex --listen 127.0.0.1:12100 --state-dir $W/st --config $W/server.toml --log warn & NP=$!
sleep 2
GP=$(pgrep -f ganesha.nfsd | head -1)
declare -A URL=([nfsx]="nfs://127.0.0.1:12100$W/ex?version=3" [ganesha]="nfs://127.0.0.1/export?version=3")
declare -A PID=([nfsx]=$NP [ganesha]=$GP)
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
  python3 - "$r" "$s-$label" "$OUT/$s-$label-$r.json" $W/srv.txt $W/cli.txt >> "$OUT/reads.tsv" <<'PY'
import json, sys
r, case, js, srv, cli = sys.argv[1:]
run = json.load(open(js))["runs"][0]
def stat(f):
    v = {}
    for l in open(f):
        p = l.strip().split(",")
        if len(p) > 2 and p[0][:1].isdigit():
            v[p[2]] = float(p[0])
    return v
s, c, n = stat(srv), stat(cli), run["ops"]
print(f"{r}\t{case}\t{run['mbps']:.0f}\t{n}\t{s['task-clock']*1e3/n:.0f}\t{c['task-clock']*1e3/n:.0f}\t"
      f"{s['context-switches']/n:.2f}\t{c['context-switches']/n:.2f}")
PY
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
kill $NP; wait $NP 2>/dev/null
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop > /dev/null 2>&1
rm -rf $W
python3 "$HERE/summary.py" "$OUT" | tee "$OUT/summary.txt"

#!/bin/bash
# The client's low-water mark for large replies (reply_lowat_max, default
# 1 MiB) against none (0), each against nfsx (this build, its defaults but
# portmap_port = 0) and NFS-Ganesha 4.3 (FSAL_VFS), alternating, with the
# client's and the server's CPU and context switches per call (perf stat).
#   ab.sh OUTDIR [ROUNDS]     (needs perf; starts Ganesha via scripts/ganesha.sh)
#   ORDER="none lowat" runs the two client settings the other way round.
# Rows: 1 MiB sequential reads at 4 threads and at 1, 4 KiB random reads
# at 16 threads (small replies: the mark is never set), NFSv3, ext4.
set -u
OUT=${1:?OUTDIR}; ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-lowat; rm -rf $W; mkdir -p $W
printf 'reply_lowat_max = 1048576\n' > $W/lowat.toml
printf 'reply_lowat_max = 0\n' > $W/none.toml
cd "$REPO"; git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null
. "$REPO/bench/two-servers.sh"
start_two_servers $W 12110
declare -A ROW=(
  [read-1m-4t]="--mode seq-read --io-size 1MiB --threads 4 --size 256MiB"
  [read-1m-1t]="--mode seq-read --io-size 1MiB --threads 1 --size 256MiB"
  [randread-4k-16t]="--mode rand-read --io-size 4KiB --threads 16 --size 64MiB")
echo -e "round\trow\tserver\tclient\tmbps\tops_per_s\tserver_us_per_call\tclient_us_per_call\tserver_cs_per_call\tclient_cs_per_call" > "$OUT/runs.tsv"
one() {  # round row server client
  local r=$1 row=$2 s=$3 c=$4 name="$2-$3-$4-$1"
  perf stat -x, -e task-clock,context-switches -p "${PID[$s]}" -o $W/srv.txt -- sleep 5.8 & local sp=$!
  # shellcheck disable=SC2086
  perf stat -x, -e task-clock,context-switches -o $W/cli.txt "$NFSX" bench data --target "${URL[$s]}" ${ROW[$row]} \
    --client-config $W/$c.toml --duration 5s --no-data-cache --runs 1 --quiet --json "$OUT/$name.json" > /dev/null 2>&1
  wait $sp
  printf '%s\t%s\t%s\t%s\t' "$r" "$row" "$s" "$c" >> "$OUT/runs.tsv"
  # MB/s, calls/s, server and client µs and context switches per call
  python3 "$REPO/bench/per-call.py" "$OUT/$name.json" $W/srv.txt $W/cli.txt | cut -f1,3- >> "$OUT/runs.tsv"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "$(date -u +%T) round $r" >&2
  for row in read-1m-4t read-1m-1t randread-4k-16t; do
    for s in nfsx ganesha; do
      for c in ${ORDER:-lowat none}; do one "$r" $row $s $c; done
    done
  done
done
stop_two_servers
rm -rf $W
python3 "$HERE/summary.py" "$OUT" | tee "$OUT/summary.txt"

#!/bin/bash
# CPU per operation of client and server for one nfsx-bench data point, nfsx then Ganesha.
# usage: prof-data.sh OUTDIR -- bench data args...
set -u
OUT=$1; shift; shift
NFSX=${NFSX:-$(cd "$(dirname "$0")/../../.." && pwd)/target/release/nfsx}
mkdir -p $OUT
W=/var/tmp/pd; rm -rf $W; mkdir -p $W/ex $W/st; printf 'portmap_port = 0\n' > $W/c.toml
cd "$(dirname "$0")/../../.."
$NFSX serve $W/ex --listen 127.0.0.1:12150 --state-dir $W/st --config $W/c.toml --metrics 127.0.0.1:12151 --log warn & sp=$!
sleep 1
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
gp=$(cat /tmp/nfsx-ganesha/ganesha.pid)
for t in nfsx ganesha; do
  if [ $t = nfsx ]; then pid=$sp; url="nfs://127.0.0.1:12150$W/ex?version=3"; else pid=$gp; url="nfs://127.0.0.1/export?version=3"; fi
  perf stat -e task-clock,context-switches -p $pid -o $OUT/$t.server.perf &
  ps_=$!
  perf stat -e task-clock,context-switches -o $OUT/$t.client.perf -- $NFSX bench data "$@" --runs 1 --quiet --target $url > $OUT/$t.bench.txt 2>&1
  kill -INT $ps_; sleep 1
done
kill $sp; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1
for t in nfsx ganesha; do
  echo "== $t"; grep -E "ops_per_sec|mbps" $OUT/$t.bench.txt | head -2
  grep -E "ops \(|WRITE|READ" $OUT/$t.bench.txt | head -3
  echo server: $(grep -E "task-clock|context-switches" $OUT/$t.server.perf | awk '{print $1, $2}' | tr '\n' ' ')
  echo client: $(grep -E "task-clock|context-switches" $OUT/$t.client.perf | awk '{print $1, $2}' | tr '\n' ' ')
done

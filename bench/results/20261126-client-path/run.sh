#!/bin/bash
# The nfsx-client rows with two builds of the client (OLD: the call handed
# to the connection's task and a writer task; this build: the only call
# outstanding written by its caller), each against nfsx and NFS-Ganesha 4.3
# side by side, alternating runs. Reads with the client's data cache off
# (--no-data-cache: every read a READ).
#   OLD=/path/to/previous/nfsx run.sh OUTDIR [FILES]
set -u
OUT=${1:?OUTDIR}; FILES=${2:-50000}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=previous nfsx binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/var/tmp/nfsx-clientpath; rm -rf $W; mkdir -p $W/ex $W/st
# sync_metadata = false only shortens the untimed creation of the trees,
# which list, stat and the reads do not touch.
printf 'portmap_port = 0\n[localfs]\nsync_metadata = false\n' > $W/c.toml
cd "$REPO"
PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start >/dev/null 2>&1
"$NFSX" serve $W/ex --listen 127.0.0.1:12060 --state-dir $W/st --config $W/c.toml --metrics 127.0.0.1:12061 --log warn & sp=$!
trap 'kill $sp 2>/dev/null; PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop >/dev/null 2>&1' EXIT
sleep 1
T=(--target "nfs://127.0.0.1:12060$W/ex?version=3" --target "nfs://127.0.0.1/export?version=3")
for c in old new; do
  bin=$NFSX; [ $c = old ] && bin=$OLD
  "$bin" bench data --mode rand-read --io-size 4KiB --threads 1 --size 16MiB --duration 3s --runs 5 --no-data-cache --quiet "${T[@]}" \
    --json "$OUT/$c-rand-read-4k-1t.json" > "$OUT/$c-rand-read-4k-1t.txt" 2>&1
  "$bin" bench data --mode rand-read --io-size 4KiB --threads 16 --size 64MiB --duration 5s --runs 5 --no-data-cache --quiet "${T[@]}" \
    --json "$OUT/$c-rand-read-4k-16t.json" > "$OUT/$c-rand-read-4k-16t.txt" 2>&1
  "$bin" bench data --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --duration 5s --runs 5 --no-data-cache --quiet "${T[@]}" \
    --json "$OUT/$c-seq-read-1m-4t.json" > "$OUT/$c-seq-read-1m-4t.txt" 2>&1
  "$bin" bench metadata --op list,stat --files "$FILES" --runs 3 --quiet "${T[@]}" \
    --json "$OUT/$c-liststat.json" > "$OUT/$c-liststat.txt" 2>&1
done
python3 - "$OUT" <<'PY'
import json, sys, statistics, glob, os
out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, '*.json'))):
    d = json.load(open(f))
    rows = {}
    for r in d['runs']:
        if not r.get('ok', True):
            continue
        k = (tuple(sorted(r['point'].items())), 'nfsx' if ':12060' in r['target'] else 'ganesha')
        rows.setdefault(k, []).append((r['ops_per_sec'], r.get('client_cpu_us_per_rpc') or 0))
    pts = sorted({k[0] for k in rows})
    for p in pts:
        n = [x[0] for x in rows.get((p, 'nfsx'), [])]; g = [x[0] for x in rows.get((p, 'ganesha'), [])]
        nc = [x[1] for x in rows.get((p, 'nfsx'), [])]; gc = [x[1] for x in rows.get((p, 'ganesha'), [])]
        if n and g:
            print(f"{os.path.basename(f):28} {dict(p)}  nfsx {statistics.median(n):>10.0f}  ganesha {statistics.median(g):>10.0f}  ratio {statistics.median(n)/statistics.median(g):.2f}  client us/rpc {statistics.median(nc):.1f} / {statistics.median(gc):.1f}")
PY

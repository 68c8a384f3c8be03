#!/usr/bin/env bash
# Several nfsx heads over one Ceph cluster, each in its own network
# namespace (scripts/heads.sh, which starts the cluster too), driven by
# `nfsx bench multi-client` from the host (docs/SCALE-OUT.md):
#
#   bench/multi-head.sh heads OUT [RUNS]
#       aggregate 1 MiB sequential write, then read of a file another client
#       wrote, 1, 2 and 4 clients spread over 1, 2 and 3 heads; then the
#       store alone (`rados bench`, 1 MiB objects, 1 and 4 in flight).
#       SIZE [128MiB] per client.
#   bench/multi-head.sh pnfs OUT [RUNS]
#       pNFS flexible-file layouts: 4 clients through one head, through
#       head 1 handing out layouts that name heads 1-3 as data servers, and
#       spread over the three heads by address. SIZE [256MiB].
#   bench/multi-head.sh failover OUT [RUNS]
#       4 clients write SIZE [1GiB] each through two heads (clients 0 and 2
#       on head 1) and read back every byte (--verify); runs without a
#       failure alternate with runs in which head 1 gets SIGKILL KILL_AFTER
#       [4] s in and head 2 takes over its address (heads.sh takeover 1 2),
#       after which head 1 is started again. OUT/summary.txt: write times
#       with and without the failure, and when the takeover and the clients'
#       reclaim were done.
#
# RUNS defaults to 5. Needs root and a release build; CEPH_OSD_SIZE [24G].
set -uo pipefail
STUDY=${1:?usage: multi-head.sh heads|pnfs|failover OUT [RUNS]}
OUT=${2:?OUT}
RUNS=${3:-5}
. "$(dirname "$0")/lib.sh"
export CEPH_OSD_SIZE=${CEPH_OSD_SIZE:-24G}
HEADS_DIR=${HEADS_DIR:-/tmp/nfsx-heads}
N=10.78.0
OUT=$(out_dir "$OUT")
cd "$REPO" || exit 1
trap 'scripts/heads.sh stop >/dev/null 2>&1' EXIT
multi() {  # NAME ARGS...
  local name=$1
  shift
  "$NFSX" bench multi-client --quiet --runs "$RUNS" --io-size 1MiB "$@" \
    --json "$OUT/$name.json" --report "$OUT/$name" | tee "$OUT/$name.txt"
}

case $STUDY in
heads)
  scripts/heads.sh start 3 | tee "$OUT/heads.txt"
  eval "$(grep '^CEPH_CONF=' "$OUT/heads.txt")"
  multi multi-client --clients 1,2,4 --size "${SIZE:-128MiB}" --target "nfs://$N.1/heads?version=4.1" \
    --target "nfs://$N.1,$N.2/heads?version=4.1" --target "nfs://$N.1,$N.2,$N.3/heads?version=4.1"
  for t in 1 4; do
    rados -c "$CEPH_CONF" bench -p cephfs_data 10 write -b 1M -t $t --no-cleanup |
      grep -E 'Bandwidth \(MB|Average Latency' | sed "s/^/write -t $t: /"
    rados -c "$CEPH_CONF" bench -p cephfs_data 10 seq -t $t | grep -E 'Bandwidth \(MB|Average Latency' | sed "s/^/read -t $t: /"
    rados -c "$CEPH_CONF" -p cephfs_data cleanup >/dev/null
  done | tee "$OUT/rados.txt"
  ;;
pnfs)
  export HEADS_CONFIG_1="[core]
pnfs_data_servers = [\"$N.1:2049\", \"$N.2:2049\", \"$N.3:2049\"]"
  scripts/heads.sh start 3 | tee "$OUT/heads.txt"
  multi multi-client --clients 4 --size "${SIZE:-256MiB}" --target "nfs://$N.2/heads?version=4.1" \
    --target "nfs://$N.1/heads?version=4.1" --target "nfs://$N.1,$N.2,$N.3/heads?version=4.1"
  ;;
failover)
  size=${SIZE:-1GiB}
  kill_after=${KILL_AFTER:-4}
  scripts/heads.sh start 2 >"$OUT/heads.txt"
  conf=$HEADS_DIR/ceph/ceph.conf
  one() {  # JSON
    "$NFSX" bench multi-client --quiet --runs 1 --clients 4 --size "$size" --io-size 1MiB --verify \
      --target "nfs://$N.1,$N.2/heads" --json "$1" >"${1%.json}.txt" 2>"${1%.json}.log"
  }
  # A deleted file's objects go when the MDS purges it, later: wait for
  # that between runs, or the OSD fills over the runs (NFS4ERR_NOSPC).
  purged() {
    local used _
    for _ in $(seq 120); do
      used=$(ceph -c "$conf" df -f json 2>/dev/null | python3 -c '
import json, sys
print(next(p["stats"]["stored"] for p in json.load(sys.stdin)["pools"] if p["name"] == "cephfs_data"))' || echo 0)
      ((used < 1 << 30)) && return 0
      sleep 1
    done
    log "cephfs_data still holds $used bytes"
  }
  for r in $(seq "$RUNS"); do
    purged
    one "$OUT/plain-$r.json"
    purged
    start=$(date +%s.%N)
    one "$OUT/failure-$r.json" &
    pid=$!
    sleep "$kill_after"
    killed=$(date +%s.%N)
    scripts/heads.sh kill 1 2>/dev/null
    scripts/heads.sh takeover 1 2 >"$OUT/takeover-$r.txt" 2>&1
    taken=$(date +%s.%N)
    status=0
    wait "$pid" || status=$?
    # When head 2 saw the last taken-over client finish reclaiming.
    reclaimed=$(date -d "$(grep 'grace period over' "$HEADS_DIR/head2/nfsx.log" | tail -1 | cut -c1-26)" +%s.%N)
    echo "$r start=$start killed=$killed taken_over=$taken reclaimed=$reclaimed bench_status=$status" | tee -a "$OUT/times.txt"
    scripts/heads.sh restart 1 2>/dev/null
  done
  python3 - "$OUT" "$RUNS" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
run = lambda kind, r: json.load(open(f"{out}/{kind}-{r}.json"))["runs"][0]
times = {}
for line in open(f"{out}/times.txt"):
    f = line.split()
    times[int(f[0])] = {k: float(v) for k, v in (x.split("=") for x in f[1:])}
rows = []
for r in range(1, runs + 1):
    p, f, t = run("plain", r), run("failure", r), times[r]
    rows.append((p["write_s"], f.get("write_s"), f["ok"], t["taken_over"] - t["killed"], t["reclaimed"] - t["killed"]))
    print(f"run {r}: plain write {p['write_s']:.2f} s ({p['write_mbps']:.0f} MB/s, verified {p['ok']}); "
          f"head 1 killed {f.get('write_s', float('nan')):.2f} s ({f.get('write_mbps', 0):.0f} MB/s, verified {f['ok']}); "
          f"takeover done {rows[-1][3]:.2f} s and reclaim done {rows[-1][4]:.2f} s after the kill")
med = statistics.median
print(f"median: plain {med([x[0] for x in rows]):.2f} s, with a failure {med([x[1] for x in rows if x[1]]):.2f} s "
      f"(+{med([x[1] - x[0] for x in rows if x[1]]):.2f} s per run), takeover {med([x[3] for x in rows]):.2f} s, "
      f"reclaimed {med([x[4] for x in rows]):.2f} s after the kill; {sum(1 for x in rows if x[2])}/{runs} failure runs verified")
PY
  ;;
*)
  echo "unknown study $STUDY" >&2
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Head failure during a multi-client write: 4 NFSv4 clients (nfsx's) write
# SIZE each through two heads (clients 0 and 2 on head 1), head 1 is killed
# with SIGKILL KILL_AFTER seconds in, head 2 takes over its address
# (scripts/heads.sh takeover 1 2: NFSv4 takeover in RADOS, Ceph session
# eviction, address move), the clients reclaim there and finish; every
# byte is then read back through the other clients and compared with what
# was written (`--verify`). Runs without a failure alternate with runs
# with one, RUNS of each; head 1 is restarted (and given its clients back)
# after each failure.
# Needs root and a release build; starts and stops everything itself.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/nfsx-failover}
RUNS=${RUNS:-5}
SIZE=${SIZE:-1GiB}
KILL_AFTER=${KILL_AFTER:-4}
export CEPH_OSD_SIZE=${CEPH_OSD_SIZE:-24G}
NFSX=target/release/nfsx
LOG2=/tmp/nfsx-heads/head2/nfsx.log
rm -rf "$OUT" && mkdir -p "$OUT"
scripts/heads.sh start 2 >"$OUT/heads.txt"
trap 'scripts/heads.sh stop' EXIT
bench() {
  "$NFSX" bench multi-client --quiet --runs 1 --clients 4 --size "$SIZE" --io-size 1MiB --verify \
    --target "nfs://10.78.0.1,10.78.0.2/heads" --json "$1" >"${1%.json}.txt" 2>"${1%.json}.log"
}
now() { date +%s.%N; }
# Deleted files' objects go when the MDS purges them, later: wait for that
# between runs, or the OSD fills up over the runs (NFS4ERR_NOSPC).
CEPH_CONF=/tmp/nfsx-heads/ceph/ceph.conf
wait_purged() {
  for _ in $(seq 120); do
    used=$(ceph -c "$CEPH_CONF" df -f json 2>/dev/null | python3 -c '
import json, sys
print(next(p["stats"]["stored"] for p in json.load(sys.stdin)["pools"] if p["name"] == "cephfs_data"))' || echo 0)
    ((used < 1 << 30)) && return 0
    sleep 1
  done
  echo "cephfs_data still holds $used bytes" >&2
}
for r in $(seq "$RUNS"); do
  wait_purged
  bench "$OUT/plain-$r.json"
  wait_purged
  start=$(now)
  bench "$OUT/failure-$r.json" &
  pid=$!
  sleep "$KILL_AFTER"
  killed=$(now)
  scripts/heads.sh kill 1 2>/dev/null
  scripts/heads.sh takeover 1 2 >"$OUT/takeover-$r.txt" 2>&1
  taken=$(now)
  status=0
  wait "$pid" || status=$?
  # When head 2 saw the last taken-over client finish reclaiming.
  reclaimed=$(grep 'grace period over' "$LOG2" | tail -1 | cut -c1-26)
  reclaimed=$(date -d "$reclaimed" +%s.%N)
  echo "$r start=$start killed=$killed taken_over=$taken reclaimed=$reclaimed bench_status=$status" | tee -a "$OUT/times.txt"
  scripts/heads.sh restart 1 2>/dev/null
done
python3 - "$OUT" "$RUNS" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def run(kind, r):
    return json.load(open(f"{out}/{kind}-{r}.json"))["runs"][0]
times = {}
for line in open(f"{out}/times.txt"):
    f = line.split()
    times[int(f[0])] = {k: float(v) for k, v in (x.split("=") for x in f[1:])}
rows = []
for r in range(1, runs + 1):
    p, f, t = run("plain", r), run("failure", r), times[r]
    rows.append((p["write_s"], f.get("write_s"), f["ok"], t["taken_over"] - t["killed"], t["reclaimed"] - t["killed"]))
    print(f"run {r}: plain write {p['write_s']:.2f} s ({p['write_mbps']:.0f} MB/s, verified {p['ok']}); "
          f"with head 1 killed {f.get('write_s', float('nan')):.2f} s ({f.get('write_mbps', 0):.0f} MB/s, verified {f['ok']}); "
          f"takeover done {rows[-1][3]:.2f} s and reclaim done {rows[-1][4]:.2f} s after the kill")
med = lambda xs: statistics.median(xs)
print(f"median: plain {med([x[0] for x in rows]):.2f} s, with a failure {med([x[1] for x in rows if x[1]]):.2f} s "
      f"(+{med([x[1] - x[0] for x in rows if x[1]]):.2f} s per run), takeover {med([x[3] for x in rows]):.2f} s, "
      f"reclaimed {med([x[4] for x in rows]):.2f} s after the kill; {sum(1 for x in rows if x[2])}/{runs} failure runs verified")
PY

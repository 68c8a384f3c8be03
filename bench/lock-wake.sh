#!/usr/bin/env bash
# Blocked NFSv3 locks through `nfsx mount`, against nfsx and NFS-Ganesha 4.3
# side by side: how soon a waiter has the lock after the unlock, granted by
# the server's callback or asked for again (`[nlm] callbacks = false`), and
# how many NLM LOCK calls each blocked lock took. Runs bench/lock-wake.py
# on each mount, the targets alternating within each run.
#
#   bench/lock-wake.sh OUT [RUNS] [ROUNDS] [HOLD_MS]    (root: FUSE, Ganesha)
#
# Defaults: 3 runs of 30 rounds, the lock held 300 ms. Targets, in order:
# nfsx-callback nfsx-poll ganesha-callback ganesha-poll local (TARGETS).
#
# LOCK calls are counted by each server: nfsx's metrics
# (nfsx_requests_total{proc="nlm4.LOCK"}), Ganesha's log at NLM = DEBUG (one
# "Calling nlm4_Lock" line a call). The holder's own LOCK, one a round, is
# taken off. Ganesha calls a lock client back at the host its caller name
# names; the mount calls itself 127.0.0.2, the lock clients' host
# scripts/ganesha.sh sets up, and registers its lock service there.
#
# Writes OUT/RUN-TARGET.txt (lock-wake.py's line, the LOCK count) and
# prints one line a target: the median of the runs' medians, the range of
# all rounds, LOCK calls per blocked lock.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
OUT=$(out_dir "${1:?usage: lock-wake.sh OUT [RUNS] [ROUNDS] [HOLD_MS]}")
RUNS=${2:-3}
ROUNDS=${3:-30}
HOLD=${4:-300}
TARGETS=${TARGETS:-nfsx-callback nfsx-poll ganesha-callback ganesha-poll local}
PORT=2070
MNT=$OUT/mnt
LOCAL=$OUT/local
export GANESHA_LOG_COMPONENTS="NLM = DEBUG;"

MOUNT_PID=
unmount() {
  [[ -n $MOUNT_PID ]] || return 0
  "$NFSX" umount "$MNT" >/dev/null 2>&1 || kill -TERM "$MOUNT_PID" 2>/dev/null
  wait "$MOUNT_PID" 2>/dev/null
  MOUNT_PID=
}
trap 'unmount; stop_all' EXIT

# client_conf TARGET: the mount's client settings.
client_conf() {
  local callbacks=true
  [[ $1 == *-poll ]] && callbacks=false
  case $1 in
    nfsx-*) printf '[nlm]\ncallbacks = %s\nportmap = "127.0.0.1:%s"\n' "$callbacks" "$PORT" ;;
    ganesha-*) printf 'machine_name = "127.0.0.2"\n[nlm]\ncallbacks = %s\nportmap = "127.0.0.2:111"\nprocess_names = false\n' "$callbacks" ;;
  esac
}

# locks TARGET: LOCK calls the target's server has answered so far.
locks() {
  case $1 in
    nfsx-*) curl -s "http://127.0.0.1:$((PORT + 1))/metrics" |
      awk '/^nfsx_requests_total\{proc="nlm4.LOCK"\}/ {n = $2} END {print n + 0}' ;;
    ganesha-*) grep -c "Calling nlm4_Lock " "$GANESHA_DIR/ganesha.log" ;;
  esac
}

# one RUN TARGET: lock-wake.py on the target, then its LOCK count.
one() {
  local out=$OUT/$1-$2.txt dir url before after
  case $2 in
    local) mkdir -p "$LOCAL" && python3 "$BENCH/lock-wake.py" "$LOCAL" "$ROUNDS" "$HOLD" >"$out"; return ;;
    nfsx-*) url="${URL[nfsx]}?version=3" ;;
    ganesha-*) url="${URL[ganesha]}?version=3" ;;
  esac
  client_conf "$2" >"$OUT/client-$2.toml"
  mkdir -p "$MNT"
  "$NFSX" mount --client-config "$OUT/client-$2.toml" --log warn "$url" "$MNT" >"$OUT/mount-$1-$2.log" 2>&1 &
  MOUNT_PID=$!
  for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
  mountpoint -q "$MNT" || { log "$2 did not mount; see $OUT/mount-$1-$2.log"; unmount; return 1; }
  before=$(locks "$2")
  python3 "$BENCH/lock-wake.py" "$MNT" "$ROUNDS" "$HOLD" >"$out" || true
  after=$(locks "$2")
  unmount
  echo "LOCK calls: $((after - before))" >>"$out"
}

nfsx_start nfsx "$OUT/nfsx" "$PORT" || exit 1
ganesha_start "$OUT/ganesha" || exit 1
for run in $(seq "$RUNS"); do
  for t in $TARGETS; do
    log "run $run: $t"
    one "$run" "$t"
  done
done

python3 - "$OUT" "$RUNS" "$ROUNDS" "$TARGETS" <<'PY'
import re, statistics, sys
out, runs, rounds, targets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
for t in targets:
    meds, lows, highs, calls = [], [], [], []
    for r in range(1, runs + 1):
        try:
            text = open(f"{out}/{r}-{t}.txt").read()
        except OSError:
            continue
        m = re.search(r"median ([\d.]+) min ([\d.]+) max ([\d.]+)", text)
        if not m:
            continue
        meds.append(float(m[1])); lows.append(float(m[2])); highs.append(float(m[3]))
        c = re.search(r"LOCK calls: (\d+)", text)
        if c:
            calls.append((int(c[1]) - rounds) / rounds)
    if not meds:
        print(f"{t}: no result"); continue
    per = f", LOCK calls per blocked lock {statistics.median(calls):.1f}" if calls else ""
    print(f"{t}: granted after the unlock {statistics.median(meds):.2f} ms median of {len(meds)} runs "
          f"({min(lows):.2f}-{max(highs):.2f} over all rounds){per}")
PY

#!/usr/bin/env bash
# One request in flight through a real third-party client: smallops
# (../shared/peers/smallops.c, libnfs 4.0) creates N files, lists them,
# stats and removes each, one RPC at a time, against nfsx builds and
# NFS-Ganesha 4.3 in turn, round after round.
#
#   bench/smallops.sh OUT [RUNS] [N]          RUNS 5, N 2000
#
# Environment (defaults in brackets; see also bench/lib.sh):
#   BUILDS ["new ganesha"]  the servers of each round, in this order:
#            new      $NFSX under SERVER_NEW
#            old      $OLD (another nfsx binary; $NFSX if unset) under SERVER_OLD
#            ganesha  NFS-Ganesha (started once, kept up)
#   SERVER_NEW, SERVER_OLD [""]  extra TOML lines for either nfsx, e.g.
#            SERVER_OLD='lone_poll_us = 0' to measure a setting
#   NFSVERS [3]  3, or 4 (libnfs speaks NFSv4.0)
#   PLACE ["free"]  placements each server runs under, every round:
#            free    none, as every other row runs
#            server  the server's threads on CPU 0, the client anywhere
#            both    the server's threads and the client on CPU 0
#   BASE [/dev/shm]  where the exports live; nfsx exports `async` (SYNC=1:
#            `sync`), so on tmpfs a request costs CPU only
#   SMALLOPS  a smallops binary; if unset, SMALLOPS_SRC
#            [../shared/peers/smallops.c] is built into OUT (needs libnfs-dev)
#
# Writes OUT/smallops.txt (every phase of every run, and nfsx's server CPU
# per RPC of each run: /proc utime + stime over the run, RPCs from its
# metrics) and OUT/summary.txt (bench/summarize.py OUT).
set -uo pipefail
OUT=${1:?usage: smallops.sh OUT [RUNS] [N]}
RUNS=${2:-5}
N=${3:-2000}
. "$(dirname "$0")/lib.sh"
BUILDS=${BUILDS:-new ganesha}
V=${NFSVERS:-3}
PLACE=${PLACE:-free}
BASE=${BASE:-/dev/shm}
[[ ${SYNC:-0} == 1 ]] || ASYNC=1
OUT=$(out_dir "$OUT")
if [[ -z ${SMALLOPS:-} ]]; then
  SMALLOPS=$OUT/smallops
  cc -O2 -o "$SMALLOPS" "${SMALLOPS_SRC:-$REPO/../shared/peers/smallops.c}" -lnfs || exit 1
fi
trap 'stop_all; rm -rf "$BASE/nfsx-smallops"' EXIT
W=$BASE/nfsx-smallops
TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rpcs() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^nfsx_requests_total/ {s += $2} END {print s + 0}'; }
place() {  # PID HOW: the process's threads anywhere, or on CPU 0
  if [[ $2 == free ]]; then
    taskset -a -p -c "0-$(($(nproc) - 1))" "$1" >/dev/null
  else
    taskset -a -p -c 0 "$1" >/dev/null
  fi
}

if [[ " $BUILDS " == *" ganesha "* ]]; then ganesha_start "$W/ganesha" || exit 1; fi
for r in $(seq "$RUNS"); do
  for b in $BUILDS; do
    for how in $PLACE; do
      label=$b
      [[ $PLACE == free ]] || label=$b-$how
      client=()
      [[ $how == both ]] && client=(taskset -c 0)
      echo "$label run $r" >>"$OUT/smallops.txt"
      if [[ $b == ganesha ]]; then
        place "${PID[ganesha]}" "$how"
        "${client[@]}" "$SMALLOPS" "$GANESHA_URL?version=$V" "$N" >>"$OUT/smallops.txt"
        sleep 1
        continue
      fi
      if [[ $b == old ]]; then bin=${OLD:-$NFSX}; toml=${SERVER_OLD:-}; else bin=$NFSX; toml=${SERVER_NEW:-}; fi
      nfsx_start "$b" "$W/$b" 12090 "$toml" "$bin" || continue
      place "${PID[$b]}" "$how"
      c0=$(cpu_ticks "${PID[$b]}")
      r0=$(rpcs 12091)
      "${client[@]}" "$SMALLOPS" "nfs://127.0.0.1$W/$b/ex?version=$V&nfsport=12090&mountport=12090" "$N" >>"$OUT/smallops.txt"
      c1=$(cpu_ticks "${PID[$b]}")
      r1=$(rpcs 12091)
      awk -v c="$((c1 - c0))" -v t="$TCK" -v n="$((r1 - r0))" \
        'BEGIN {if (n > 0) printf "server_cpu_us_per_rpc %.1f\n", c * 1e6 / t / n}' >>"$OUT/smallops.txt"
      nfsx_stop "$b"
    done
  done
done
[[ -n ${PID[ganesha]:-} ]] && place "${PID[ganesha]}" free
python3 "$BENCH/summarize.py" "$OUT" | tee "$OUT/summary.txt"

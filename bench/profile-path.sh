#!/usr/bin/env bash
# Profiles nfsx's request path with public tools: context switches, CPU
# migrations and system calls per RPC, for three one-request-at-a-time
# libnfs workloads (Debian libnfs-utils / libnfs-dev):
#   read    nfs-cat of a SIZE_MIB file to /dev/null (1 MiB READs, page cache warm)
#   smallops  ../shared/peers/smallops.c: N creates, a listing, N stats, N unlinks
# Counts come from `perf stat -e context-switches,cpu-migrations` on the
# server process (every thread) and `strace -f -c` in a second pass; the RPC
# count from nfsx's own Prometheus counters.
#
#   bench/profile-path.sh [-b NFSX_BINARY] [-s SIZE_MIB] [-n FILES] [-o OUTDIR]
#   NFSX_CONFIG='...'   extra TOML settings for the server
#   SMALLOPS_SRC [../shared/peers/smallops.c]
# OUTDIR defaults to out/profile-path-<UTC time> (out/ is not tracked).
set -euo pipefail
cd "$(dirname "$0")/.."

NFSX=target/release/nfsx
SIZE_MIB=1024
FILES=2000
OUT=out/profile-path-$(date -u +%Y%m%dT%H%M%SZ)
while getopts "b:s:n:o:" o; do
  case $o in
    b) NFSX=$OPTARG ;; s) SIZE_MIB=$OPTARG ;; n) FILES=$OPTARG ;; o) OUT=$OPTARG ;;
    *) exit 2 ;;
  esac
done
for t in perf strace nfs-cat cc; do
  command -v $t >/dev/null || { echo "missing $t (apt-get install linux-perf strace libnfs-utils gcc)" >&2; exit 1; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /var/tmp/nfsx-profile.XXXXXX)
EXPORT=$WORK/export
mkdir -p "$EXPORT" "$WORK/state"
SMALLOPS=$WORK/smallops
cc -O2 -o "$SMALLOPS" "${SMALLOPS_SRC:-../shared/peers/smallops.c}" -lnfs

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
MPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'portmap_port = 0\n%b\n' "${NFSX_CONFIG:-}" >"$WORK/nfsx.toml"
pid=
stop() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap 'stop; rm -rf "$WORK"' EXIT
start() {
  "$NFSX" serve "$EXPORT" --listen 127.0.0.1:$PORT --state-dir "$WORK/state" --config "$WORK/nfsx.toml" \
    --metrics 127.0.0.1:$MPORT --log warn 2>>"$OUT/server.log" &
  pid=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && return; sleep 0.1; done
  echo "server did not start" >&2; exit 1
}
rpcs() { curl -s "http://127.0.0.1:$MPORT/metrics" | awk '/^nfsx_requests_total/ {s+=$2} END {print s+0}'; }
URL="nfs://127.0.0.1$EXPORT"
Q="version=3&nfsport=$PORT&mountport=$PORT"

dd if=/dev/urandom of="$EXPORT/big" bs=1M count="$SIZE_MIB" status=none
cat "$EXPORT/big" >/dev/null

# One pass under perf stat, one under strace (strace slows everything, so
# its pass gives counts, not times).
measure() { # name command...
  local name=$1; shift
  start
  "$@" >/dev/null 2>&1 || true # warm the server's caches and the page cache
  local r0; r0=$(rpcs)
  local t0; t0=$(date +%s.%N)
  perf stat -e context-switches,cpu-migrations,task-clock -x, -p "$pid" -o "$OUT/$name.perf" -- "$@" >"$OUT/$name.out" 2>&1
  local t1; t1=$(date +%s.%N)
  local n=$(( $(rpcs) - r0 ))
  strace -f -c -w -p "$pid" -o "$OUT/$name.strace" &
  local sp=$!
  sleep 0.5
  "$@" >/dev/null 2>&1 || true
  kill -INT $sp; wait $sp 2>/dev/null || true
  local n2=$(( $(rpcs) - r0 - n ))
  stop
  local cs mig cpu
  cs=$(awk -F, '$3=="context-switches" {print $1}' "$OUT/$name.perf")
  mig=$(awk -F, '$3=="cpu-migrations" {print $1}' "$OUT/$name.perf")
  cpu=$(awk -F, '$3=="task-clock" {print $1}' "$OUT/$name.perf")
  local sys; sys=$(awk '/^100.00|total$/ {print $(NF-2)}' "$OUT/$name.strace" | tail -1)
  printf '%-10s rpcs=%-7s wall_s=%-7.3f ctxsw/rpc=%-6.2f migr/rpc=%-6.3f server_cpu_us/rpc=%-7.1f syscalls/rpc=%.2f\n' \
    "$name" "$n" "$(echo "$t1 - $t0" | bc)" "$(echo "scale=3; $cs / $n" | bc)" "$(echo "scale=4; $mig / $n" | bc)" \
    "$(echo "scale=2; $cpu * 1000 / $n" | bc)" "$(echo "scale=3; ${sys:-0} / $n2" | bc)" | tee -a "$OUT/summary.txt"
}
measure read bash -c 'exec nfs-cat "$1" >/dev/null' _ "$URL/big?$Q"
measure smallops "$SMALLOPS" "$URL?$Q" "$FILES"
echo "per-syscall counts: $OUT/*.strace; raw perf: $OUT/*.perf" | tee -a "$OUT/summary.txt"

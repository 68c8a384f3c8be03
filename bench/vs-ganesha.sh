#!/usr/bin/env bash
# nfsx vs NFS-Ganesha 4.3 (FSAL_VFS), side by side on this machine, same client.
#
#   bench/vs-ganesha.sh [-n RUNS] [-s SIZE_MIB] [-f FILES] [-o OUTDIR]
#
# For run i = 1..RUNS it starts nfsx, measures, stops it, then starts Ganesha,
# measures the same way, stops it (A B A B ...; ORDER=abba swaps the order in
# even runs).  Each system is measured with Debian's libnfs 4.0.0 client over
# loopback, NFSv3:
#   write        nfs-cp /dev/shm/SRC nfs://.../f      (1 MiB UNSTABLE WRITEs, COMMIT at close)
#   read         nfs-cp nfs://.../f /dev/shm/DST      (1 MiB READs; server page cache warm)
#   read-devnull nfs-cat nfs://.../f > /dev/null      (the same READs, no local page allocation)
#   split        bench/seqwrite.c: the same writes as nfs-cp, clock read after the last
#                WRITE reply and after COMMIT -> write-nocommit, commit, write-withcommit
#   create       nfsops URL 'mkdir /c-i' 'createmany /c-i FILES'   (CREATE + close, one at a time)
# and, as a ceiling, the same file copied by dd on the local file system ("local":
# write = dd bs=1M conv=fsync, read-devnull = dd bs=1M of=/dev/null from the page cache),
# and the wire's limit for the read pattern (bench/wire.c: 128-byte requests each
# answered by 1 MiB over one loopback connection, from memory ("wire") and by
# sendfile from the file ("wire-sendfile"); "wire-copy" is "wire" with the
# client copying each reply once more, as nfs-cat's libnfs does).
# The file written over NFS is compared with the source (locally) and read back once
# through NFS and compared (untimed): a mismatch makes the sample ok=0.
#
# This VM returns freed guest memory to the host after a few seconds (virtio
# balloon free page reporting), and the first touch of such memory is slow: a
# local 1 GiB dd into the page cache takes 0.5 s with recently freed memory
# and 2-3 s without.  So before every timed transfer the script touches and
# frees WARM_MIB of memory (in /dev/shm), and waits for an idle machine before
# starting each server (not only each run), so both servers start alike.
# Every sample goes to OUTDIR/samples.csv; bench/summarize.py turns it into a
# Markdown table (bench/standing-table.sh runs this script for the libnfs
# rows of docs/BENCHMARKS.md).  nfsx runs with --metrics, and the
# per-procedure counters are saved after each phase (OUTDIR/metrics/).
#
# Environment (defaults in brackets):
#   RUNS [5]  SIZE_MIB [1024]  FILES [2000]  OUTDIR [out/vs-ganesha-<UTC time>]
#   NFSX [target/release/nfsx]   NFSX_PORT [12050]   METRICS_PORT [9049]
#   NFSX_CONFIG []     extra TOML lines for nfsx (e.g. "[localfs]\nsync_metadata = false")
#   GANESHA_NFS_PORT [12049]  GANESHA_MNT_PORT [12048]
#   PEERS_DIR [../shared/peers next to the repository]  holds ganesha.sh, which starts
#             Ganesha on GANESHA_NFS_PORT/GANESHA_MNT_PORT (EXPORT_DIR, NFS_PORT,
#             MNT_PORT, GANESHA_STATE are passed to it)
#   WORK [/var/tmp/nfsx-bench]  exported directories (same file system for both servers)
#   SRC [/dev/shm/nfsx-bench-src-<SIZE>m]  source file, random bytes, kept between invocations
#   WAIT_IDLE [0]   seconds without any rustc process to wait for before each server start (max 15 min)
#   WARM_MIB [2048] memory touched and freed right before each timed transfer (0 = off)
#   ORDER [abab]    abab: nfsx first in every run; abba: Ganesha first in even runs
#   TIMEOUT [600]   seconds allowed for any single client command
#   SKIP [] space-separated tests or systems to skip (write read read-devnull split create local)
#
# Needs root for apt-get (installs nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils
# libnfs-dev when missing) and for Ganesha/rpcbind (port 111).  Ganesha and its
# rpcbind are always stopped on exit, so port 111 is free afterwards.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${RUNS:-5}
SIZE_MIB=${SIZE_MIB:-1024}
FILES=${FILES:-2000}
OUTDIR=${OUTDIR:-}
while getopts "n:s:f:o:h" opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    s) SIZE_MIB=$OPTARG ;;
    f) FILES=$OPTARG ;;
    o) OUTDIR=$OPTARG ;;
    *) sed -n '2,30p' "$0"; exit 2 ;;
  esac
done
OUTDIR=${OUTDIR:-$REPO/out/vs-ganesha-$(date -u +%Y%m%dT%H%M%SZ)}
NFSX=${NFSX:-$REPO/target/release/nfsx}
NFSX_PORT=${NFSX_PORT:-12050}
METRICS_PORT=${METRICS_PORT:-9049}
NFSX_CONFIG=${NFSX_CONFIG:-}
GANESHA_NFS_PORT=${GANESHA_NFS_PORT:-12049}
GANESHA_MNT_PORT=${GANESHA_MNT_PORT:-12048}
PEERS_DIR=${PEERS_DIR:-$(cd "$REPO/../shared/peers" 2>/dev/null && pwd || echo /work/shared/peers)}
WORK=${WORK:-/var/tmp/nfsx-bench}
SRC=${SRC:-/dev/shm/nfsx-bench-src-${SIZE_MIB}m}
WAIT_IDLE=${WAIT_IDLE:-0}
WARM_MIB=${WARM_MIB:-2048}
ORDER=${ORDER:-abab}
TIMEOUT=${TIMEOUT:-600}
SKIP=${SKIP:-}

mkdir -p "$OUTDIR"/{state,metrics,logs}
OUTDIR=$(cd "$OUTDIR" && pwd)
CSV=$OUTDIR/samples.csv
BIN=$OUTDIR/state/bin
NFSX_DIR=$WORK/nfsx-export
GAN_DIR=$WORK/ganesha-export
export GANESHA_STATE=$OUTDIR/state/ganesha
DST=/dev/shm/nfsx-bench-dst.$$
WARM=/dev/shm/nfsx-bench-warm.$$
LOCAL_DIR=$WORK/local
BUSYLOG=$OUTDIR/logs/rustc-seen.log

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$OUTDIR/logs/bench.log" >&2; }
skip() { [[ " $SKIP " == *" $1 "* ]]; }

# ---------------------------------------------------------------- packages
need=()
for p in nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils libnfs-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]})); then
  log "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
for t in nfs-cp ganesha.nfsd rpcbind rpcinfo cc curl python3; do
  command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
[[ -x $NFSX ]] || { echo "no nfsx binary at $NFSX (cargo build --release -p nfsx)" >&2; exit 1; }
[[ -x $PEERS_DIR/ganesha.sh ]] || { echo "no $PEERS_DIR/ganesha.sh" >&2; exit 1; }

mkdir -p "$BIN"
cc -O2 -o "$BIN/nfsops" "$REPO/crates/cli/tests/support/nfsops.c" -lnfs
cc -O2 -o "$BIN/seqwrite" "$REPO/bench/seqwrite.c" -lnfs
cc -O2 -o "$BIN/wire" "$REPO/bench/wire.c"
# A private copy: others may rebuild target/release/nfsx while this runs.
cp "$NFSX" "$BIN/nfsx.orig" && NFSX_ORIG=$NFSX && NFSX=$BIN/nfsx.orig

# ---------------------------------------------------------------- environment record
{
  echo "date_utc=$(date -u +%FT%TZ)"
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "mem_total_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)"
  echo "kernel=$(uname -r)"
  echo "work_fs=$(df -PT "$(dirname "$WORK")" | awk 'NR==2 {print $1, $2}')"
  # The binary may be older than HEAD (or built from uncommitted changes): record both.
  echo "repo_head=$(git -C "$REPO" rev-parse HEAD)"
  echo "repo_dirty_files=$(git -C "$REPO" status --porcelain --untracked-files=no | wc -l)"
  echo "nfsx_newest_commit_before_build=$(git -C "$REPO" log -1 --format=%H --before="@$(stat -c %Y "$NFSX_ORIG")")"
  echo "nfsx_binary=$NFSX_ORIG mtime=$(date -u -r "$NFSX_ORIG" +%FT%TZ) sha256=$(sha256sum "$NFSX" | cut -c1-16)"
  echo "nfsx_version=$("$NFSX" --version)"
  echo "nfsx_config=$(printf '%b' "$NFSX_CONFIG" | tr '\n' ';')"
  for p in nfs-ganesha nfs-ganesha-vfs libnfs-utils libnfs13 rpcbind; do
    echo "pkg_$p=$(dpkg-query -W -f='${Version}' "$p")"
  done
  echo "runs=$RUNS size_mib=$SIZE_MIB files=$FILES order=$ORDER warm_mib=$WARM_MIB wait_idle=$WAIT_IDLE"
} >"$OUTDIR/env.txt"
log "environment: $(tr '\n' ' ' <"$OUTDIR/env.txt")"

# busy = how many 0.5 s ticks of the measurement saw a rustc process (others' compiles).
: >"$BUSYLOG"
( while :; do pgrep -x rustc >/dev/null && date +%s.%N; sleep 0.5; done >>"$BUSYLOG" ) &
SAMPLER_PID=$!
T0=0 T1=0
echo "run,system,test,ok,seconds,bytes,ops,rate,unit,load1,busy,note" >"$CSV"
sample() {  # run system test ok seconds bytes ops rate unit note   (uses T0/T1 of the last client)
  local load1 busy
  load1=$(cut -d' ' -f1 /proc/loadavg)
  busy=$(awk -v a="$T0" -v b="$T1" '$1 >= a && $1 <= b' "$BUSYLOG" | wc -l)
  echo "$1,$2,$3,$4,$5,$6,$7,$8,$9,$load1,$busy,\"${10//\"/\'}\"" >>"$CSV"
}

# ---------------------------------------------------------------- source file
want=$((SIZE_MIB * 1024 * 1024))
if [[ ! -f $SRC || $(stat -c %s "$SRC") -ne $want ]]; then
  log "creating $SRC ($SIZE_MIB MiB of random bytes)"
  head -c "$want" /dev/urandom >"$SRC"
fi

# ---------------------------------------------------------------- servers
NFSX_PID=
port_open() { bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

start_nfsx() {  # run
  rm -rf "$NFSX_DIR"; mkdir -p "$NFSX_DIR" "$OUTDIR/state/nfsx"
  # portmap_port = 0: do not take port 111 (other tests on this machine use it);
  # the client is given the ports in the URL anyway, for both servers.
  printf 'portmap_port = 0\n%b\n' "$NFSX_CONFIG" >"$OUTDIR/state/nfsx.toml"
  port_open "$NFSX_PORT" && { log "port $NFSX_PORT already in use"; return 1; }
  "$NFSX" serve "$NFSX_DIR" --listen "127.0.0.1:$NFSX_PORT" --state-dir "$OUTDIR/state/nfsx" \
    --metrics "127.0.0.1:$METRICS_PORT" --config "$OUTDIR/state/nfsx.toml" \
    >>"$OUTDIR/logs/nfsx-run$1.log" 2>&1 &
  NFSX_PID=$!
  for _ in $(seq 100); do
    port_open "$NFSX_PORT" && return 0
    kill -0 "$NFSX_PID" 2>/dev/null || break
    sleep 0.1
  done
  log "nfsx did not start; tail of logs/nfsx-run$1.log:"; tail -5 "$OUTDIR/logs/nfsx-run$1.log" >&2
  return 1
}

stop_nfsx() {
  [[ -n $NFSX_PID ]] || return 0
  if kill -0 "$NFSX_PID" 2>/dev/null; then
    kill -TERM "$NFSX_PID"
    for _ in $(seq 150); do kill -0 "$NFSX_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$NFSX_PID" 2>/dev/null; then
      log "nfsx (pid $NFSX_PID) still running 15 s after SIGTERM; SIGKILL"
      kill -KILL "$NFSX_PID"
    fi
  else
    log "nfsx (pid $NFSX_PID) had already exited"
  fi
  wait "$NFSX_PID" 2>/dev/null || true
  NFSX_PID=
}

ganesha() {
  EXPORT_DIR=$GAN_DIR NFS_PORT=$GANESHA_NFS_PORT MNT_PORT=$GANESHA_MNT_PORT \
    "$PEERS_DIR/ganesha.sh" "$@"
}

start_ganesha() {
  rm -rf "$GAN_DIR"; mkdir -p "$GAN_DIR" "$GANESHA_STATE"
  # ganesha.sh reuses any portmapper answering on 127.0.0.1:111; only rpcbind will do.
  for _ in $(seq 60); do
    if ! port_open 111 || [[ -f $GANESHA_STATE/rpcbind.pid ]]; then break; fi
    log "port 111 is taken by someone else; waiting"; sleep 5
  done
  ganesha start >>"$OUTDIR/logs/ganesha.log" 2>&1 || { log "ganesha did not start"; tail -5 "$OUTDIR/logs/ganesha.log" >&2; return 1; }
}

stop_ganesha() { ganesha stop >>"$OUTDIR/logs/ganesha.log" 2>&1 || true; }

cleanup() {
  kill "$SAMPLER_PID" 2>/dev/null || true
  stop_nfsx
  stop_ganesha
  rm -f "$DST" "$WARM"
  rm -rf "$NFSX_DIR" "$GAN_DIR" "$LOCAL_DIR"
  if port_open 111; then log "note: port 111 still answers (not ours?)"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- measurements
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
rate() { awk -v n="$1" -v s="$2" -v d="$3" 'BEGIN { printf "%.3f", n / s / d }'; }

metrics() {  # file
  [[ $SYS == nfsx ]] || return 0
  curl -s -m 5 "127.0.0.1:$METRICS_PORT/metrics" >"$1" || log "metrics scrape failed"
}

warm() {  # touch and free WARM_MIB of memory, so the next page allocations are not first touches
  ((WARM_MIB > 0)) || return 0
  head -c "$((WARM_MIB * 1024 * 1024))" /dev/zero >"$WARM"
  rm -f "$WARM"
}

run_client() {  # name cmd...  -> sets OUT, RC, SECS, T0, T1; stdout of cmd goes to OUT
  sync
  [[ $1 == create ]] || warm
  T0=$(now)
  set +e
  OUT=$(timeout -k 5 "$TIMEOUT" "${@:2}" 2>&1)
  RC=$?
  set -e
  T1=$(now)
  SECS=$(elapsed "$T0" "$T1")
  printf '%s\n' "$OUT" >>"$OUTDIR/logs/client.log"
  if ((RC != 0)); then
    [[ $RC == 124 || $RC == 137 ]] && OUT="TIMEOUT after ${TIMEOUT}s: $OUT"
    log "$SYS run $I $1 FAILED rc=$RC: $(printf '%s' "$OUT" | tr '\n' ' ' | cut -c1-300)"
  fi
}

measure() {  # run system base_url query [local dir holding the export]
  I=$1 SYS=$2
  local base=$3 q=$4 mdir=$OUTDIR/metrics/$2-run$1
  mkdir -p "$mdir"
  metrics "$mdir/0-start.txt"

  if ! skip write; then
    run_client write nfs-cp "$SRC" "$base/f$q"
    local note=""; local ok=1
    ((RC == 0)) || { ok=0; note="rc=$RC $(printf '%s' "$OUT" | tr '\n,' '  ' | cut -c1-200)"; }
    sample "$I" "$SYS" write "$ok" "$SECS" "$want" 1 "$(rate "$want" "$SECS" 1e6)" MB/s "$note"
    metrics "$mdir/1-write.txt"
  fi

  if ! skip write; then
    # untimed check of what the server stored
    local stored=${5:-}
    if [[ -n $stored ]] && ! cmp -s "$SRC" "$stored/f"; then
      sample "$I" "$SYS" verify-write 0 0 "$want" 1 0 - "file stored by the server differs from the source"
      log "$SYS run $I: stored file differs from the source"
    fi
  fi

  if ! skip read; then
    rm -f "$DST"
    run_client read nfs-cp "$base/f$q" "$DST"
    local note=""; local ok=1
    if ((RC != 0)); then
      ok=0; note="rc=$RC $(printf '%s' "$OUT" | tr '\n,' '  ' | cut -c1-200)"
    elif ! cmp -s "$SRC" "$DST"; then
      ok=0; note="content differs from source ($(stat -c %s "$DST" 2>/dev/null) bytes)"
      log "$SYS run $I read: $note"
    fi
    sample "$I" "$SYS" read "$ok" "$SECS" "$want" 1 "$(rate "$want" "$SECS" 1e6)" MB/s "$note"
    rm -f "$DST"
    metrics "$mdir/2-read.txt"
  fi

  if ! skip read-devnull; then
    run_client read-devnull bash -c 'nfs-cat "$1" >/dev/null' _ "$base/f$q"
    local note=""; local ok=1
    ((RC == 0)) || { ok=0; note="rc=$RC $(printf '%s' "$OUT" | tr '\n,' '  ' | cut -c1-200)"; }
    sample "$I" "$SYS" read-devnull "$ok" "$SECS" "$want" 1 "$(rate "$want" "$SECS" 1e6)" MB/s "$note"
    metrics "$mdir/2b-read-devnull.txt"
    # untimed: the bytes that come back are the bytes written
    if ((ok)) && ! timeout "$TIMEOUT" bash -c 'nfs-cat "$1" | cmp -s - "$2"' _ "$base/f$q" "$SRC"; then
      sample "$I" "$SYS" verify-read 0 0 "$want" 1 0 - "bytes read back differ from the source"
      log "$SYS run $I: bytes read back differ from the source"
    fi
    metrics "$mdir/2c-verify.txt"
  fi

  if ! skip split; then
    run_client split "$BIN/seqwrite" "$SRC" "$base/g$q"
    if ((RC == 0)); then
      local ws cs
      ws=$(sed -n 's/.*write_s=\([0-9.]*\).*/\1/p' <<<"$OUT")
      cs=$(sed -n 's/.*commit_s=\([0-9.]*\).*/\1/p' <<<"$OUT")
      sample "$I" "$SYS" write-nocommit 1 "$ws" "$want" 1 "$(rate "$want" "$ws" 1e6)" MB/s ""
      sample "$I" "$SYS" commit 1 "$cs" "$want" 1 "$(rate "$want" "$cs" 1e6)" MB/s "COMMIT of the whole file alone"
      sample "$I" "$SYS" write-withcommit 1 "$(awk -v a="$ws" -v b="$cs" 'BEGIN{printf "%.6f", a+b}')" "$want" 1 \
        "$(awk -v n="$want" -v a="$ws" -v b="$cs" 'BEGIN{printf "%.3f", n/(a+b)/1e6}')" MB/s ""
    else
      sample "$I" "$SYS" write-nocommit 0 "$SECS" "$want" 1 0 MB/s "rc=$RC $(printf '%s' "$OUT" | tr '\n,' '  ' | cut -c1-200)"
    fi
    metrics "$mdir/3-split.txt"
  fi

  if ! skip create; then
    run_client create "$BIN/nfsops" "$base$q" "mkdir /c-$I" "createmany /c-$I $FILES"
    local s
    s=$(sed -n 's/.*created=[0-9]* seconds=\([0-9.]*\).*/\1/p' <<<"$OUT")
    if ((RC == 0)) && [[ -n $s ]]; then
      sample "$I" "$SYS" create 1 "$s" 0 "$FILES" "$(awk -v n="$FILES" -v s="$s" 'BEGIN{printf "%.1f", n/s}')" creates/s ""
    else
      sample "$I" "$SYS" create 0 "$SECS" 0 "$FILES" 0 creates/s "rc=$RC $(printf '%s' "$OUT" | tr '\n,' '  ' | cut -c1-200)"
    fi
    metrics "$mdir/4-create.txt"
  fi
}

measure_local() {  # run: the same copy without NFS, as a ceiling
  I=$1 SYS=local
  rm -rf "$LOCAL_DIR"; mkdir -p "$LOCAL_DIR"
  if ! skip write; then
    run_client write dd if="$SRC" of="$LOCAL_DIR/f" bs=1M conv=fsync status=none
    sample "$I" local write "$((RC == 0))" "$SECS" "$want" 1 "$(rate "$want" "$SECS" 1e6)" MB/s "dd bs=1M conv=fsync"
  fi
  if ! skip read-devnull && [[ -f $LOCAL_DIR/f ]]; then
    run_client read-devnull dd if="$LOCAL_DIR/f" of=/dev/null bs=1M status=none
    sample "$I" local read-devnull "$((RC == 0))" "$SECS" "$want" 1 "$(rate "$want" "$SECS" 1e6)" MB/s "dd bs=1M, page cache"
    # The wire's limit for this pattern: 128-byte requests answered by 1 MiB
    # over one loopback connection, from memory and by sendfile from the file.
    local n=$((want / 1048576)) w
    for w in wire wire-sendfile wire-copy; do
      case $w in
        wire) run_client read-devnull "$BIN/wire" "$n" ;;
        wire-sendfile) run_client read-devnull "$BIN/wire" "$n" 1048576 "$LOCAL_DIR/f" ;;
        wire-copy) run_client read-devnull "$BIN/wire" -c "$n" ;;
      esac
      local s; s=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$OUT")
      if ((RC == 0)) && [[ -n $s ]]; then
        sample "$I" "$w" read-devnull 1 "$s" "$want" "$n" "$(rate "$want" "$s" 1e6)" MB/s "bench/wire.c"
      else
        sample "$I" "$w" read-devnull 0 "$SECS" "$want" "$n" 0 MB/s "rc=$RC"
      fi
    done
  fi
  rm -rf "$LOCAL_DIR"
}

wait_idle() {
  ((WAIT_IDLE > 0)) || return 0
  local quiet=0 waited=0
  while ((quiet < WAIT_IDLE && waited < 900)); do
    if pgrep -x rustc >/dev/null; then quiet=0; else quiet=$((quiet + 5)); fi
    sleep 5; waited=$((waited + 5))
  done
  ((quiet >= WAIT_IDLE)) || log "machine not idle after 15 min of waiting; running anyway"
}

NFSX_URL="nfs://127.0.0.1$NFSX_DIR"
NFSX_Q="?version=3&nfsport=$NFSX_PORT&mountport=$NFSX_PORT"
GAN_URL="nfs://127.0.0.1/export"
GAN_Q="?version=3&nfsport=$GANESHA_NFS_PORT&mountport=$GANESHA_MNT_PORT"

run_nfsx() {
  wait_idle
  log "run $1/$RUNS: nfsx"
  if start_nfsx "$1"; then
    measure "$1" nfsx "$NFSX_URL" "$NFSX_Q" "$NFSX_DIR"
    kill -0 "$NFSX_PID" 2>/dev/null || { log "nfsx exited during run $1 (see logs/nfsx-run$1.log)";
      sample "$1" nfsx alive 0 0 0 0 0 - "nfsx exited during the run"; }
  else
    sample "$1" nfsx start 0 0 0 0 0 - "nfsx did not start"
  fi
  stop_nfsx
  rm -rf "$NFSX_DIR"
}

run_ganesha() {
  wait_idle
  log "run $1/$RUNS: ganesha"
  if start_ganesha; then
    measure "$1" ganesha "$GAN_URL" "$GAN_Q" "$GAN_DIR"
  else
    sample "$1" ganesha start 0 0 0 0 0 - "ganesha did not start"
  fi
  stop_ganesha
  rm -rf "$GAN_DIR"
}

for i in $(seq "$RUNS"); do
  if [[ $ORDER == abba && $((i % 2)) == 0 ]]; then
    run_ganesha "$i"; run_nfsx "$i"
  else
    run_nfsx "$i"; run_ganesha "$i"
  fi
  if ! skip local; then wait_idle; log "run $i/$RUNS: local"; measure_local "$i"; fi
done

python3 "$REPO/bench/summarize.py" "$CSV" --metrics "$OUTDIR/metrics" --raw | tee "$OUTDIR/summary.md"
log "done: $OUTDIR"

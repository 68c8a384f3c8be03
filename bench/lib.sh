# shellcheck shell=bash
# Sourced by the scripts in bench/: where the repository and the binaries
# are, how nfsx and NFS-Ganesha are started and stopped, the named rows
# every comparison picks from, and each side's CPU per call.
#
# Environment (defaults in brackets):
#   NFSX        [REPO/target/release/nfsx]  the nfsx that serves and that
#               runs `nfsx bench` (cargo build --release -p nfsx)
#   GANESHA_SH  [REPO/scripts/ganesha.sh]  starts and stops NFS-Ganesha 4.3
#               (Debian package, FSAL_VFS) on 127.0.0.1:2049 (MOUNT 20048)
#               with its own rpcbind on port 111. It is given PEER_DIR (its
#               configuration, logs and pid files; the export is
#               PEER_DIR/export) and GANESHA_DELEGATIONS (none, r or rw).
#               Any script with the same `start|stop` interface will do,
#               e.g. a wrapper around ../shared/peers/ganesha.sh.
#   GANESHA_URL [nfs://127.0.0.1/export]  where that server's export is
#   DURATION    [5s]     the timed part of every `nfsx bench data` row
#   FILES       [50000]  files in the tree of the list and stat rows
#   ASYNC       [0]      1: nfsx exports its directory `async` (exports(5)),
#               as the one-request-at-a-time rows on tmpfs do
#
# Ports: an nfsx server started here listens on the port it is given and
# serves its metrics on the next one; NFS-Ganesha needs 2049, 20048 and 111.
# Nothing here measures anything on its own; the scripts that source it do.

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH/.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}
GANESHA_SH=${GANESHA_SH:-$REPO/scripts/ganesha.sh}
GANESHA_URL=${GANESHA_URL:-nfs://127.0.0.1/export}
DURATION=${DURATION:-5s}
FILES=${FILES:-50000}

# Server name -> its process, and its export's URL without `?version=`.
declare -gA PID=() URL=()
GANESHA_DIR=

log() { echo "$(date -u +%T) $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Every run records what it ran.
record_commit() { git -C "$REPO" rev-parse HEAD >"$1/commit.txt" 2>/dev/null || true; }

# The output folder OUT made, turned absolute (printed), with the commit measured.
out_dir() {
  mkdir -p "$1"
  local abs
  abs=$(cd "$1" && pwd)
  record_commit "$abs"
  echo "$abs"
}

# A variant spec NAME[@BINARY][:SETTING,SETTING...] (ab.sh's servers and
# clients, ceph.sh's heads): sets V_NAME, V_BIN (default $NFSX) and V_CONF
# (the settings, one per line).
parse_variant() {
  V_NAME=${1%%[@:]*}
  local rest=${1#"$V_NAME"}
  V_BIN=$NFSX
  if [[ $rest == @* ]]; then
    V_BIN=${rest#@}
    V_BIN=${V_BIN%%:*}
  fi
  V_CONF=
  [[ $rest == *:* ]] && V_CONF=${rest#*:}
  V_CONF=$(printf '%b' "${V_CONF//,/\\n}")
}

# nfsx_start NAME DIR PORT [TOML] [BINARY]: nfsx (BINARY, default $NFSX)
# serving DIR/ex on PORT at its defaults but `portmap_port = 0` (port 111
# stays rpcbind's, which Ganesha needs) and the TOML lines given (`\n`
# escapes allowed), metrics on PORT+1. DIR is emptied first.
nfsx_start() {
  local name=$1 dir=$2 port=$3 toml=${4:-} bin=${5:-$NFSX} src _
  rm -rf "$dir"
  mkdir -p "$dir/ex" "$dir/st"
  printf 'portmap_port = 0\n%b\n' "$toml" >"$dir/server.toml"
  src=("$dir/ex")
  if [[ ${ASYNC:-0} == 1 ]]; then
    printf '%s 127.0.0.1(rw,async,no_root_squash,insecure)\n' "$dir/ex" >"$dir/exports"
    src=(--exports "$dir/exports")
  fi
  if port_open "$port"; then log "port $port is taken"; return 1; fi
  "$bin" serve "${src[@]}" --listen "127.0.0.1:$port" --metrics "127.0.0.1:$((port + 1))" \
    --state-dir "$dir/st" --config "$dir/server.toml" --log warn >"$dir/server.log" 2>&1 &
  PID[$name]=$!
  URL[$name]="nfs://127.0.0.1:$port$dir/ex"
  for _ in $(seq 100); do
    port_open "$port" && return 0
    kill -0 "${PID[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  log "nfsx ($name) did not start; the end of $dir/server.log:"
  tail -5 "$dir/server.log" >&2
  return 1
}

nfsx_stop() {  # NAME
  local pid=${PID[$1]:-}
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  unset "PID[$1]"
}

# ganesha_start DIR [DELEGATIONS]: NFS-Ganesha with its files in DIR and
# its export DIR/export (put DIR on the file system the nfsx export is on).
ganesha_start() {
  GANESHA_DIR=$1
  mkdir -p "$1"
  if ! PEER_DIR=$1 GANESHA_DELEGATIONS=${2:-none} "$GANESHA_SH" start >"$1.start.log" 2>&1; then
    log "NFS-Ganesha did not start ($GANESHA_SH, PEER_DIR=$1):"
    tail -5 "$1.start.log" >&2
    return 1
  fi
  PID[ganesha]=$(cat "$1/ganesha.pid" 2>/dev/null || pgrep -o -x ganesha.nfsd || true)
  URL[ganesha]=$GANESHA_URL
}

ganesha_stop() {
  [[ -n $GANESHA_DIR ]] || return 0
  PEER_DIR=$GANESHA_DIR "$GANESHA_SH" stop >/dev/null 2>&1 || true
  unset "PID[ganesha]"
  GANESHA_DIR=
}

stop_all() {
  local n
  for n in "${!PID[@]}"; do [[ $n == ganesha ]] || nfsx_stop "$n"; done
  ganesha_stop
}

# targets VERSION NAME...: the --target arguments for those servers.
targets() {
  local v=$1 n
  shift
  for n in "$@"; do printf '%s\n' --target "${URL[$n]}?version=$v"; done
}

# row_args ROW: the `nfsx bench` arguments (workload first) of a named row.
# The data rows read with the client's data cache off and write with
# `--direct` (every write its own WRITE), so each measures the server, not
# the client's caches.
row_args() {
  local d=(--duration "$DURATION")
  case $1 in
    rand-read-4k-16t) echo data --mode rand-read --io-size 4KiB --threads 16 --size 64MiB --no-data-cache "${d[@]}" ;;
    rand-read-4k-1t) echo data --mode rand-read --io-size 4KiB --threads 1 --size 16MiB --no-data-cache "${d[@]}" ;;
    rand-read-64k-16t) echo data --mode rand-read --io-size 64KiB --threads 16 --size 256MiB --no-data-cache "${d[@]}" ;;
    rand-write-4k-16t) echo data --mode rand-write --io-size 4KiB --threads 16 --size 64MiB --direct "${d[@]}" ;;
    seq-read-1m-1t) echo data --mode seq-read --io-size 1MiB --threads 1 --size 256MiB --no-data-cache "${d[@]}" ;;
    seq-read-1m-4t) echo data --mode seq-read --io-size 1MiB --threads 4 --size 256MiB --no-data-cache "${d[@]}" ;;
    seq-write-1m-1t) echo data --mode seq-write --io-size 1MiB --threads 1 --size 256MiB --direct "${d[@]}" ;;
    seq-write-1m-4t) echo data --mode seq-write --io-size 1MiB --threads 4 --size 256MiB --direct "${d[@]}" ;;
    sync-8k-16t) echo data --mode seq-write --io-size 8KiB --threads 16 --sync --size 64MiB "${d[@]}" ;;
    liststat) echo metadata --op list,stat --files "$FILES" ;;
    list) echo metadata --op list --files "$FILES" ;;
    stat) echo metadata --op stat --files "$FILES" ;;
    create) echo metadata --op create --files 2000 ;;
    *) log "unknown row $1"; return 1 ;;
  esac
}

# perf_call OUTPREFIX SERVER CLIENT_BINARY BENCH_ARGS...: one `nfsx bench`
# invocation against one server with `perf stat` on the server process and
# on the client for its length; prints bench/per-call.py's line (MB/s,
# calls, calls/s, server and client µs of CPU and context switches per
# call). The server's count covers what it did while the client ran,
# setup included.
perf_call() {
  local out=$1 server=$2 client=$3 sp
  shift 3
  perf stat -x, -e task-clock,context-switches -p "${PID[$server]}" -o "$out.server-perf.txt" &
  sp=$!
  perf stat -x, -e task-clock,context-switches -o "$out.client-perf.txt" \
    "$client" bench "$@" --runs 1 --quiet --json "$out.json" >"$out.txt" 2>&1
  kill -INT "$sp" 2>/dev/null
  wait "$sp" 2>/dev/null
  python3 "$BENCH/per-call.py" "$out.json" "$out.server-perf.txt" "$out.client-perf.txt"
}

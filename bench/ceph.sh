#!/usr/bin/env bash
# nfsx heads over CephFS beside NFS-Ganesha 4.3 with FSAL_CEPH, on the
# one-machine cluster of scripts/ceph.sh (docs/SCALE-OUT.md): every server
# exports a CephFS directory of its own, the same client (nfsx's, NFSv4.1 by
# default) drives all, the targets alternating run by run. Then
# `bench/summarize.py OUT` prints medians and ratios (each head against the
# last target, Ganesha).
#
#   bench/ceph.sh OUT [RUNS]                     RUNS 5
#
# Environment (defaults in brackets; see also bench/lib.sh):
#   HEADS ["nfsx nfsx-async:sync_metadata=false"]  the heads, in target
#         order: NAME[@BINARY][:KEY=VALUE[,KEY=VALUE...]], exporting
#         CephFS /NAME; the settings go in the head's [ceph] table (`\n`
#         escapes reach other tables, e.g. ':\n[cluster]\nnode="bench"');
#         BINARY runs another nfsx (the build before). A head whose
#         settings are just `host` serves a directory of the host (BASE)
#         instead: the same head over a local disk.
#   GANESHA [1]  0 leaves NFS-Ganesha out; GANESHA_DELEGATIONS [none]
#   ROWS ["seq rand metadata"]  what each invocation runs:
#     seq        1 MiB sequential write, then read, 256 MiB, 1 and 4 threads
#     seq-1t     the same at 1 thread
#     rand       4 KiB random reads and writes of 64 MiB, 16 threads
#     metadata   every `nfsx bench metadata` workload, 2,000 files
#     seq-read   1 MiB sequential reads, client data cache off, 1 and 4 threads
#     rand-read  4 KiB random reads, data cache off, 16 threads
#     create     2,000 creations (OPEN-create + CLOSE)
#     walk       list, stat and read-small of 2,000 files
#     shares     creations and small-file reads of 1,000 files, 1 and 16 threads
#     reread     200 small files re-read for 10 s (delegations)
#     read-once  2,000 small files read once
#     rados      the store alone: `rados bench`, 1 MiB objects, one in
#                flight, write then read (OUT/rados.txt)
#   VERS [4.1]  the protocol every target is reached with
#   CEPH_CONF  an existing cluster's ceph.conf; unset, a fresh cluster is
#              started (scripts/ceph.sh start) and stopped at the end
#   BASE [/var/tmp]
# Needs root, Debian's Ceph packages and nfs-ganesha-ceph (scripts/ceph.sh
# and scripts/ganesha.sh install what they need).
set -uo pipefail
OUT=${1:?usage: ceph.sh OUT [RUNS]}
RUNS=${2:-5}
. "$(dirname "$0")/lib.sh"
HEADS=${HEADS:-nfsx nfsx-async:sync_metadata=false}
ROWS=${ROWS:-seq rand metadata}
VERS=${VERS:-4.1}
BASE=${BASE:-/var/tmp}
W=$BASE/nfsx-ceph-bench
OUT=$(out_dir "$OUT")
rm -rf "$W"
mkdir -p "$W"
own_cluster=0
if [[ -z ${CEPH_CONF:-} ]]; then
  eval "$(cd "$REPO" && scripts/ceph.sh start | grep '^CEPH_CONF=')"
  own_cluster=1
fi
[[ -n ${CEPH_CONF:-} ]] || { log "no Ceph cluster"; exit 1; }
trap 'stop_all; rm -rf "$W"; ((own_cluster)) && (cd "$REPO" && scripts/ceph.sh stop >/dev/null 2>&1)' EXIT

mkdirs() {  # CephFS directories
  /usr/bin/python3 - "$CEPH_CONF" "$@" <<'PY'
import ctypes, sys
lib = ctypes.CDLL("libcephfs.so.2")
cm = ctypes.c_void_p()
lib.ceph_create(ctypes.byref(cm), None)
lib.ceph_conf_read_file(cm, sys.argv[1].encode())
lib.ceph_mount(cm, b"/")
for d in sys.argv[2:]:
    lib.ceph_mkdir(cm, ("/" + d).encode(), 0o777)
lib.ceph_unmount(cm)
PY
}

# Read into an array, not split unquoted: a head's settings may hold
# `[table]` lines, which the shell would otherwise take for a glob.
read -ra heads <<<"$HEADS"
names=()
declare -A MPORT=()
for h in "${heads[@]}"; do names+=("${h%%[@:]*}"); done
mkdirs "${names[@]}" ganesha
T=()
port=20801
for h in "${heads[@]}"; do
  parse_variant "$h"
  name=$V_NAME bin=$V_BIN conf=$V_CONF
  d=$W/$name
  mkdir -p "$d/st"
  if [[ $conf == host ]]; then
    mkdir -p "$d/ex"
    printf 'portmap_port = 0\n' >"$d/nfsx.toml"
    src=$d/ex
    backend=()
  else
    printf 'portmap_port = 0\n[ceph]\nconf = "%s"\n%s\n' "$CEPH_CONF" "$conf" >"$d/nfsx.toml"
    src=/$name
    backend=(--backend ceph)
  fi
  "$bin" serve "${backend[@]}" --listen "127.0.0.1:$port" --metrics "127.0.0.1:$((port + 1))" \
    --config "$d/nfsx.toml" --state-dir "$d/st" "$src" >"$d/nfsx.log" 2>&1 &
  PID[$name]=$!
  MPORT[$name]=$((port + 1))
  T+=(--target "nfs://127.0.0.1:$port$src?version=$VERS")
  port=$((port + 2))
done
if [[ ${GANESHA:-1} != 0 ]]; then
  GANESHA_CEPH_CONF=$CEPH_CONF GANESHA_CEPH_PATH=/ganesha ganesha_start "$W/ganesha" "${GANESHA_DELEGATIONS:-none}" || exit 1
  T+=(--target "$GANESHA_URL?version=$VERS")
fi
for p in $(seq 20801 2 $((port - 2))); do
  for _ in $(seq 100); do port_open "$p" && break; sleep 0.1; done
done
sleep 2

run() {  # NAME ARGS...
  local name=$1
  shift
  log "$name"
  "$NFSX" bench "$@" --quiet --runs "$RUNS" "${T[@]}" --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
}
for row in $ROWS; do
  case $row in
    seq) run seq data --mode seq-write,seq-read --size 256MiB --io-size 1MiB --threads 1,4 ;;
    seq-1t) run seq-1t data --mode seq-write,seq-read --size 256MiB --io-size 1MiB --threads 1 ;;
    rand) run rand data --mode rand-read,rand-write --size 64MiB --io-size 4KiB --threads 16 --duration "$DURATION" ;;
    metadata) run metadata metadata --files 2000 ;;
    seq-read) run seq-read data --mode seq-read --size 256MiB --io-size 1MiB --threads 1,4 --no-data-cache ;;
    rand-read) run rand-read data --mode rand-read --size 64MiB --io-size 4KiB --threads 16 --duration "$DURATION" --no-data-cache ;;
    create) run create metadata --op create --files 2000 ;;
    walk) run walk metadata --op list,stat,read-small --files 2000 ;;
    shares) run shares metadata --op create,read-small --files 1000 --threads 1,16 ;;
    reread) run reread metadata --op read-small --files 200 --duration 10s ;;
    read-once) run read-once metadata --op read-small --files 2000 ;;
    rados)
      log rados
      {
        rados -c "$CEPH_CONF" bench -p cephfs_data 8 write -b 1M -t 1 --no-cleanup | grep -E 'Bandwidth|Average Latency'
        rados -c "$CEPH_CONF" bench -p cephfs_data 8 seq -t 1 | grep -E 'Bandwidth|Average Latency'
        rados -c "$CEPH_CONF" -p cephfs_data cleanup >/dev/null
      } >"$OUT/rados.txt" 2>&1
      ;;
    *) log "unknown row $row" ;;
  esac
done
for n in "${names[@]}"; do
  curl -s "127.0.0.1:${MPORT[$n]}/metrics" >"$OUT/metrics-$n.txt" || true
done
python3 "$BENCH/summarize.py" "$OUT" | tee "$OUT/summary.txt"

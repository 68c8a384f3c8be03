#!/usr/bin/env bash
# Starts, on the one-machine Ceph cluster of scripts/ceph.sh, an nfsx head
# at its defaults (CephFS /nfsx, port 20801), a second one that answers
# namespace changes on the MDS's early reply (sync_metadata = false, as
# Ganesha does; CephFS /nfsx-async, port 20802) and NFS-Ganesha 4.3 with
# FSAL_CEPH (CephFS /ganesha, pseudo path /export on 2049), so all serve the
# same cluster through libcephfs. Prints nothing but errors; `stop` stops them.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/nfsx-ceph-vs-ganesha}
if [[ ${1:-} == stop ]]; then
  for p in "$OUT"/nfsx*.pid; do
    [[ -f $p ]] || continue
    pid=$(cat "$p") && rm -f "$p"
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  PEER_DIR=$OUT/ganesha scripts/ganesha.sh stop || true
  exit 0
fi
eval "$(scripts/ceph.sh start | grep '^CEPH_CONF=')"
mkdir -p "$OUT"
/usr/bin/python3 - "$CEPH_CONF" <<'PY'
import ctypes, sys
lib = ctypes.CDLL("libcephfs.so.2"); cm = ctypes.c_void_p()
lib.ceph_create(ctypes.byref(cm), None)
lib.ceph_conf_read_file(cm, sys.argv[1].encode()); lib.ceph_mount(cm, b"/")
for d in (b"/nfsx", b"/nfsx-async", b"/ganesha"):
    lib.ceph_mkdir(cm, d, 0o777)
lib.ceph_unmount(cm)
PY
head() { # PORT NAME SYNC_METADATA
  printf 'portmap_port = 0\n[ceph]\nconf = "%s"\nsync_metadata = %s\n' "$CEPH_CONF" "$3" >"$OUT/$2.toml"
  target/release/nfsx serve --backend ceph --listen "127.0.0.1:$1" --config "$OUT/$2.toml" \
    --state-dir "$OUT/$2.state" "/$2" >"$OUT/$2.log" 2>&1 &
  echo $! >"$OUT/$2.pid"
}
head 20801 nfsx true
head 20802 nfsx-async false
GANESHA_CEPH_CONF=$CEPH_CONF GANESHA_CEPH_PATH=/ganesha PEER_DIR=$OUT/ganesha scripts/ganesha.sh start >/dev/null
for port in 20801 20802; do
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
done

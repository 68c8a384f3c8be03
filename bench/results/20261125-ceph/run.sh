#!/usr/bin/env bash
# One nfsx head over a one-machine Ceph cluster against one over the host
# directory, 1 MiB sequential write and read through nfsx's client (NFSv4.2),
# 3 alternating runs; then the store's own rate for the same pattern
# (rados bench, 1 MiB objects, one in flight). Needs a release build.
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=target/release/nfsx
OUT=${OUT:-/tmp/nfsx-ceph-bench}
rm -rf "$OUT" && mkdir -p "$OUT/local"
eval "$(scripts/ceph.sh start)"
trap 'kill $(jobs -p) 2>/dev/null; scripts/ceph.sh stop' EXIT
printf 'portmap_port = 0\n[ceph]\nconf = "%s"\n' "$CEPH_CONF" >"$OUT/ceph.toml"
printf 'portmap_port = 0\n' >"$OUT/local.toml"
/usr/bin/python3 - "$CEPH_CONF" <<'PY'
import ctypes, sys
lib = ctypes.CDLL("libcephfs.so.2"); cm = ctypes.c_void_p()
lib.ceph_create(ctypes.byref(cm), None)
lib.ceph_conf_read_file(cm, sys.argv[1].encode()); lib.ceph_mount(cm, b"/")
lib.ceph_mkdir(cm, b"/bench", 0o777); lib.ceph_unmount(cm)
PY
$B serve --backend ceph --listen 127.0.0.1:20801 --config "$OUT/ceph.toml" --state-dir "$OUT/st1" /bench &
$B serve --listen 127.0.0.1:20802 --config "$OUT/local.toml" --state-dir "$OUT/st2" "$OUT/local" &
sleep 3
$B bench data --mode seq-write,seq-read --size 256MiB --io-size 1MiB --threads 1 --runs 3 \
  --target "nfs://127.0.0.1:20801/bench?version=4.2" --target "nfs://127.0.0.1:20802$OUT/local?version=4.2" \
  --json "$OUT/data.json"
rados -c "$CEPH_CONF" bench -p cephfs_data 8 write -b 1M -t 1 --no-cleanup | grep -E 'Bandwidth|Average Latency'
rados -c "$CEPH_CONF" bench -p cephfs_data 8 seq -t 1 | grep -E 'Bandwidth|Average Latency'

#!/usr/bin/env bash
# What holding share reservations in CephFS costs an OPEN: an nfsx head of
# OLD (the build before), one of this build at its defaults, one of this
# build as a head of a cluster ([cluster], where no client has denied yet),
# one of this build with `share_reservations = false`, each on a CephFS
# directory of its own, and NFS-Ganesha 4.3 FSAL_CEPH, on the one-machine
# cluster of
# scripts/ceph.sh; NFSv4.1 creations (OPEN-create + CLOSE) and small-file
# reads (OPEN + READ + CLOSE) through nfsx's client, 1 and 16 threads,
# 5 alternating runs.
#   OLD=/path/to/nfsx-before bench/results/20261126-ceph-shares/run.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-/tmp/nfsx-ceph-shares}; mkdir -p "$OUT"
OLD=${OLD:?OLD=previous nfsx binary}
eval "$(scripts/ceph.sh start | grep '^CEPH_CONF=')"
/usr/bin/python3 - "$CEPH_CONF" <<'PY'
import ctypes, sys
lib = ctypes.CDLL("libcephfs.so.2"); cm = ctypes.c_void_p()
lib.ceph_create(ctypes.byref(cm), None)
lib.ceph_conf_read_file(cm, sys.argv[1].encode()); lib.ceph_mount(cm, b"/")
for d in (b"/old", b"/new", b"/new-off", b"/new-cluster", b"/ganesha"):
    lib.ceph_mkdir(cm, d, 0o777)
lib.ceph_unmount(cm)
PY
printf 'portmap_port = 0\n[ceph]\nconf = "%s"\n' "$CEPH_CONF" >"$OUT/head.toml"
printf 'portmap_port = 0\n[ceph]\nconf = "%s"\nshare_reservations = false\n' "$CEPH_CONF" >"$OUT/off.toml"
printf 'portmap_port = 0\n[ceph]\nconf = "%s"\n[cluster]\nnode = "bench"\nnamespace = "nfsx-bench-shares-%s"\n' "$CEPH_CONF" "$$" >"$OUT/cluster.toml"
"$OLD" serve --backend ceph --listen 127.0.0.1:20811 --config "$OUT/head.toml" --state-dir "$OUT/old.state" /old >"$OUT/old.log" 2>&1 &
target/release/nfsx serve --backend ceph --listen 127.0.0.1:20812 --config "$OUT/head.toml" --state-dir "$OUT/new.state" /new >"$OUT/new.log" 2>&1 &
target/release/nfsx serve --backend ceph --listen 127.0.0.1:20813 --config "$OUT/off.toml" --state-dir "$OUT/new-off.state" /new-off >"$OUT/new-off.log" 2>&1 &
target/release/nfsx serve --backend ceph --listen 127.0.0.1:20814 --config "$OUT/cluster.toml" --state-dir "$OUT/new-cluster.state" /new-cluster >"$OUT/new-cluster.log" 2>&1 &
GANESHA_CEPH_CONF=$CEPH_CONF GANESHA_CEPH_PATH=/ganesha PEER_DIR=$OUT/ganesha scripts/ganesha.sh start >/dev/null
trap 'kill $(jobs -p) 2>/dev/null; PEER_DIR=$OUT/ganesha scripts/ganesha.sh stop >/dev/null 2>&1 || true' EXIT
sleep 5
target/release/nfsx bench metadata --quiet --runs 5 --files 1000 --threads 1,16 --op create,read-small \
  --target "nfs://127.0.0.1:20811/old?version=4.1" --target "nfs://127.0.0.1:20812/new?version=4.1" \
  --target "nfs://127.0.0.1:20814/new-cluster?version=4.1" --target "nfs://127.0.0.1:20813/new-off?version=4.1" \
  --target "nfs://127.0.0.1/export?version=4.1" --json "$OUT/metadata.json" | tee "$OUT/metadata.txt"

#!/usr/bin/env bash
# A head alone (no [cluster]) with the share-denial gate (the default:
# no share modes in CephFS until an OPEN somewhere denies) against the
# same build holding them from the start (`share_gate_path = ""`, what
# every head alone did before), and NFS-Ganesha 4.3 FSAL_CEPH, each on a
# CephFS directory of its own, on the one-machine cluster of
# scripts/ceph.sh; NFSv4.1 creations (OPEN-create + CLOSE) and small-file
# reads (OPEN + READ + CLOSE) through nfsx's client, 1 and 16 threads,
# 5 alternating runs.
#   bench/results/20261127-ceph-share-gate/run.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-/tmp/nfsx-ceph-share-gate}; mkdir -p "$OUT"
eval "$(scripts/ceph.sh start | grep '^CEPH_CONF=')"
/usr/bin/python3 - "$CEPH_CONF" <<'PY'
import ctypes, sys
lib = ctypes.CDLL("libcephfs.so.2"); cm = ctypes.c_void_p()
lib.ceph_create(ctypes.byref(cm), None)
lib.ceph_conf_read_file(cm, sys.argv[1].encode()); lib.ceph_mount(cm, b"/")
for d in (b"/gate", b"/held", b"/ganesha"):
    lib.ceph_mkdir(cm, d, 0o777)
lib.ceph_unmount(cm)
PY
# Each head a gate file of its own, so neither meets a mark another run left.
printf 'portmap_port = 0\n[ceph]\nconf = "%s"\nshare_gate_path = "/gate.%s"\n' "$CEPH_CONF" "$$" >"$OUT/gate.toml"
printf 'portmap_port = 0\n[ceph]\nconf = "%s"\nshare_gate_path = ""\n' "$CEPH_CONF" >"$OUT/held.toml"
target/release/nfsx serve --backend ceph --listen 127.0.0.1:20821 --config "$OUT/gate.toml" --state-dir "$OUT/gate.state" /gate >"$OUT/gate.log" 2>&1 &
target/release/nfsx serve --backend ceph --listen 127.0.0.1:20822 --config "$OUT/held.toml" --state-dir "$OUT/held.state" /held >"$OUT/held.log" 2>&1 &
GANESHA_CEPH_CONF=$CEPH_CONF GANESHA_CEPH_PATH=/ganesha PEER_DIR=$OUT/ganesha scripts/ganesha.sh start >/dev/null
trap 'kill $(jobs -p) 2>/dev/null; PEER_DIR=$OUT/ganesha scripts/ganesha.sh stop >/dev/null 2>&1 || true' EXIT
sleep 5
target/release/nfsx bench metadata --quiet --runs 5 --files 1000 --threads 1,16 --op create,read-small \
  --target "nfs://127.0.0.1:20821/gate?version=4.1" --target "nfs://127.0.0.1:20822/held?version=4.1" \
  --target "nfs://127.0.0.1/export?version=4.1" --json "$OUT/metadata.json" | tee "$OUT/metadata.txt"

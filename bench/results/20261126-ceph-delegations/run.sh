#!/bin/sh
# Small files re-read through one head with and without CephFS-backed
# delegations (docs/SCALE-OUT.md, "Delegations"). Needs a cluster:
#   scripts/ceph.sh start
set -e
B=${NFSX:-target/release/nfsx}
D=${DIR:-/tmp/ceph-delegs}
mkdir -p "$D"
printf '[ceph]\nconf = "/tmp/nfsx-ceph/ceph.conf"\n' > "$D/on.toml"
printf '[ceph]\nconf = "/tmp/nfsx-ceph/ceph.conf"\ndelegations = false\n' > "$D/off.toml"
$B serve --backend ceph --config "$D/on.toml" / --listen 127.0.0.1:20601 --state-dir "$D/s1" --portmap-port 0 --metrics 127.0.0.1:20611 > "$D/on.log" 2>&1 &
ON=$!
$B serve --backend ceph --config "$D/off.toml" / --listen 127.0.0.1:20602 --state-dir "$D/s2" --portmap-port 0 > "$D/off.log" 2>&1 &
OFF=$!
sleep 5
$B bench metadata --op read-small --files 200 --duration 10s \
    --target 'nfs://127.0.0.1:20601/?version=4.1' --target 'nfs://127.0.0.1:20602/?version=4.1' \
    --runs 3 --json read-small.json
curl -s 127.0.0.1:20611/metrics | grep ceph_delegations
kill $ON $OFF

# Against NFS-Ganesha 4.3 FSAL_CEPH at its defaults on the same cluster
# (vs-ganesha-*.json): bench/results/20261125-ceph-ganesha/setup.sh starts
# Ganesha (pseudo path /export on 2049) and a head at its defaults
# (/nfsx on 20801); a third head without delegations serves the same
# directory on 20803:
#   printf 'portmap_port = 0\n[ceph]\nconf = "/tmp/nfsx-ceph/ceph.conf"\ndelegations = false\n' > nodeleg.toml
#   nfsx serve --backend ceph --listen 127.0.0.1:20803 --config nodeleg.toml --state-dir nodeleg.state /nfsx &
#   T="--target nfs://127.0.0.1/export?version=4.1 --target nfs://127.0.0.1:20801/nfsx?version=4.1 --target nfs://127.0.0.1:20803/nfsx?version=4.1"
#   nfsx bench metadata --runs 5 $T --op read-small --files 2000 --json vs-ganesha-one-pass.json
#   nfsx bench metadata --runs 5 $T --op read-small --files 200 --duration 10s --json vs-ganesha-reread.json
# Ganesha with read delegations on (vs-ganesha-delegations-reread.json):
#   GANESHA_DELEGATIONS=r bench/results/20261125-ceph-ganesha/setup.sh
#   nfsx bench metadata --runs 5 --target nfs://127.0.0.1/export?version=4.1 \
#       --target nfs://127.0.0.1:20801/nfsx?version=4.1 --op read-small --files 200 --duration 10s \
#       --json vs-ganesha-delegations-reread.json

#!/usr/bin/env bash
# nfsx heads against NFS-Ganesha's FSAL_CEPH on one Ceph cluster, same
# client (nfsx's, NFSv4.1 for all), every workload of `nfsx bench data` and
# `metadata`, 5 alternating runs. Ganesha is the first target, so the ratio
# column reads nfsx / Ganesha. Needs a release build; starts and stops the
# cluster and the servers itself (setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/nfsx-ceph-vs-ganesha}
RUNS=${RUNS:-5}
export OUT
bench/results/20261125-ceph-ganesha/setup.sh
trap 'bench/results/20261125-ceph-ganesha/setup.sh stop; scripts/ceph.sh stop' EXIT
T=(--target "nfs://127.0.0.1/export?version=4.1"
   --target "nfs://127.0.0.1:20801/nfsx?version=4.1"
   --target "nfs://127.0.0.1:20802/nfsx-async?version=4.1")
B=target/release/nfsx
$B bench data --quiet --runs "$RUNS" "${T[@]}" --mode seq-write,seq-read --size 256MiB --io-size 1MiB \
  --threads 1,4 --json "$OUT/seq.json" | tee "$OUT/seq.txt"
$B bench data --quiet --runs "$RUNS" "${T[@]}" --mode rand-read,rand-write --size 64MiB --io-size 4KiB \
  --threads 16 --duration 5s --json "$OUT/rand.json" | tee "$OUT/rand.txt"
$B bench metadata --quiet --runs "$RUNS" "${T[@]}" --files 2000 --json "$OUT/metadata.json" | tee "$OUT/metadata.txt"

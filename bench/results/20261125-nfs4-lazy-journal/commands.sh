#!/bin/bash
# NFSv4.1 OPEN-create + CLOSE rate by threads sharing one session, nfsx at its
# defaults (the id journal not flushed per creation) against NFS-Ganesha 4.3,
# then nfsx alone with sync_id_journal = true (the behaviour before).
# Rerun from the repository root.
set -eu
D=bench/results/20261125-nfs4-lazy-journal
GANESHA_DELEGATIONS=rw scripts/ganesha.sh start
NFS4_BENCH_THREADS=1,4,16,64,256 NFS4_BENCH_PEER=127.0.0.1:2049/export NFS4_BENCH_JSON=$PWD/$D/samples \
  cargo test --release -p nfsx --test nfs4_bench -- --ignored --nocapture --test-threads 1 create_rate
scripts/ganesha.sh stop
NFS4_BENCH_THREADS=1,4,16,64,256 NFS4_BENCH_NFSX_CONFIG=$'[localfs]\nsync_id_journal = true' \
  NFS4_BENCH_JSON=$PWD/$D/journal-synced \
  cargo test --release -p nfsx --test nfs4_bench -- --ignored --nocapture --test-threads 1 create_rate

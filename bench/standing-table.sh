#!/usr/bin/env bash
# The standing table of docs/BENCHMARKS.md, every row in one sitting: nfsx
# (this build, its defaults but portmap_port = 0) against NFS-Ganesha 4.3
# (FSAL_VFS), the same client for both, the two servers alternating run by
# run. Then `bench/summarize.py OUT` prints the table.
#
#   bench/standing-table.sh OUT [RUNS]          RUNS defaults to 5
#
# Steps, in this order (STEPS picks some; default "libnfs smallops data
# create41 liststat"):
#   libnfs    bench/vs-ganesha.sh: 1 GiB `nfs-cp` write + COMMIT, `nfs-cat`
#             read, the wire probes (bench/wire.c), 2,000 durable creations
#             (`nfsops createmany`), one request in flight (libnfs 4.0,
#             NFSv3); both exports on the ext4 of /var/tmp.
#   smallops  bench/smallops.sh: creation, stat and removal of 2,000 files,
#             one request in flight (libnfs, NFSv3 and NFSv4.0), `async`
#             exports on tmpfs.
#   data      `nfsx bench data`, NFSv3 and NFSv4.1, exports on DATA_BASE:
#             4 KiB random reads and writes at 16 threads, 1 MiB sequential
#             reads and writes at 4, stable 8 KiB writes from 16 threads to
#             one file (nfsx's flush counters kept before and after).
#   create41  the NFSv4.1 driver's OPEN-create + CLOSE rate by threads
#             sharing one session (crates/cli/tests/nfs4_bench.rs), tmpfs,
#             nfsx with sync_metadata = false (Ganesha flushes nothing on a
#             creation), Ganesha with delegations. The 512-thread point runs
#             last, on its own, after the files of the others are removed:
#             the driver never removes what it creates, and the sweep before
#             it fills a tmpfs's inodes.
#   liststat  `nfsx bench metadata` list and stat of a FILES-file tree
#             (50,000), NFSv3 and NFSv4.1, tmpfs.
#   cpu       (not in the default) each data row against each server
#             alone, one run each, under `perf stat` of the server and of
#             the client: CPU and context switches per call of both sides
#             (OUT/cpu.tsv; the server's count includes the run's untimed
#             setup of its file).
#
# Environment (defaults in brackets; see also bench/lib.sh):
#   NFSX [target/release/nfsx]  GANESHA_SH [scripts/ganesha.sh]
#   SMALLOPS              a smallops binary (cc -O2 -o smallops
#                         ../shared/peers/smallops.c -lnfs); built into OUT if unset
#   DATA_BASE [/var/tmp]  where the data rows' exports live (ext4 here)
#   TMPFS [/dev/shm]      where the tmpfs rows' exports live
#   LISTSTAT_RUNS [RUNS]  runs of the listing step
#   NFS4_BENCH_THREADS [1,2,4,8,16,32,64,128,256,512]  thread counts of create41
#   VERS_DATA ["3 4.1"]   protocols of the data, liststat and cpu steps
#   FILES [50000]         files in the tree of the liststat step
#
# Needs root (Ganesha, rpcbind on port 111), nothing else running, and for
# create41 a cargo that can build the test (it builds in release mode).
set -uo pipefail
OUT=${1:?usage: standing-table.sh OUT [RUNS]}
RUNS=${2:-5}
. "$(dirname "$0")/lib.sh"
STEPS=${STEPS:-libnfs smallops data create41 liststat}
DATA_BASE=${DATA_BASE:-/var/tmp}
TMPFS=${TMPFS:-/dev/shm}
LISTSTAT_RUNS=${LISTSTAT_RUNS:-$RUNS}
THREADS=${NFS4_BENCH_THREADS:-1,2,4,8,16,32,64,128,256,512}
VERS_DATA=${VERS_DATA:-3 4.1}
DATA_ROWS="rand-read-4k-16t rand-write-4k-16t seq-read-1m-4t seq-write-1m-4t sync-8k-16t"
OUT=$(out_dir "$OUT")
trap stop_all EXIT
step() { [[ " $STEPS " == *" $1 "* ]] && log "$1"; }

if step libnfs; then
  WAIT_IDLE=0 SKIP="read split" OUTDIR=$OUT/libnfs "$BENCH/vs-ganesha.sh" -n "$RUNS" >"$OUT/libnfs.log" 2>&1 ||
    log "libnfs step failed (see $OUT/libnfs.log)"
fi

if step smallops; then
  for v in 3 4; do
    NFSVERS=$v BUILDS="new ganesha" SMALLOPS=${SMALLOPS:-} \
      "$BENCH/smallops.sh" "$OUT/smallops-v$v" "$RUNS" 2000 >"$OUT/smallops-v$v.log" 2>&1 ||
      log "smallops NFSv$v failed (see $OUT/smallops-v$v.log)"
  done
fi

# The flush counters of nfsx's metrics: flushes per stable write are the
# change in nfsx_backend_flushes_total over that in ..._flush_callers_total.
flush_metrics() { curl -s "127.0.0.1:12061/metrics" | grep -E '^nfsx_(backend_.*flush|requests_total)'; }

if step data; then
  ganesha_start "$DATA_BASE/nfsx-standing-g" && nfsx_start nfsx "$DATA_BASE/nfsx-standing" 12060 && {
    for v in $VERS_DATA; do
      for row in $DATA_ROWS; do
        read -ra args <<<"$(row_args "$row")"
        [[ $row == sync-8k-16t ]] && flush_metrics >"$OUT/data-v$v-$row.metrics-before.txt"
        "$NFSX" bench "${args[@]}" --runs "$RUNS" --quiet $(targets "$v" nfsx ganesha) \
          --json "$OUT/data-v$v-$row.json" >"$OUT/data-v$v-$row.txt" 2>&1
        [[ $row == sync-8k-16t ]] && flush_metrics >"$OUT/data-v$v-$row.metrics-after.txt"
      done
    done
  }
  stop_all
  rm -rf "$DATA_BASE/nfsx-standing"
fi

if step create41; then
  create41() {  # THREADS JSON_PREFIX
    (cd "$REPO" && TMPDIR=$TMPFS NFS4_BENCH_PEER=127.0.0.1:2049/export NFS4_BENCH_RUNS=$RUNS \
      NFS4_BENCH_THREADS=$1 NFS4_BENCH_NFSX_CONFIG=$'[localfs]\nsync_metadata = false' NFS4_BENCH_JSON=$2 \
      cargo test --release -p nfsx --test nfs4_bench -- --ignored --nocapture --test-threads 1 create) \
      >"$2.txt" 2>&1 || log "create41 ($1 threads) failed (see $2.txt)"
  }
  rest=$(tr ',' '\n' <<<"$THREADS" | grep -vx 512 | paste -sd, -)
  if ganesha_start "$TMPFS/nfsx-standing-g" rw; then
    [[ -n $rest ]] && create41 "$rest" "$OUT/nfs41"
    ganesha_stop
  fi
  if [[ ,$THREADS, == *,512,* ]]; then
    rm -rf "$TMPFS/nfsx-standing-g"
    ganesha_start "$TMPFS/nfsx-standing-g" rw && create41 512 "$OUT/nfs41-512"
    ganesha_stop
  fi
  rm -rf "$TMPFS/nfsx-standing-g"
fi

if step liststat; then
  ganesha_start "$TMPFS/nfsx-standing-g" && nfsx_start nfsx "$TMPFS/nfsx-standing" 12080 && {
    for v in $VERS_DATA; do
      "$NFSX" bench metadata --op list,stat --files "$FILES" --runs "$LISTSTAT_RUNS" --quiet \
        $(targets "$v" nfsx ganesha) --json "$OUT/liststat-v$v.json" >"$OUT/liststat-v$v.txt" 2>&1
    done
  }
  stop_all
  rm -rf "$TMPFS/nfsx-standing" "$TMPFS/nfsx-standing-g"
fi

if step cpu; then
  printf 'row\tversion\tserver\tmbps\tcalls\tcalls_per_s\tserver_us_per_call\tclient_us_per_call\tserver_cs_per_call\tclient_cs_per_call\n' \
    >"$OUT/cpu.tsv"
  ganesha_start "$DATA_BASE/nfsx-standing-g" && nfsx_start nfsx "$DATA_BASE/nfsx-standing" 12060 && {
    for v in $VERS_DATA; do
      for row in $DATA_ROWS; do
        read -ra args <<<"$(row_args "$row")"
        for s in nfsx ganesha; do
          line=$(perf_call "$OUT/cpu-v$v-$row-$s" "$s" "$NFSX" "${args[@]}" $(targets "$v" "$s"))
          printf '%s\t%s\t%s\t%s\n' "$row" "$v" "$s" "$line" >>"$OUT/cpu.tsv"
        done
      done
    done
  }
  stop_all
  rm -rf "$DATA_BASE/nfsx-standing" "$DATA_BASE/nfsx-standing-g"
fi
log done

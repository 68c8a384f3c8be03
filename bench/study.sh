#!/usr/bin/env bash
# The studies of docs/BENCHMARKS.md beside the standing table, each one
# `nfsx bench` invocation whose targets alternate run by run:
#
#   bench/study.sh STUDY OUT [RUNS]
#
#   mount        `nfsx mount` (NFSv3) against the client used directly:
#                1 MiB sequential write and read of 256 MiB; then the
#                `find -exec ls -l` walk (--op stat) of 10,000 files through
#                the mount against the local disk. Needs /dev/fuse.
#   mount-stat   the walk through a mount keeping listings in the kernel
#                (the default), a mount with an OPENDIR per listing
#                (--opendir) and the local disk; WARM=--warm walks once
#                before the timed walk (Lai's repeated find), VERSION=4.1.
#   v41-vs-v3    nfsx's client over NFSv4.1 against the same client over
#                NFSv3, same server: read-small, create and list of 2,000
#                files at 1 and 16 threads.
#   fig7         200 small files re-read for 20 s through nfsx's delay proxy
#                (10 ms round trip), NFSv3 and NFSv4.1, against nfsx and
#                against NFS-Ganesha with read delegations on (Chen 2015
#                Fig. 7).
#   recall       a conflicting OPEN while another client holds a read
#                delegation, nfsx and NFS-Ganesha (delegations rw), NFSv4.1
#                (Chen 2015 Fig. 13).
#   locked-read  two clients open, read-lock, read, unlock and close 100
#                shared files ten times: NFSv3 + NLM, NFSv4.1 with and
#                without delegations, and a local directory (Chen 2015
#                section 5.2).
#   copy         a 1 GiB file copied by NFSv4.2 COPY, by READ and WRITE
#                through the client (and over NFSv3), and by CLONE. EXPORT=DIR
#                exports another directory, e.g. a loop-mounted XFS image,
#                where COPY and CLONE share blocks:
#                  truncate -s 6G /var/tmp/xfs.img && mkfs.xfs -q -m reflink=1 /var/tmp/xfs.img
#                  mkdir -p /mnt/nfsx-xfs && mount -o loop /var/tmp/xfs.img /mnt/nfsx-xfs
#   tls          RPC-with-TLS against clear text, same server and client,
#                NFSv4.2 without delegations or data cache: 1 MiB sequential
#                reads and writes at 1 and 4 threads (makes a test CA with
#                openssl; the export on tmpfs).
#   papers       the papers' workloads through nfsx's client against nfsx
#                and NFS-Ganesha, NFSv3: sequential writes of 5 MiB to
#                512 MiB (Lever & Honeyman; every write() call's latency),
#                and read-small, create and list of 2,000 files at 1 and 16
#                threads (Chen 2015 section 4).
#
# RUNS defaults to 5 (3 for fig7 and papers). Every invocation writes
# OUT/NAME.json (every sample) and OUT/NAME.txt (its summary with 95%
# confidence intervals); most also an HTML report in OUT/NAME/.
# Environment: BASE [/var/tmp] where exports live; bench/lib.sh's.
set -uo pipefail
STUDY=${1:?usage: study.sh STUDY OUT [RUNS]}
OUT=${2:?OUT}
. "$(dirname "$0")/lib.sh"
BASE=${BASE:-/var/tmp}
OUT=$(out_dir "$OUT")
W=$BASE/nfsx-study
mounts=()
cleanup() {
  local m
  for m in "${mounts[@]}"; do "$NFSX" umount "$m" 2>/dev/null; done
  stop_all
  rm -rf "$W" /dev/shm/nfsx-study-tls
}
trap cleanup EXIT
rm -rf "$W"
mkdir -p "$W"
bench() {  # NAME WORKLOAD ARGS...: one nfsx bench invocation, its JSON and summary in OUT
  local name=$1
  shift
  "$NFSX" bench "$@" --quiet --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1
  cat "$OUT/$name.txt"
}
mount_at() {  # URL DIR [ARGS...]
  local url=$1 dir=$2 _
  shift 2
  mkdir -p "$dir"
  "$NFSX" mount "$url" "$dir" "$@" --log warn &
  for _ in $(seq 100); do grep -q " $dir " /proc/mounts && break; sleep 0.1; done
  mounts+=("$dir")
}

case $STUDY in
mount)
  runs=${3:-5}
  nfsx_start nfsx "$W/srv" 12110 || exit 1
  mount_at "${URL[nfsx]}?version=3" "$W/mnt"
  mkdir -p "$W/mnt/bench" "$W/local"
  bench mount-seq data --mode seq-write,seq-read --io-size 1MiB --threads 1 --size 256MiB --runs "$runs" \
    $(targets 3 nfsx) --target "$W/mnt/bench" --report "$OUT/mount-seq"
  bench mount-stat metadata --op stat --files 10000 --runs "$runs" --target "$W/local" --target "$W/mnt/bench"
  ;;
mount-stat)
  runs=${3:-5}
  nfsx_start nfsx "$W/srv" 12112 || exit 1
  mount_at "${URL[nfsx]}?version=${VERSION:-3}" "$W/kept"
  mount_at "${URL[nfsx]}?version=${VERSION:-3}" "$W/opendir" --opendir
  mkdir -p "$W/kept/t" "$W/opendir/t" "$W/local"
  bench "mountstat${WARM:+-warm}-v${VERSION:-3}" metadata --op stat --files 10000 --runs "$runs" ${WARM:-} \
    --target "$W/local" --target "$W/kept/t" --target "$W/opendir/t"
  ;;
v41-vs-v3)
  nfsx_start nfsx "$W/srv" 12114 || exit 1
  bench v41-vs-v3 metadata --op read-small,create,list --files 2000 --threads 1,16 --runs "${3:-5}" \
    $(targets 3 nfsx) $(targets 4.1 nfsx) --report "$OUT/v41-vs-v3"
  ;;
fig7)
  runs=${3:-3}
  nfsx_start nfsx "$W/srv" 12116 || exit 1
  bench fig7-nfsx metadata --op read-small --files 200 --duration 20s --delay 10ms --runs "$runs" \
    $(targets 3 nfsx) $(targets 4.1 nfsx) --report "$OUT/fig7-nfsx"
  stop_all
  ganesha_start "$W/g" r || exit 1
  bench fig7-ganesha metadata --op read-small --files 200 --duration 20s --delay 10ms --runs "$runs" \
    $(targets 3 ganesha) $(targets 4.1 ganesha) --report "$OUT/fig7-ganesha"
  ;;
recall)
  ganesha_start "$W/g" rw && nfsx_start nfsx "$W/srv" 12118 || exit 1
  bench recall recall --runs "${3:-5}" $(targets 4.1 nfsx ganesha)
  ;;
locked-read)
  nfsx_start nfsx "$W/srv" 12120 || exit 1
  mkdir -p "$W/local"
  bench locked-read locked-read --files 100 --runs "${3:-5}" $(targets 3 nfsx) $(targets 4.1 nfsx) \
    --target "${URL[nfsx]}?version=4.1&delegations=0" --target "$W/local"
  ;;
copy)
  dir=${EXPORT:-$W/copy}
  mkdir -p "$dir" "$W/copy-state"
  "$NFSX" serve "$dir" --listen 127.0.0.1:12122 --state-dir "$W/copy-state" --portmap-port 0 \
    >"$OUT/copy-server.log" 2>&1 &
  PID[copy]=$!
  sleep 1
  bench copy copy --size 1GiB --io-size 1MiB --runs "${3:-5}" \
    --target "nfs://127.0.0.1:12122$dir?version=4.2" --target "nfs://127.0.0.1:12122$dir?version=3" \
    --report "$OUT/copy"
  ;;
tls)
  pki=$OUT/pki
  mkdir -p "$pki"
  if [[ ! -f $pki/server.pem ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
      -subj "/CN=nfsx bench CA" -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
      -keyout "$pki/server.key" -out "$pki/server.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$pki/ext.cnf"
    openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
      -days 30 -extfile "$pki/ext.cnf" -out "$pki/server.pem" 2>/dev/null
  fi
  nfsx_start nfsx /dev/shm/nfsx-study-tls 12124 \
    "[tls]\ncert_file = \"$pki/server.pem\"\nkey_file = \"$pki/server.key\"" || exit 1
  printf '[read_cache]\nmax_bytes = 0\n[tls]\nca_file = "%s"\n' "$pki/ca.pem" >"$OUT/tls-client.toml"
  u=${URL[nfsx]}
  bench tls data --mode seq-read,seq-write --io-size 1MiB --threads 1,4 --size 256MiB --duration "$DURATION" \
    --runs "${3:-5}" --client-config "$OUT/tls-client.toml" \
    --target "$u?version=4.2&delegations=0" --target "$u?version=4.2&delegations=0&tls=1" --report "$OUT/tls"
  curl -s 127.0.0.1:12125/metrics | grep -E '^nfsx_tls_' >"$OUT/tls-metrics.txt" || true
  ;;
papers)
  runs=${3:-3}
  ganesha_start "$W/g" && nfsx_start nfsx "$W/srv" 12126 || exit 1
  bench seqwrite-sweep seqwrite --size 5MiB,32MiB,128MiB,512MiB --runs "$runs" $(targets 3 nfsx ganesha) \
    --report "$OUT/seqwrite-sweep"
  bench metadata metadata --op read-small,create,list --files 2000 --threads 1,16 --runs "$runs" \
    $(targets 3 nfsx ganesha) --report "$OUT/metadata"
  ;;
*)
  echo "unknown study $STUDY" >&2
  exit 2
  ;;
esac

#!/bin/bash
# Two nfsx builds and NFS-Ganesha (FSAL_VFS) alternating, one smallops run
# each per round (N creations, a listing, N stats, N removals, one request
# in flight, libnfs, NFSv3), all three exports `async` on tmpfs, where a
# request costs CPU only. Each nfsx run also reports the server's CPU time
# per RPC (/proc/PID/stat utime+stime over the run, RPCs from its metrics).
#   OLD=/path/to/previous/nfsx SMALLOPS=/path/to/smallops run.sh OUTDIR [RUNS] [N]
#   BUILDS="old new" leaves Ganesha out (default "old new ganesha")
#   NFSVERS=4 runs smallops over NFSv4 (libnfs speaks 4.0) instead of 3
# smallops: cc -O2 -o smallops ../shared/peers/smallops.c -lnfs
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; N=${3:-2000}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NEW=${NEW:-$REPO/target/release/nfsx}; OLD=${OLD:?OLD=previous nfsx binary}; SMALLOPS=${SMALLOPS:?smallops binary}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-one-statx; rm -rf $W; mkdir -p $W/ex $W/st
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports
printf 'portmap_port = 0\n' > $W/c.toml
V=${NFSVERS:-3}
URL="nfs://127.0.0.1$W/ex?version=$V&nfsport=12080&mountport=12080"
TCK=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
rpcs() { curl -s http://127.0.0.1:12081/metrics | awk '/^nfsx_requests_total/ {s+=$2} END {print s+0}'; }
cd "$REPO"
case " ${BUILDS:-ganesha} " in *" ganesha "*)
  PEER_DIR=$W/ganesha scripts/ganesha.sh start >/dev/null 2>&1 || { echo "ganesha did not start" >&2; exit 1; } ;;
esac
for r in $(seq "$RUNS"); do
  for b in ${BUILDS:-old new ganesha}; do
    echo "$b run $r" >> "$OUT/smallops.txt"
    if [ $b = ganesha ]; then
      "$SMALLOPS" "nfs://127.0.0.1/export?version=$V" "$N" >> "$OUT/smallops.txt"; sleep 1; continue
    fi
    bin=$NEW; [ $b = old ] && bin=$OLD
    rm -rf $W/ex/* $W/st; mkdir -p $W/st
    "$bin" serve --exports $W/exports --listen 127.0.0.1:12080 --state-dir $W/st --config $W/c.toml \
      --metrics 127.0.0.1:12081 --log warn & sp=$!
    sleep 0.7
    c0=$(cpu $sp); r0=$(rpcs)
    "$SMALLOPS" "$URL" "$N" >> "$OUT/smallops.txt"
    c1=$(cpu $sp); r1=$(rpcs)
    echo "server_cpu_us_per_rpc $(echo "scale=1; ($c1 - $c0) * 1000000 / $TCK / ($r1 - $r0)" | bc)" >> "$OUT/smallops.txt"
    kill $sp; wait $sp 2>/dev/null
  done
done
PEER_DIR=$W/ganesha scripts/ganesha.sh stop >/dev/null 2>&1
for phase in create stat unlink; do
  awk -v p=$phase '/ run / {b=$1} $1==p {print b, $(NF-1)}' "$OUT/smallops.txt" \
    | awk -v p=$phase '{a[$1]=a[$1] " " $2} END {for (k in a) print p " us/op " k ":" a[k]}' | sort
done
awk '/ run / {b=$1} /^server_cpu/ {a[b]=a[b] " " $2} END {for (k in a) print "server cpu us/rpc " k ":" a[k]}' "$OUT/smallops.txt" | sort

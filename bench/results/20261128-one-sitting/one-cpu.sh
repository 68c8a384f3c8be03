#!/bin/bash
# One request in flight, and where the kernel puts the client: `smallops`
# (libnfs, NFSv3 by default, one request at a time, `async` exports on
# tmpfs) against nfsx and NFS-Ganesha, each three ways, alternating:
#   free     no placement (as every other row runs)
#   server   the server's threads on CPU 0, the client anywhere
#   both     the server's threads and the client on CPU 0
#   one-cpu.sh OUTDIR [RUNS] [N]      SMALLOPS=/path/to/smallops, NFSVERS=4 for NFSv4.0
set -u
OUT=${1:?OUTDIR}; RUNS=${2:-5}; N=${3:-2000}
HERE=$(cd "$(dirname "$0")" && pwd); REPO=$(cd "$HERE/../../.." && pwd)
NFSX=${NFSX:-$REPO/target/release/nfsx}; SMALLOPS=${SMALLOPS:?smallops binary}
V=${NFSVERS:-3}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=/dev/shm/nfsx-one-cpu; rm -rf $W; mkdir -p $W/ex $W/st
printf "$W/ex 127.0.0.1(rw,async,no_root_squash,insecure)\n" > $W/exports
printf 'portmap_port = 0\n' > $W/c.toml
cd "$REPO"
PEER_DIR=$W/ganesha scripts/ganesha.sh start >/dev/null 2>&1 || { echo "ganesha did not start" >&2; exit 1; }
trap 'PEER_DIR=$W/ganesha scripts/ganesha.sh stop >/dev/null 2>&1; rm -rf $W' EXIT
GP=$(pgrep -f ganesha.nfsd | head -1)
for r in $(seq "$RUNS"); do
  for sys in nfsx ganesha; do
    for how in free server both; do
      spre=(); cpre=()
      [ $how != free ] && spre=(taskset -c 0)
      [ $how = both ] && cpre=(taskset -c 0)
      echo "$sys-$how run $r" >> "$OUT/smallops.txt"
      if [ $sys = ganesha ]; then
        if [ $how = free ]; then taskset -a -p -c 0-1 "$GP" >/dev/null; else taskset -a -p -c 0 "$GP" >/dev/null; fi
        "${cpre[@]}" "$SMALLOPS" "nfs://127.0.0.1/export?version=$V" "$N" >> "$OUT/smallops.txt"
        sleep 1
        continue
      fi
      rm -rf $W/ex/* $W/st; mkdir -p $W/st
      "${spre[@]}" "$NFSX" serve --exports $W/exports --listen 127.0.0.1:12080 --state-dir $W/st --config $W/c.toml --log warn & sp=$!
      sleep 0.7
      "${cpre[@]}" "$SMALLOPS" "nfs://127.0.0.1$W/ex?version=$V&nfsport=12080&mountport=12080" "$N" >> "$OUT/smallops.txt"
      kill $sp; wait $sp 2>/dev/null
    done
  done
done
taskset -a -p -c 0-1 "$GP" >/dev/null
for phase in create stat unlink; do
  awk -v p=$phase '/ run / {b=$1} $1==p {print b, $(NF-1)}' "$OUT/smallops.txt" |
    awk -v p=$phase '{a[$1]=a[$1] " " $2} END {for (k in a) print p " us/op " k ":" a[k]}' | sort
done | tee "$OUT/summary.txt"
